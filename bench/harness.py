"""Timing, statistics and result records shared by every benchmark.

The machine is a shared, noisy 2-core box, so absolute times are not comparable between runs.
Every comparison therefore runs its two sides *interleaved* (A B A B ...) in the same process
and reports the median of the per-round ratios A/B (each round's ratio cancels most of the load
the neighbours put on the machine during that round) with its interquartile range, next to the
median and IQR of each side.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BenchmarkError",
    "Comparison",
    "Report",
    "Settings",
    "Side",
    "Timing",
    "calibrate",
    "check",
    "growth",
    "interleave",
    "peak_python_memory",
    "peak_rss_of",
    "rotate",
    "run_process",
]


class BenchmarkError(AssertionError):
    """A measured path raised or produced a wrong result: the benchmark must not pass."""


def check(condition: bool, message: str) -> None:
    """Fail loudly (not with ``assert``, which ``python -O`` would strip)."""
    if not condition:
        raise BenchmarkError(message)


@dataclass(frozen=True)
class Settings:
    """What every benchmark is given."""

    reference: Path
    """The reference corpus (read in place, never written)."""
    scratch: Path
    """A temporary folder, removed after the run."""
    quick: bool = False

    def rounds(self, full: int, quick: int = 3) -> int:
        """The number of interleaved rounds: ``full``, or ``quick`` with ``--quick``."""
        return quick if self.quick else full


@dataclass(frozen=True)
class Timing:
    """Per-operation seconds of one side, one sample per round."""

    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def iqr(self) -> tuple[float, float]:
        return quartiles(self.samples)


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """First and third quartile (inclusive method; equal to the value for one sample)."""
    if len(values) < 2:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


@dataclass(frozen=True)
class Side:
    """One side of a comparison: ``run`` performs ``ops`` operations of the measured path."""

    label: str
    run: Callable[[], object]
    ops: int = 1


def calibrate(fn: Callable[[], object], target_s: float, *, cap: int = 100_000) -> int:
    """How many calls of ``fn`` take about ``target_s`` seconds (at least one)."""
    fn()
    count = 1
    while True:
        start = time.perf_counter()
        for _ in range(count):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= target_s / 4 or count >= cap:
            break
        count *= 4
    per_call = elapsed / count
    return max(1, min(cap, round(target_s / per_call)))


def _time(side: Side, repeat: int) -> float:
    run = side.run
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - start) / (repeat * side.ops)


def interleave(
    subject: Side,
    baseline: Side,
    *,
    rounds: int,
    subject_repeat: int = 1,
    baseline_repeat: int = 1,
    warmup: int = 1,
) -> tuple[Timing, Timing, list[float]]:
    """Run the sides A B A B ... for ``rounds`` rounds (alternating which goes first).

    Each sample runs its side ``*_repeat`` times; the result is seconds per operation for each
    side and the per-round ratios subject/baseline.
    """
    for _ in range(warmup):
        subject.run()
        baseline.run()
    a: list[float] = []
    b: list[float] = []
    for index in range(rounds):
        if index % 2 == 0:
            a.append(_time(subject, subject_repeat))
            b.append(_time(baseline, baseline_repeat))
        else:
            b.append(_time(baseline, baseline_repeat))
            a.append(_time(subject, subject_repeat))
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return Timing(a), Timing(b), ratios


GROWTH_SLACK = 0.15
"""How much faster than its input a path's cost may grow before its growth row fails: at 4x
the input, at most 4.6x the time (noise and allocator effects; a quadratic path shows 16x)."""


def growth(
    row_id: str,
    what: str,
    small: Side,
    large: Side,
    *,
    factor: int,
    rounds: int,
    repeat: int = 1,
) -> Comparison:
    """A row timing ``large`` (the same path on ``factor`` times the input) against ``small``,
    interleaved; it fails when the cost grew more than ``factor * (1 + GROWTH_SLACK)`` times."""
    row = Comparison(
        id=row_id,
        what=what,
        baseline=f"the same on 1/{factor} of the input",
        target=round(factor * (1 + GROWTH_SLACK), 2),
    )
    a, b, ratios = interleave(
        large, small, rounds=rounds, subject_repeat=repeat, baseline_repeat=repeat * factor
    )
    row.record(a, b, ratios)  # per round: one large run's time over one small run's
    row.metrics["input_factor"] = factor
    return row


def rotate(sides: Sequence[Side], *, rounds: int, warmup: int = 1) -> list[list[float]]:
    """Run every side once per round, the order rotated by one each round.

    For many paths measured against one baseline (fresh processes: commands against
    ``python -c pass``): each round's samples saw nearly the same machine, and no side is
    always first or last. Returns, per side, seconds per operation for each round.
    """
    for _ in range(warmup):
        for side in sides:
            side.run()
    samples: list[list[float]] = [[] for _ in sides]
    for index in range(rounds):
        shift = index % len(sides)
        for position in [*range(shift, len(sides)), *range(shift)]:
            samples[position].append(_time(sides[position], 1))
    return samples


def peak_python_memory(fn: Callable[[], object]) -> int:
    """Peak bytes allocated by Python while ``fn`` runs once (tracemalloc; not timed)."""
    gc.collect()
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not already:
            tracemalloc.stop()
    return max(0, peak - base)


@dataclass(frozen=True)
class ProcessRun:
    """One finished child process: exit code, output and wall time."""

    code: int
    stdout: bytes
    stderr: bytes
    seconds: float


def run_process(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
) -> ProcessRun:
    """Run ``argv`` to completion and time it (wall clock, including process creation)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    stdout, stderr = child.communicate()
    code = child.returncode
    return ProcessRun(code, stdout, stderr, time.perf_counter() - start)


# Run by ``python -S``: fork (from this small process, not from the large benchmark process
# whose high-water mark a child would otherwise inherit through fork/vfork and exec), exec the
# command with its stdout discarded, and print the child's own ``ru_maxrss`` (KiB) from wait4.
_RSS_PROBE = """
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss_of(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
) -> int:
    """Peak resident bytes of one run of ``argv`` (an absolute executable path first).

    ``wait4`` on a child forked straight from this process would report this process's own
    high-water mark whenever it is larger, so the child is forked from a small ``python -S``
    probe instead (about 8 MiB, less than any Python program's own peak).
    """
    done = run_process([sys.executable, "-S", "-c", _RSS_PROBE, *argv], env=env, cwd=cwd)
    fields = done.stdout.split()
    if done.code != 0 or len(fields) != 2 or fields[0] != b"0":
        raise BenchmarkError(f"{list(argv)} failed under the memory probe: {done.stderr!r}")
    return int(fields[1]) * 1024


@dataclass
class Comparison:
    """One row of the table: a measured path against what a user would otherwise use."""

    id: str
    what: str
    baseline: str
    target: float | None
    """The ratio must be at most this (``None``: reported only)."""
    unit: str = "s/op"
    subject_median: float | None = None
    subject_iqr: tuple[float, float] | None = None
    baseline_median: float | None = None
    baseline_iqr: tuple[float, float] | None = None
    ratio: float | None = None
    ratio_iqr: tuple[float, float] | None = None
    rounds: int = 0
    subject_peak_memory: int | None = None
    baseline_peak_memory: int | None = None
    memory_kind: str = "python-heap"
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    goal: str | None = None
    """A target on something other than the ratio (e.g. ``"overhead <= 1 ms"``), shown in the
    target column; ``goal_met`` says whether the run reached it."""
    goal_met: bool | None = None

    def record(self, subject: Timing, baseline: Timing, ratios: list[float]) -> None:
        self.subject_median = subject.median
        self.subject_iqr = subject.iqr
        self.baseline_median = baseline.median
        self.baseline_iqr = baseline.iqr
        self.ratio = statistics.median(ratios)
        self.ratio_iqr = quartiles(ratios)
        self.rounds = len(ratios)

    @property
    def passed(self) -> bool | None:
        if self.error is not None:
            return False
        verdicts = []
        if self.target is not None:
            verdicts.append(self.ratio is not None and self.ratio <= self.target)
        if self.goal is not None:
            verdicts.append(self.goal_met is True)
        return all(verdicts) if verdicts else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        return data


@dataclass
class Report:
    """Every comparison of one run, plus where and how it ran."""

    comparisons: list[Comparison] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(row.passed is not False for row in self.comparisons)
