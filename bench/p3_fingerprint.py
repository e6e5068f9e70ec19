"""P3: ``fingerprint()`` of a 1 MB JSON document against hashlib over ``json.dumps``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from corpus import fanout_records
from harness import Comparison, Settings, Side, calibrate, check, interleave, peak_python_memory

from templiqx_contracts import fingerprint

__all__ = ["run"]


def _baseline(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P3",
        what="fingerprint(), 1.1 MB JSON",
        baseline="sha256(json.dumps(sorted))",
        target=0.5,
    )
    _, records = fanout_records(settings.reference)
    expected = hashlib.sha256(
        json.dumps(records, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    check(
        fingerprint(records) == expected,
        "fingerprint() of the fan-out document is not the SHA-256 of its canonical JSON",
    )
    check(len(_baseline(records)) == 64, "baseline digest is not a SHA-256 hex digest")

    subject = Side("templiqx", lambda: fingerprint(records))
    baseline = Side("json.dumps", lambda: _baseline(records))
    a, b, ratios = interleave(
        subject,
        baseline,
        rounds=settings.rounds(15),
        subject_repeat=calibrate(subject.run, 0.15),
        baseline_repeat=calibrate(baseline.run, 0.15),
    )
    row.record(a, b, ratios)
    row.subject_peak_memory = peak_python_memory(subject.run)
    row.baseline_peak_memory = peak_python_memory(baseline.run)
    row.metrics["document_bytes"] = len(json.dumps(records, separators=(",", ":")))
    return [row]


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """The measured path, repeated for a profiler."""
    _, records = fanout_records(settings.reference)
    return lambda: [fingerprint(records) for _ in range(50)]
