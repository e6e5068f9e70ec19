"""Shared machinery of the reliability suites (issue #9): counts, figures, checks, sandboxes.

Test modules reach this module by name (the suite's ``conftest.py`` puts this folder on
``sys.path``); it holds no fixtures itself.

* **Counts.** Every suite runs with CI-sized counts by default (fast enough for the default
  ``tests`` session) and with the issue's full counts when ``TEMPLIQX_RELIABILITY_FULL=1`` is
  set in the environment (``TEMPLIQX_RELIABILITY_FULL=1 nox -s reliability``).
* **Figures.** Suites *measure*: they add to named counters while they run and declare the
  figure each counter must reach. The conftest prints the table at the end of the session and
  writes it as JSON when ``TEMPLIQX_RELIABILITY_REPORT`` names a file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from templiqx_contracts import OperationEnvelope

__all__ = [
    "FULL",
    "REPO",
    "SUITES",
    "WELCOME",
    "FIGURES",
    "Figures",
    "Peak",
    "envelope_problems",
    "fresh_welcome",
    "measure_peak",
    "scaled",
]

REPO = Path(__file__).resolve().parents[2]
WELCOME = REPO / "fixtures" / "packages" / "welcome"

FULL_ENV = "TEMPLIQX_RELIABILITY_FULL"
REPORT_ENV = "TEMPLIQX_RELIABILITY_REPORT"
FULL = os.environ.get(FULL_ENV) == "1"
"""Whether the issue's full counts are in force (else the CI-sized ones)."""


def scaled(ci: int, full: int) -> int:
    """``full`` under ``TEMPLIQX_RELIABILITY_FULL=1``, else ``ci``."""
    return full if FULL else ci


SUITES: dict[str, str] = {
    "R1": "generated and mutated contracts, manifests, requests, scenario manifests",
    "R2": "path attacks on every path-taking operation",
    "R3": "8 processes racing CAS writes; kill -9 mid-write",
    "R4": "stream fault matrix x byte splits x slow/fast servers",
    "R5": "MCP server fed malformed and hostile messages",
    "R6": "canary credentials across every surface and failure",
    "R7": "YAML bombs, 100 MB inputs, 10,000-deep nesting",
    "R8": "string alias bombs under every other limit; 4,000 aliases under ulimit -v",
    "R9": "a long-running MCP server's memory after 100 hostile put_contract calls",
    "R10": "render amplification: small requests that would render huge prompts",
    "R11": "CLI reads of huge and endless files; output errors; signing coverage and keys",
    "R12": "a million one-byte deltas: the envelope keeps a bounded prefix",
    "R13": "a 1.8 MB string in 450,000 deltas through the partial view",
    "R14": "render fuel: work without output, component call trees, cancellation",
    "R15": "the MCP wedge: 64 heavy render_contract calls cancelled",
    "R16": "include fan-out under the include limit",
    "R17": "parsing within the size limits: node-heavy documents",
    "R18": "arguments under the byte limit but expensive; the event loop during the largest call",
    "R19": "caches that count what they hold; long-running MCP memory",
    "R20": "file reads of any extension: 1 GiB and 3 GiB partials, templates, artifacts",
    "R21": "terminal escape injection through values, model output and diagnostics",
    "R22": "what templiqx or the host vouches for, supplied by a caller",
    "R23": "huge integers in every JSON input",
}

Comparison = Literal[">=", "<=", "=="]


@dataclass
class Target:
    """The figure a measured counter must reach."""

    comparison: Comparison
    value: float
    unit: str

    def met_by(self, measured: float) -> bool:
        if self.comparison == ">=":
            return measured >= self.value
        if self.comparison == "<=":
            return measured <= self.value
        return measured == self.value

    def describe(self) -> str:
        return f"{self.comparison} {_number(self.value)}{self.unit}"


def suite_order(suite: str) -> tuple[int, str]:
    """Sorts suite ids by number (R2 before R10)."""
    digits = suite[1:]
    return (int(digits), suite) if digits.isdigit() else (1 << 30, suite)


def _number(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


@dataclass
class Figures:
    """Measured counters and their targets, grouped by suite id."""

    values: dict[tuple[str, str], float] = field(default_factory=dict)
    targets: dict[tuple[str, str], Target] = field(default_factory=dict)
    units: dict[tuple[str, str], str] = field(default_factory=dict)
    failed_suites: set[str] = field(default_factory=set)
    ran_suites: set[str] = field(default_factory=set)

    def expect(
        self, suite: str, measure: str, comparison: Comparison, value: float, unit: str = ""
    ) -> None:
        """Declare the figure ``measure`` must reach (a missing counter counts as 0)."""
        key = (suite, measure)
        self.targets[key] = Target(comparison, value, unit)
        self.values.setdefault(key, 0)
        self.units[key] = unit

    def add(self, suite: str, measure: str, amount: float = 1) -> None:
        """Add to a counter."""
        key = (suite, measure)
        self.values[key] = self.values.get(key, 0) + amount

    def peak(self, suite: str, measure: str, value: float, unit: str = "") -> None:
        """Keep the largest value seen for ``measure``."""
        key = (suite, measure)
        self.values[key] = max(self.values.get(key, value), value)
        if unit:
            self.units[key] = unit

    def get(self, suite: str, measure: str) -> float:
        return self.values.get((suite, measure), 0)

    def rows(self) -> list[dict[str, Any]]:
        """One row per measured counter, in suite order."""
        rows = []
        for (suite, measure), value in sorted(
            self.values.items(), key=lambda item: suite_order(item[0][0])
        ):
            target = self.targets.get((suite, measure))
            met = None
            if suite not in self.ran_suites:
                met = False
            elif target is not None:
                met = target.met_by(value) and suite not in self.failed_suites
            rows.append(
                {
                    "suite": suite,
                    "measure": measure,
                    "value": value,
                    "unit": self.units.get((suite, measure), ""),
                    "target": target.describe() if target is not None else "",
                    "met": met,
                }
            )
        return rows

    def table(self) -> str:
        """The figures as a fixed-width table."""
        rows = self.rows()
        header = ("id", "measure", "measured", "figure to reach", "met")
        lines = [header]
        for row in rows:
            met = {True: "yes", False: "NO", None: "-"}[row["met"]]
            lines.append(
                (
                    row["suite"],
                    row["measure"],
                    _number(row["value"]) + row["unit"],
                    row["target"],
                    met,
                )
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        out = []
        for index, line in enumerate(lines):
            out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip())
            if index == 0:
                out.append("  ".join("-" * width for width in widths))
        suites = sorted({row["suite"] for row in rows}, key=suite_order)
        failed = sorted(self.failed_suites)
        status = "every figure met" if self.all_met() else "FIGURES NOT MET"
        mode = "full counts" if FULL else f"CI-sized counts (set {FULL_ENV}=1 for full counts)"
        out.append("")
        out.append(f"suites: {', '.join(suites) or 'none'} ({mode}); {status}")
        if failed:
            out.append(f"suites with failing tests: {', '.join(failed)}")
        return "\n".join(out)

    def all_met(self) -> bool:
        return all(row["met"] is not False for row in self.rows()) and not self.failed_suites

    def write_json(self, path: Path) -> None:
        payload = {
            "full_counts": FULL,
            "all_met": self.all_met(),
            "suites": {suite: SUITES[suite] for suite in sorted({r["suite"] for r in self.rows()})},
            "rows": self.rows(),
            "failed_suites": sorted(self.failed_suites),
        }
        path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")


FIGURES = Figures()
"""The session's figures (one pytest session per process)."""


# --- envelope checks ----------------------------------------------------------------------

CODE = re.compile(r"TQX_[A-Z0-9]+(?:_[A-Z0-9]+)*")
CONTAINS = "envelope contains "


def envelope_problems(
    envelope: Any, operation: str, *, forbidden_text: tuple[str, ...] = ()
) -> list[str]:
    """Why ``envelope`` is not a well-formed outcome of ``operation`` (empty when it is).

    Well-formed: an :class:`OperationEnvelope` for the operation; ``ok`` exactly when no
    diagnostic is an error; a failed envelope carries at least one error; every diagnostic has
    a stable ``TQX_*`` code other than ``TQX_INTERNAL`` (an unexpected exception caught by the
    service's last-resort handler counts as a crash) and a message; the envelope serializes to
    strict JSON (what every surface prints); none of ``forbidden_text`` appears in it.
    """
    if not isinstance(envelope, OperationEnvelope):
        return [f"returned {type(envelope).__name__}, not an OperationEnvelope"]
    problems = []
    if envelope.operation != operation:
        problems.append(f"operation is {envelope.operation!r}, expected {operation!r}")
    errors = [d for d in envelope.diagnostics if d.severity == "error"]
    if envelope.ok != (not errors):
        problems.append(f"ok={envelope.ok} but {len(errors)} error diagnostics")
    for diagnostic in envelope.diagnostics:
        if CODE.fullmatch(diagnostic.code) is None:
            problems.append(f"diagnostic code {diagnostic.code!r} is not a TQX_* code")
        if diagnostic.code == "TQX_INTERNAL":
            problems.append(f"TQX_INTERNAL (a crash): {diagnostic.message}")
        if not diagnostic.message:
            problems.append(f"{diagnostic.code} has an empty message")
    try:
        text = json.dumps(envelope.to_builtins(), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        problems.append(f"envelope does not serialize as JSON: {exc}")
        return problems
    for forbidden in forbidden_text:
        if forbidden and forbidden in text:
            problems.append(f"{CONTAINS}{forbidden!r:.60}")
    return problems


# --- sandboxes ----------------------------------------------------------------------------


def fresh_welcome(root: Path, name: str = "welcome") -> Path:
    """A copy of the example package ``welcome`` at ``root/name`` (root created if missing)."""
    target = root / name
    if target.exists():
        shutil.rmtree(target)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(WELCOME, target)
    return target


# --- memory -------------------------------------------------------------------------------


def _status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


@dataclass
class Peak:
    """What :func:`measure_peak` saw: seconds taken and resident-memory growth in MiB.

    ``growth_mib`` is the rise of the process's peak resident set (``VmHWM``, reset before the
    block) over its resident set at the start, so it counts C allocations (libyaml, msgspec)
    as well as Python objects. ``None`` where ``/proc`` cannot reset the peak.
    """

    seconds: float = 0.0
    growth_mib: float | None = None


@contextmanager
def measure_peak() -> Iterator[Peak]:
    """Measure the wall time and peak memory growth of the block."""
    peak = Peak()
    resettable = _reset_peak()
    before = _status_kib("VmRSS")
    started = time.perf_counter()
    try:
        yield peak
    finally:
        peak.seconds = time.perf_counter() - started
        after = _status_kib("VmHWM")
        if resettable and before is not None and after is not None:
            peak.growth_mib = max(0, after - before) / 1024
