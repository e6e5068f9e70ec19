"""P6: ``test_package`` over every reference package: evals per second and peak memory.

There is no other tool to compare with, so this row has no target: it reports throughput for
a fresh service per pass (what one ``templiqx test`` run pays: every contract read and parsed)
and for a reused service, and the peak Python heap of one fresh pass.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from harness import BenchmarkError, Comparison, Settings, check, peak_python_memory, quartiles

from templiqx_application import TempliqxService
from templiqx_contracts import TestReport, fingerprint
from templiqx_local import compose

__all__ = ["run"]

CAPABILITIES = ["structured_output"]

# (folder below the reference holding the package, package, fixtures, TestReport fingerprint)
PACKAGES: list[tuple[str, str, int, str | None]] = [
    ("", "crm3", 2, "d1ad1c8818cffb157b35bb57b2aade5b3ee0549bd83fad50dc83050008a39a24"),
    (
        "packages",
        "basenet-legal",
        2,
        "0a3f536f3707432beed55e207470adcfe51d5f5bf58c7997b3e0c9a45c9d1ce6",
    ),
    (
        "packages",
        "synthetic-opco",
        2,
        "b8916529f4de539f099f52beaea60321e021fea3b0f528aea02415ca6072225d",
    ),
    ("packages", "demo", 1, None),
]


def _services(reference: Path, scratch: Path) -> dict[str, TempliqxService]:
    roots = sorted({folder for folder, *_ in PACKAGES})
    return {
        folder: compose(reference / folder, scratch / f"workspace-{folder or 'root'}")
        for folder in roots
    }


def _pass(reference: Path, scratch: Path, services: dict[str, TempliqxService] | None) -> int:
    """test_package on every package; the number of evals run. Checks every report."""
    services = services if services is not None else _services(reference, scratch)
    evals = 0
    for folder, package, count, digest in PACKAGES:
        envelope = services[folder].test_package(package, capabilities=CAPABILITIES)
        report = envelope.result
        if not envelope.ok or not isinstance(report, TestReport) or report.passed != count:
            raise BenchmarkError(f"test_package({package!r}) failed: {envelope.diagnostics}")
        if digest is not None and fingerprint(report) != digest:
            raise BenchmarkError(f"test_package({package!r}) report fingerprint changed")
        evals += report.passed
    return evals


def run(settings: Settings) -> list[Comparison]:
    reference, scratch = settings.reference, settings.scratch
    found = {("", "crm3")} | {
        ("packages", p.parent.name) for p in (reference / "packages").glob("*/templiqx.yaml")
    }
    check(
        found == {(folder, name) for folder, name, *_ in PACKAGES},
        f"the reference packages changed: {sorted(found)}",
    )
    rows = []
    total = _pass(reference, scratch, None)  # checked once before timing
    check(total == sum(count for *_, count, _ in PACKAGES), "unexpected eval count")
    warm = _services(reference, scratch)
    for label, services in (("fresh service", None), ("reused service", warm)):
        rates: list[float] = []
        budget = time.perf_counter() + (0.5 if settings.quick else 3.0)
        while time.perf_counter() < budget or len(rates) < 5:
            start = time.perf_counter()
            evals = _pass(reference, scratch, services)
            rates.append(evals / (time.perf_counter() - start))
        row = Comparison(
            id="P6" if services is None else "P6w",
            what=f"test_package, {len(PACKAGES)} packages ({label})",
            baseline="-",
            target=None,
            unit="evals/s",
        )
        row.subject_median = statistics.median(rates)
        row.subject_iqr = quartiles(rates)
        row.rounds = len(rates)
        row.subject_peak_memory = peak_python_memory(partial(_pass, reference, scratch, services))
        row.metrics = {"evals_per_pass": total, "evals_per_s": round(row.subject_median, 1)}
        rows.append(row)
    return rows


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """The measured path (fresh service per pass), repeated for a profiler."""
    return lambda: [_pass(settings.reference, settings.scratch, None) for _ in range(20)]
