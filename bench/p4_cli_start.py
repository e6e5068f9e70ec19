"""P4: ``templiqx catalog --json`` as a fresh process against ``python -c pass``.

Both run on the same interpreter (the workspace environment's, whose site-packages both pay
for), from a scratch folder, with templiqx settings removed from the environment. Peak memory is
each child's own maximum resident set (``wait4``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from harness import (
    BenchmarkError,
    Comparison,
    Settings,
    Side,
    check,
    interleave,
    peak_rss_of,
    run_process,
)

from templiqx_application.catalog import CATALOG

__all__ = ["run"]


def _command() -> list[str]:
    script = shutil.which("templiqx", path=str(Path(sys.executable).parent))
    if script is None:
        raise BenchmarkError(
            f"the templiqx console script is not installed beside {sys.executable}"
        )
    return [script, "catalog", "--json"]


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P4",
        what="templiqx catalog --json (process)",
        baseline="python -c pass",
        target=4.0,
        memory_kind="max RSS of each process",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPLIQX_")}
    cwd = str(settings.scratch)
    ours = _command()
    theirs = [sys.executable, "-c", "pass"]

    first = run_process(ours, env=env, cwd=cwd)
    check(first.code == 0, f"templiqx catalog --json exited {first.code}: {first.stderr!r}")
    envelope = json.loads(first.stdout)
    names = [entry["name"] for entry in envelope.get("result") or []]
    check(
        envelope.get("ok") is True
        and envelope.get("operation") == "catalog"
        and names == [spec.name for spec in CATALOG],
        f"templiqx catalog --json printed an unexpected envelope: {first.stdout[:200]!r}",
    )
    check(run_process(theirs, env=env, cwd=cwd).code == 0, "python -c pass failed")

    def side(argv: list[str]) -> Callable[[], object]:
        def once() -> None:
            done = run_process(argv, env=env, cwd=cwd)
            if done.code != 0:
                raise BenchmarkError(f"{argv} exited {done.code}: {done.stderr!r}")

        return once

    a, b, ratios = interleave(
        Side("templiqx", side(ours)),
        Side("python -c pass", side(theirs)),
        rounds=settings.rounds(41, 7),
        warmup=2,
    )
    row.record(a, b, ratios)
    row.subject_peak_memory = max(peak_rss_of(ours, env=env, cwd=cwd) for _ in range(3))
    row.baseline_peak_memory = max(peak_rss_of(theirs, env=env, cwd=cwd) for _ in range(3))
    return [row]


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """Start-up is imports: print the slowest ones from ``python -X importtime`` instead."""

    def importtime() -> None:
        done = run_process(
            [sys.executable, "-X", "importtime", *_command()], cwd=str(settings.scratch)
        )
        rows = [
            line.split("|")
            for line in done.stderr.decode().splitlines()
            if line.startswith("import time:") and "cumulative" not in line
        ]
        rows.sort(key=lambda cells: -int(cells[1]))
        print("cumulative us | module")
        for cells in rows[:25]:
            print(f"{int(cells[1]):>13} | {cells[2].rstrip()}")

    return importtime
