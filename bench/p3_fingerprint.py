"""P3: ``fingerprint()`` of ~1 MB JSON documents of several shapes, against hashlib + json.dumps.

One row per document shape, each against
``hashlib.sha256(json.dumps(v, sort_keys=True, separators=(",", ":")).encode())`` — what a user
would otherwise write. The shapes are the ones real data takes and the ones that stress a
different part of canonical JSON (see docs/decisions/performance.md):

* ``P3`` — the 1,000-record fan-out document of the reference corpus (generated, checked
  against its published SHA-256);
* ``P3f`` — float-heavy records: 8,000 records of integers, short strings with ``ü``, one float
  each and a nested object (~0.9 MB), the document of issue #20 whose integers (203 among them)
  used to push the whole document off the fast path;
* ``P3i`` — integer-heavy: the same records with integers only, and arrays of small integers
  covering every byte value (the msgpack bytes of 203 are ``cc cb``);
* ``P3d`` — deep nesting: 1,000 chains 60 objects deep;
* ``P3u`` — long Unicode strings: 256 strings of ~4,000 characters in several scripts, with
  emoji and control characters that must be escaped;
* ``P3s`` — many small objects: 40,000 two-member objects in one array;
* ``P3x`` — the rare numbers: the float-heavy records with one float in 50 at 1e16 or above
  (written with a signed exponent) and one null per record; only those numbers are fixed up.

Every document is checked first: its fingerprint equals the SHA-256 of the exact (slow,
reference-faithful) writer's bytes and, where the two agree on the text, of ``json.dumps``'s.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
from collections.abc import Callable
from typing import Any

from corpus import fanout_records
from harness import (
    Comparison,
    Settings,
    Side,
    calibrate,
    check,
    growth,
    interleave,
    peak_python_memory,
)

from templiqx_contracts import fingerprint
from templiqx_contracts.canonical import _exact

__all__ = ["SHAPES", "run"]

_CITIES = ("Zürich", "Köln", "Düsseldorf", "Amsterdam", "Göteborg", "Málaga")
_WORDS = ("Müller", "Straße", "über", "Größe", "naïve", "café", "Ærø", "Łódź")


def float_records(count: int = 8_000, *, seed: int = 20) -> list[dict[str, Any]]:
    """Records of integers, short strings with ``ü``, one float each and a nested object."""
    rnd = random.Random(seed)
    records = []
    for i in range(count):
        records.append(
            {
                "id": i,
                "name": f"Müller {i}",
                "price": round(rnd.uniform(0.5, 2_000.0), 2),
                "stock": {"count": rnd.randrange(0, 500), "city": rnd.choice(_CITIES)},
                "flags": [rnd.randrange(256), rnd.randrange(-128, 128)],
            }
        )
    return records


def int_records(count: int = 8_000, *, seed: int = 21) -> list[dict[str, Any]]:
    """The float records with integers only, plus small-integer arrays over every byte value."""
    rnd = random.Random(seed)
    records = []
    for i in range(count):
        records.append(
            {
                "id": i,
                "name": f"Müller {i}",
                "cents": rnd.randrange(50, 200_000),
                "stock": {"count": rnd.randrange(0, 500), "city": rnd.choice(_CITIES)},
                "bytes": [(i + k) % 256 for k in range(0, 256, 37)],
                "big": rnd.randrange(-(1 << 63), 1 << 63),
            }
        )
    return records


def deep_chains(chains: int = 1_000, depth: int = 60) -> list[dict[str, Any]]:
    """``chains`` linked lists of objects, each ``depth`` levels deep."""
    out = []
    for c in range(chains):
        node: dict[str, Any] = {"end": True}
        for level in range(depth, 0, -1):
            node = {"level": level, "chain": c, "next": node}
        out.append(node)
    return out


def unicode_strings(count: int = 256, length: int = 4_000, *, seed: int = 22) -> dict[str, Any]:
    """``count`` strings of ``length`` characters: Latin, Cyrillic, CJK, emoji, escapes."""
    rnd = random.Random(seed)
    alphabet = (
        "abcdefghijklmnopqrstuvwxyz     äöüßéèñ"
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
        "日本語中文字漢字かなカナ한국어"
        "😀🚀🎉👍🏽"
        '\n\t"\\\x01'
    )
    return {
        f"text-{i:03d}": "".join(rnd.choice(alphabet) for _ in range(length)) for i in range(count)
    }


def small_objects(count: int = 40_000) -> list[dict[str, Any]]:
    """``count`` two-member objects in one array."""
    return [{"k": i, "v": _WORDS[i % len(_WORDS)]} for i in range(count)]


def rare_numbers(count: int = 8_000) -> list[dict[str, Any]]:
    """The float records, one float in 50 at 1e16 or above and one null per record."""
    records = float_records(count, seed=23)
    for i, record in enumerate(records):
        record["note"] = None
        if i % 50 == 0:
            record["price"] = record["price"] * 1e17
    return records


def _fanout(settings: Settings) -> list[dict[str, Any]]:
    return fanout_records(settings.reference)[1]


SHAPES: dict[str, tuple[str, Callable[[Settings], Any]]] = {
    "P3": ("fan-out document, 1,000 records", _fanout),
    "P3f": ("float-heavy records (8,000)", lambda _: float_records()),
    "P3i": ("integer-heavy records (8,000)", lambda _: int_records()),
    "P3d": ("deep nesting (1,000 x 60 levels)", lambda _: deep_chains()),
    "P3u": ("long Unicode strings (256 x 4,000)", lambda _: unicode_strings()),
    "P3s": ("many small objects (40,000)", lambda _: small_objects()),
    "P3x": ("rare numbers (1e16+ floats, nulls)", lambda _: rare_numbers()),
}


def _baseline(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _verify(bench_id: str, value: Any) -> None:
    exact = _exact(value)
    check(
        fingerprint(value) == hashlib.sha256(exact).hexdigest(),
        f"{bench_id}: fingerprint() differs from the SHA-256 of the exact writer's bytes",
    )
    if bench_id != "P3x":  # json.dumps writes no float of these documents differently
        dumped = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        check(dumped.encode() == exact, f"{bench_id}: json.dumps and canonical JSON disagree")
    check(len(_baseline(value)) == 64, "baseline digest is not a SHA-256 hex digest")


def _row(bench_id: str, what: str, value: Any, settings: Settings) -> Comparison:
    row = Comparison(
        id=bench_id,
        what=f"fingerprint(), {what}",
        baseline="sha256(json.dumps(sorted))",
        target=0.5,
    )
    _verify(bench_id, value)
    subject = Side("templiqx", lambda: fingerprint(value))
    baseline = Side("json.dumps", lambda: _baseline(value))
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
    row.metrics["document_bytes"] = len(_exact(value))
    return row


def _growth(settings: Settings, ratio_x1: float | None) -> Comparison:
    """P3g (issue #33): the float records at 8,000 and 32,000 records; the cost must grow with
    the input, and the ratio to json.dumps is reported at both sizes."""
    small, large = float_records(), float_records(32_000)
    _verify("P3g", large)
    row = growth(
        "P3g",
        "fingerprint(), float-heavy records, 32,000 (4x)",
        Side("1x", lambda: fingerprint(small)),
        Side("4x", lambda: fingerprint(large)),
        factor=4,
        rounds=settings.rounds(15),
        repeat=calibrate(lambda: fingerprint(large), 0.15),
    )
    ours = Side("templiqx", lambda: fingerprint(large))
    theirs = Side("json.dumps", lambda: _baseline(large))
    _, _, ratios = interleave(
        ours,
        theirs,
        rounds=settings.rounds(9),
        subject_repeat=calibrate(ours.run, 0.15),
        baseline_repeat=calibrate(theirs.run, 0.15),
    )
    row.metrics["ratio_to_json_dumps_x1"] = None if ratio_x1 is None else round(ratio_x1, 3)
    row.metrics["ratio_to_json_dumps_x4"] = round(statistics.median(ratios), 3)
    return row


def run(settings: Settings) -> list[Comparison]:
    rows = [
        _row(bench_id, what, make(settings), settings) for bench_id, (what, make) in SHAPES.items()
    ]
    rows.append(_growth(settings, next(row.ratio for row in rows if row.id == "P3f")))
    return rows


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """The measured path over every shape, repeated for a profiler."""
    values = [make(settings) for _, make in SHAPES.values()]
    return lambda: [fingerprint(value) for _ in range(10) for value in values]
