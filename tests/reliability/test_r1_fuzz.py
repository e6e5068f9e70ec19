"""R1: hypothesis-generated and mutated contracts, package files, requests and scenario
manifests through the service — every outcome is a well-formed envelope with ``TQX_*``
diagnostics, never an exception (the properties are in ``r1_properties.py``).

The CI-sized run is derandomized and runs in this process. The full run
(``TEMPLIQX_RELIABILITY_FULL=1``: 100,000 inputs) shards each property across one worker
process per CPU, each exploring its own random seed, and adds up their counters.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import r1_properties as r1
import reliability_kit as kit

WORKERS = (os.cpu_count() or 1) if kit.FULL else 1


@pytest.fixture(scope="module", autouse=True)
def _targets() -> None:
    figures = kit.FIGURES
    figures.expect(r1.SUITE, "inputs", ">=", r1.TOTAL)
    figures.expect(r1.SUITE, "uncaught exceptions", "==", 0)
    figures.expect(r1.SUITE, "malformed or TQX_INTERNAL envelopes", "==", 0)
    figures.expect(r1.SUITE, "envelopes naming a host path", "==", 0)


def _sharded(kind: str, base: Path) -> None:
    examples = r1.examples_of(kind)
    shares = [examples // WORKERS + (1 if i < examples % WORKERS else 0) for i in range(WORKERS)]
    seeds = [random.SystemRandom().randrange(1 << 32) for _ in shares]
    script = Path(r1.__file__)
    workers = []
    for index, (count, worker_seed) in enumerate(zip(shares, seeds, strict=True)):
        folder = base / f"worker-{index}"
        folder.mkdir()
        report = folder / "report.json"
        argv = [str(count), str(worker_seed), str(folder), str(report)]
        process = subprocess.Popen(
            [sys.executable, str(script), kind, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        workers.append((process, report, worker_seed))
    failures = []
    for process, report, worker_seed in workers:
        output, _ = process.communicate()
        if not report.exists():
            failures.append(f"worker (seed {worker_seed}) died: {process.returncode}\n{output}")
            continue
        result = json.loads(report.read_text("utf-8"))
        for measure, value in result["counters"].items():
            kit.FIGURES.add(r1.SUITE, measure, value)
        if result["failure"] is not None:
            failures.append(f"worker (seed {worker_seed}):\n{result['failure']}\n{output}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("kind", r1.KINDS)
def test_generated_inputs_never_crash_the_service(kind: str, tmp_path: Path) -> None:
    if WORKERS > 1:
        _sharded(kind, tmp_path)
    else:
        r1.run(kind, r1.make_box(tmp_path), r1.examples_of(kind), None)
