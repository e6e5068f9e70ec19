"""Scoring an eval row: does the output match what the row expected?

An expected object is matched field by field (its top-level fields; fields the output has
beyond them are not judged), anything else as a whole. Values are equal when their canonical
JSON is (so ``1`` and ``1.0`` differ, as they do in fingerprints, and so do ``true`` and
``1``).
"""

from __future__ import annotations

from typing import Any

from templiqx_contracts import CanonicalJSONError, canonical_json

__all__ = ["MAX_FIELDS", "compare", "pointer"]

MAX_FIELDS = 256
"""Expected fields scored one by one per row at most (and mismatches listed)."""

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


def pointer(key: str) -> str:
    """The JSON pointer of a top-level field."""
    return _pointer(key)


def compare(expected: Any, output: Any) -> tuple[bool, list[str], list[str]]:
    """Whether ``output`` matches ``expected``; the mismatched pointers; the top-level fields
    compared one by one (an expected object's first :data:`MAX_FIELDS`)."""
    if isinstance(expected, dict):
        got = output if isinstance(output, dict) else {}
        fields = {str(key): _same(value, got.get(key, _MISSING)) for key, value in expected.items()}
        mismatched = [_pointer(key) for key, matched in fields.items() if not matched]
        matched = not mismatched and isinstance(output, dict)
        if not isinstance(output, dict):
            mismatched = [""]
        return matched, mismatched[:MAX_FIELDS], list(fields)[:MAX_FIELDS]
    matched = _same(expected, output)
    return matched, [] if matched else [""], []
