"""Whether a value is cheap enough to handle on the event loop.

Checking, converting and serializing a value walks all of it: for 200,000 values or megabytes
of text that is a fraction of a second, which on the event loop is a fraction of a second
without pings, cancellations or any other call (issue #29). :func:`is_small` decides in a few
microseconds, looking at no more than :data:`SMALL_NODES` values and :data:`SMALL_TEXT`
characters, whether a value may be handled inline; anything larger goes to a worker thread.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["SMALL_NODES", "SMALL_TEXT", "is_small"]

SMALL_NODES: Final = 512
SMALL_TEXT: Final = 1 << 16


def is_small(value: Any) -> bool:
    """Whether ``value`` holds at most :data:`SMALL_NODES` values and :data:`SMALL_TEXT`
    characters of text (JSON data, pydantic models are not looked into; msgspec Structs are)."""
    budget = SMALL_NODES
    text = 0
    stack = [value]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            text += len(item)
            if text > SMALL_TEXT:
                return False
        elif isinstance(item, (dict, list, tuple)):
            if 2 * len(item) > budget:
                return False
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            else:
                stack.extend(item)
        else:
            fields = getattr(type(item), "__struct_fields__", None)
            if fields is not None:
                if len(fields) > budget:
                    return False
                stack.extend(getattr(item, name) for name in fields)
    return True
