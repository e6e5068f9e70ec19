"""Run the benchmarks, print the table and write ``bench/results.json``.

Usage: ``python bench/run.py [--only P1,P3] [--quick] [--profile P2] [--output PATH]``
(``nox -s bench`` runs it with the ``bench`` dependency group). The exit code is 1 when any
benchmark failed its correctness check or missed its target, 0 otherwise.

``--profile ID`` runs that benchmark's measured path under pyinstrument instead of timing it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from corpus import ROOT, find_reference
from harness import Comparison, Report, Settings

MODULES: dict[str, tuple[str, str]] = {
    "P1": ("p1_stream", "consume a 50,000-delta SSE stream"),
    "P2": ("p2_compile", "compile bli-62 + fingerprint"),
    "P3": ("p3_fingerprint", "fingerprint a 1 MB JSON document"),
    "P4": (
        "p4_cli_start",
        "templiqx --help, discover, validate, compile, catalog: fresh processes",
    ),
    "P5": ("p5_mcp", "1,000 compile_contract calls over MCP stdio"),
    "P6": ("p6_evals", "test_package over the reference packages"),
    "P8": ("p8_call_overhead", "execute_contract overhead over a bare POST, prepared"),
    "P11": ("p11_async_streams", "event-loop lag, 20 concurrent async streams"),
    "P10": ("p10_partial", "partial values over a 50,000-delta structured stream"),
    "P7": ("p7_sequential_streams", "100 sequential streamed calls on one keep-alive client"),
    "P9": ("p9_mcp_start", "templiqx-mcp cold start to initialize and tools/list"),
    "P12": ("p12_http_compile", "compile_contract over HTTP vs a minimal Starlette app"),
    "P13": ("p13_sse_relay", "relay a 50,000-delta stream as SSE vs in-process"),
    "P14": ("p14_concurrent_sse", "200 concurrent SSE streams: loop lag, threads, RSS"),
    "P14F": ("p14f_first_call", "event-loop stall of the first async OpenAI call"),
    "P15": ("p15_batch", "batch runs: throughput at a 50 ms model, memory, Ray actors"),
    "P16": ("p16_tracing", "execute_contract with OpenTelemetry tracing on vs off, and no SDK"),
}


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def _value(row: Comparison, value: float | None) -> str:
    if value is None:
        return "-"
    if row.unit == "evals/s":
        return f"{value:.0f} evals/s"
    return _seconds(value)


def _target(row: Comparison) -> str:
    """The target column: the ratio's bound and any other goal the row has."""
    parts = [] if row.target is None else [f"<= {row.target:g}"]
    if row.goal is not None:
        parts.append(row.goal)
    return ", ".join(parts) or "-"


def _spread(row: Comparison) -> str:
    if row.ratio_iqr is not None:
        low, high = row.ratio_iqr
        return f"{low:.3g}-{high:.3g}"
    if row.subject_iqr is not None and row.subject_median:
        low, high = row.subject_iqr
        return f"+/-{(high - low) / 2 / row.subject_median:.0%}"
    return "-"


def table(report: Report) -> str:
    header = (
        "id",
        "measured",
        "compared with",
        "templiqx",
        "other",
        "ratio",
        "ratio IQR",
        "target",
        "result",
        "peak mem (ours/other)",
    )
    lines = [header]
    for row in report.comparisons:
        verdict = {True: "PASS", False: "FAIL", None: "report"}[row.passed]
        if row.error is not None:
            verdict = "ERROR"
        lines.append(
            (
                row.id,
                row.what,
                row.baseline,
                _value(row, row.subject_median),
                _value(row, row.baseline_median),
                "-" if row.ratio is None else f"{row.ratio:.3g}",
                _spread(row),
                _target(row),
                verdict,
                f"{_bytes(row.subject_peak_memory)} / {_bytes(row.baseline_peak_memory)}",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append(" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip())
        if index == 0:
            out.append("-+-".join("-" * width for width in widths))
    out.append("")
    for row in report.comparisons:
        if row.error is not None:
            out.append(f"{row.id} ERROR: {row.error}")
        notes = [f"{key}={value}" for key, value in row.metrics.items()]
        if row.memory_kind != "python-heap":
            notes.append(f"memory={row.memory_kind}")
        out.append(f"{row.id}: {row.rounds} rounds; " + ", ".join(notes))
    return "\n".join(out)


def _environment() -> dict[str, object]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _failed(bench_id: str, what: str, error: BaseException) -> Comparison:
    row = Comparison(id=bench_id, what=what, baseline="-", target=None)
    row.error = f"{type(error).__name__}: {error}"
    return row


def run(ids: list[str], settings: Settings, log: Callable[[str], None]) -> Report:
    report = Report(environment=_environment())
    started = time.perf_counter()
    for bench_id in ids:
        module_name, what = MODULES[bench_id]
        log(f"[{bench_id}] {what} ...")
        begin = time.perf_counter()
        try:
            module = importlib.import_module(module_name)
            rows: list[Comparison] = module.run(settings)
        except Exception as error:  # a wrong result or a raising path: report and fail the run
            traceback.print_exc()
            rows = [_failed(bench_id, what, error)]
        for row in rows:
            row.metrics.setdefault("benchmark_seconds", round(time.perf_counter() - begin, 1))
        report.comparisons.extend(rows)
    report.seconds = time.perf_counter() - started
    return report


def profile(bench_id: str, settings: Settings) -> None:
    from pyinstrument import Profiler

    module = importlib.import_module(MODULES[bench_id][0])
    subject = module.subject_for_profile(settings)
    profiler = Profiler(interval=0.0005)
    profiler.start()
    subject()
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated ids, e.g. P2,P3")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke run)")
    parser.add_argument("--profile", metavar="ID", help="profile one benchmark's measured path")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args(argv)
    ids = [part.strip().upper() for part in args.only.split(",") if part.strip()] or list(MODULES)
    unknown = [bench_id for bench_id in ids if bench_id not in MODULES]
    if unknown:
        parser.error(f"unknown benchmark id(s) {unknown}; known: {', '.join(MODULES)}")
    with tempfile.TemporaryDirectory(prefix="templiqx-bench-") as scratch:
        settings = Settings(reference=find_reference(), scratch=Path(scratch), quick=args.quick)
        if args.profile:
            profile(args.profile.upper(), settings)
            return 0
        report = run(ids, settings, lambda line: print(line, file=sys.stderr, flush=True))
    print(table(report))
    print(f"\ntotal {report.seconds:.0f} s; ratios are templiqx/other, medians of per-round ratios")
    data = {
        "environment": report.environment,
        "seconds": round(report.seconds, 1),
        "ok": report.ok,
        "benchmarks": [row.to_json() for row in report.comparisons],
    }
    Path(args.output).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
