"""Turn a figures report (``TEMPLIQX_RELIABILITY_REPORT``) into the Markdown table of
``docs/reliability.md``.

Usage: ``python tests/reliability/report_markdown.py figures.json``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"


def markdown(report: dict[str, Any]) -> str:
    """The report's rows as a Markdown table, one row per measured counter."""
    lines = [
        "| id | measure | measured | figure to reach | met |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for row in report["rows"]:
        met = {True: "yes", False: "**no**", None: ""}[row["met"]]
        measured = _number(row["value"]) + row["unit"]
        target = row["target"].replace(">=", "≥").replace("<=", "≤")
        lines.append(f"| {row['suite']} | {row['measure']} | {measured} | {target} | {met} |")
    mode = "full counts" if report["full_counts"] else "CI-sized counts"
    verdict = "every figure met" if report["all_met"] else "FIGURES NOT MET"
    return "\n".join([*lines, "", f"({mode}; {verdict})"])


def main(argv: list[str]) -> int:
    print(markdown(json.loads(Path(argv[0]).read_text("utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
