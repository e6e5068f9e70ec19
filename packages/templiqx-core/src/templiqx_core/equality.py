"""Strict JSON equality: same JSON type and same value; an integer never equals a float."""

from __future__ import annotations

from typing import Any

__all__ = ["strict_json_equal"]


def strict_json_equal(a: Any, b: Any) -> bool:
    """Compare two JSON values the way ``equals`` and the bounded const/enum check do.

    Unlike Python's ``==``: ``1`` differs from ``1.0`` and ``True`` differs from ``1``. Floats
    compare with IEEE ``==`` (``0.0`` equals ``-0.0``); strings by exact code points; arrays
    pairwise; objects by key set and values.

    >>> strict_json_equal(1, 1.0), strict_json_equal(True, 1), strict_json_equal([0.0], [-0.0])
    (False, False, True)
    """
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int):
        return isinstance(b, int) and a == b
    if isinstance(a, float):
        return isinstance(b, float) and a == b
    if isinstance(a, str):
        return isinstance(b, str) and a == b
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(strict_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return False
        return all(strict_json_equal(value, b[key]) for key, value in a.items())
    return type(a) is type(b) and bool(a == b)
