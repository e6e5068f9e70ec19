"""Scoring an eval row: does the output match what the row expected?

An expected object is matched field by field (its top-level fields; fields the output has
beyond them are not judged), anything else as a whole. Values are equal when their canonical
JSON is (so ``1`` and ``1.0`` differ, as they do in fingerprints, and so do ``true`` and
``1``).
"""

from __future__ import annotations

from typing import Any

from templiqx_contracts import CanonicalJSONError, canonical_json

__all__ = ["MAX_MISMATCHES", "compare"]

MAX_MISMATCHES = 20
"""Mismatched pointers listed per row at most."""

_MISSING = object()


def _same(left: Any, right: Any) -> bool:
    if left is _MISSING or right is _MISSING:
        return left is right
    try:
        return canonical_json(left) == canonical_json(right)
    except (CanonicalJSONError, TypeError, ValueError):
        return bool(left == right)


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def compare(expected: Any, output: Any) -> tuple[bool, list[str], dict[str, bool]]:
    """Whether ``output`` matches ``expected``; the mismatched pointers; per-field matches."""
    if isinstance(expected, dict) and isinstance(output, dict):
        fields = {
            str(key): _same(value, output.get(key, _MISSING)) for key, value in expected.items()
        }
        mismatched = [_pointer(key) for key, matched in fields.items() if not matched]
        return not mismatched, mismatched[:MAX_MISMATCHES], fields
    matched = _same(expected, output)
    return matched, [] if matched else [""], {}
