"""P10: partial values of a 50,000-delta structured stream, against re-parsing each prefix.

The stream is a structured answer (a title, a summary, 1,500 line items of strings, numbers,
booleans, nulls and arrays, a total; 179 kB of JSON) cut into 50,000 fragments of 1 to 6
characters (3.6 on average, an LLM token's size), at seeded random places, so fragments end
inside strings, numbers, escapes and literals.

* ``P10`` — templiqx: one :class:`~templiqx_contracts.PartialJSON` fed every fragment, the
  value read after each. Baseline: what users do today (Instructor, pydantic-ai): after each
  fragment, ``pydantic_core.from_json(prefix, allow_partial=True)`` over the whole prefix.
  Target <= 0.1.
* ``P10g`` — growth (issue #33): the same work on a stream four times as long (200,000
  fragments of a document with four times the items) against the 50,000-fragment stream; it
  fails when the time grows more than 4.6 times (``harness.growth``).
* ``P10s`` — the schema check: :class:`~templiqx_core.PartialOutput` with the answer's output
  schema (every value checked as it arrives) against the reader alone; reported.

Checked first: both sides end with the document itself; the reader's values, sampled along the
stream, only ever grow; the schema check raises no signal on the valid answer and one on a copy
with a wrong-typed item.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

import pydantic_core
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

from templiqx_contracts import MISSING, PartialJSON, decode_json
from templiqx_core import PartialOutput

__all__ = ["SCHEMA", "answer", "fragments", "run"]

DELTAS = 50_000
ITEMS = 1_500
_WORDS = ("contract", "clause", "términos", "notice", "period", "Überblick", "payment", "Lieferung")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "summary", "items", "total"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "summary": {"type": "string"},
        "total": {"type": "number", "minimum": 0},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "name", "price"],
                "properties": {
                    "id": {"type": "integer", "minimum": 0},
                    "name": {"type": "string", "maxLength": 40},
                    "price": {"type": "number"},
                    "tags": {"type": "array", "maxItems": 4, "items": {"type": "string"}},
                    "in_stock": {"type": "boolean"},
                    "note": {"type": "null"},
                },
            },
        },
    },
}


def answer(items: int = ITEMS, *, seed: int = 10) -> dict[str, Any]:
    """The structured answer: a title, a summary, ``items`` line items and a total."""
    rnd = random.Random(seed)
    lines = [
        {
            "id": i,
            "name": f"{rnd.choice(_WORDS)} {i}",
            "price": round(rnd.uniform(1, 999), 2),
            "tags": [rnd.choice(_WORDS) for _ in range(2)],
            "in_stock": rnd.random() < 0.5,
            "note": None,
        }
        for i in range(items)
    ]
    return {
        "title": "Quarterly review of supplier contracts",
        "summary": " ".join(rnd.choice(_WORDS) for _ in range(60)) + ' — "final" \\ draft\n',
        "items": lines,
        "total": round(sum(line["price"] for line in lines), 2),
    }


def fragments(text: str, count: int, *, seed: int = 11) -> list[str]:
    """``text`` cut at ``count - 1`` seeded random places."""
    rnd = random.Random(seed)
    cuts = sorted(rnd.sample(range(1, len(text)), count - 1))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _stream(deltas: int) -> tuple[dict[str, Any], str, list[str]]:
    document = answer(ITEMS * deltas // DELTAS)
    text = json.dumps(document, ensure_ascii=False)
    return document, text, fragments(text, deltas)


def read_partials(pieces: list[str]) -> Any:
    """templiqx: feed every fragment, read the value after each."""
    reader = PartialJSON()
    for piece in pieces:
        reader.feed(piece).value  # noqa: B018 - reading the value is the measured work
    return reader.finish().value


def check_partials(pieces: list[str]) -> Any:
    """templiqx with the output schema checked as the answer arrives."""
    output = PartialOutput(SCHEMA)
    for piece in pieces:
        update = output.feed(piece)
        if update.problems:
            raise AssertionError(update.problems[0].message)
    return output.value


def reparse_prefixes(pieces: list[str]) -> Any:
    """The baseline: pydantic-core's partial JSON over the whole prefix after each fragment."""
    prefix = ""
    value: Any = None
    for piece in pieces:
        prefix += piece
        value = pydantic_core.from_json(prefix, allow_partial=True)
    return value


def _verify(document: dict[str, Any], text: str, pieces: list[str]) -> None:
    check("".join(pieces) == text, "the fragments do not add up to the document")
    check(read_partials(pieces) == document == decode_json(text), "templiqx's final value differs")
    check(check_partials(pieces) == document, "the schema-checked final value differs")
    reader = PartialJSON()
    previous: Any = MISSING
    for index, piece in enumerate(pieces):
        value = reader.feed(piece).value
        if index % 997 == 0 or index == len(pieces) - 1:
            check(_grows(previous, value), f"the partial value shrank at fragment {index}")
            previous = copy.deepcopy(value)
    wrong = copy.deepcopy(document)
    wrong["items"][0]["price"] = str(wrong["items"][0]["price"])
    output = PartialOutput(SCHEMA)
    wrong_text = json.dumps(wrong, ensure_ascii=False)
    signals = [p for piece in fragments(wrong_text, 2_000) for p in output.feed(piece).problems]
    check(
        [p.json_pointer for p in signals] == ["/output/items/0/price"],
        "the schema check missed the wrong-typed price",
    )


def _grows(old: Any, new: Any) -> bool:
    if old is MISSING:
        return True
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _grows(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return (
            isinstance(new, list)
            and len(old) <= len(new)
            and all(_grows(a, b) for a, b in zip(old, new, strict=False))
        )
    return bool(old == new)


def run(settings: Settings) -> list[Comparison]:
    deltas = 5_000 if settings.quick else DELTAS
    document, text, pieces = _stream(deltas)
    _verify(document, text, pieces)
    baseline_pieces = pieces
    check(reparse_prefixes(baseline_pieces) == document, "pydantic's final value differs")

    main = Comparison(
        id="P10",
        what=f"partial values, {deltas:,}-delta structured stream",
        baseline="pydantic_core.from_json(prefix, allow_partial) per delta",
        target=0.1,
    )
    subject = Side("templiqx", lambda: read_partials(pieces))
    baseline = Side("pydantic-core", lambda: reparse_prefixes(baseline_pieces))
    a, b, ratios = interleave(
        subject,
        baseline,
        rounds=settings.rounds(1, quick=1),  # one baseline pass re-parses 50,000 prefixes (minutes)
        subject_repeat=calibrate(subject.run, 0.3),
        baseline_repeat=1,
        warmup=0,
    )
    main.record(a, b, ratios)
    main.subject_peak_memory = peak_python_memory(subject.run)
    main.baseline_peak_memory = peak_python_memory(lambda: reparse_prefixes(pieces[: deltas // 10]))
    main.metrics.update(
        document_bytes=len(text.encode()),
        mean_delta_chars=round(len(text) / deltas, 2),
        baseline_peak_memory_deltas=deltas // 10,
    )

    _, long_text, long_pieces = _stream(4 * deltas)
    check(read_partials(long_pieces) == json.loads(long_text), "the long stream's value differs")
    grown = growth(
        "P10g",
        f"partial values, {4 * deltas:,} deltas (4x)",
        Side("1x", lambda: read_partials(pieces)),
        Side("4x", lambda: read_partials(long_pieces)),
        factor=4,
        rounds=settings.rounds(9),
    )
    grown.metrics["long_document_bytes"] = len(long_text.encode())

    schema = Comparison(
        id="P10s",
        what=f"PartialOutput (schema checked), {deltas:,} deltas",
        baseline="PartialJSON alone",
        target=None,
    )
    a, b, ratios = interleave(
        Side("checked", lambda: check_partials(pieces)),
        Side("reader", lambda: read_partials(pieces)),
        rounds=settings.rounds(11),
    )
    schema.record(a, b, ratios)
    schema.subject_peak_memory = peak_python_memory(lambda: check_partials(pieces))
    return [main, grown, schema]


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """The measured path (reader and schema check), for a profiler."""
    _, _, pieces = _stream(DELTAS)
    return lambda: (read_partials(pieces), check_partials(pieces))
