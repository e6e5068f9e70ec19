"""Incremental updates of a partial JSON value: :data:`PartialChange` and how to apply them.

A value read as it streams (:class:`~templiqx_contracts.PartialJSON`) only grows: members and
items are added, containers open empty and fill in, an unfinished string is extended. Each step
is one change:

* :class:`PartialSet` — a value appears at ``path``: a member added (or, for a repeated member
  name, replaced), an item appended, a container opened as ``{}`` or ``[]``, a scalar or a
  string completed that was not shown before. An empty ``path`` replaces the whole value.
* :class:`PartialAppend` — the string at ``path`` grows by ``text``.

``path`` holds member names (``str``) and array indexes (``int``) from the root. Applying every
change so far, in order, to :data:`~templiqx_contracts.MISSING` gives the value so far
(:func:`apply_partial_changes`). Their wire form is a compact JSON array of objects tagged by
``op`` (:func:`encode_partial_changes`, :func:`decode_partial_changes`)::

    [{"op":"set","path":["items"],"value":[]},{"op":"append","path":["title"],"text":"Q3"}]

Because every change carries only what is new, the changes of a whole stream add up to a size
linear in the answer, however many fragments it came in (see ``docs/partial-output.md``).

>>> from templiqx_contracts import MISSING
>>> value = apply_partial_changes(MISSING, [PartialSet((), {}), PartialSet(("title",), "Q")])
>>> apply_partial_changes(value, [PartialAppend(("title",), "3 plan")])
{'title': 'Q3 plan'}
>>> encode_partial_changes([PartialAppend(("title",), " draft")])
b'[{"op":"append","path":["title"],"text":" draft"}]'
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

__all__ = [
    "PartialAppend",
    "PartialChange",
    "PartialChangeError",
    "PartialSet",
    "apply_partial_changes",
    "decode_partial_changes",
    "encode_partial_changes",
]

ValuePath = tuple[str | int, ...]
"""Where a value sits in the document: member names and array indices from the root."""


class _ChangeBase(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="op"):
    """Base of the change union; tagged by ``op``."""


class PartialSet(_ChangeBase, frozen=True, tag="set"):
    """A value appears at ``path`` (the whole value is replaced when ``path`` is empty)."""

    path: ValuePath
    """Member names and array indexes from the root; the last step is where ``value`` goes
    (an index equal to the array's length appends)."""
    value: Any
    """The JSON value that appears there (a container opens empty and fills in later)."""


class PartialAppend(_ChangeBase, frozen=True, tag="append"):
    """The string at ``path`` grows by ``text``."""

    path: ValuePath
    """Member names and array indexes from the root to the string."""
    text: str
    """What the string grows by."""


PartialChange = PartialSet | PartialAppend
"""One incremental update of a partial value (tagged by ``op`` on the wire)."""


class PartialChangeError(ValueError):
    """A change that does not fit the value it is applied to (wrong path or type)."""


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(list[PartialChange])


def encode_partial_changes(changes: Iterable[PartialChange]) -> bytes:
    """The wire form of ``changes``: a compact JSON array, e.g.
    ``[{"op":"append","path":["title"],"text":"Q3"}]``."""
    return _encoder.encode(changes if isinstance(changes, (list, tuple)) else list(changes))


def decode_partial_changes(data: bytes | str) -> list[PartialChange]:
    """Decode changes from their wire form; anything else raises ``msgspec.ValidationError``
    (or ``msgspec.DecodeError`` for text that is not JSON)."""
    return _decoder.decode(data)


def _fresh(value: Any) -> Any:
    """``value`` as a new object the result may own (containers copied, scalars shared)."""
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


def _describe(path: Sequence[str | int]) -> str:
    return "the root" if not path else "/" + "/".join(str(step) for step in path)


def _holds(node: Any, step: str | int) -> bool:
    """Whether ``node`` is an object with member ``step`` or an array with item ``step``."""
    if isinstance(node, dict):
        return isinstance(step, str) and step in node
    return isinstance(node, list) and type(step) is int and 0 <= step < len(node)


def _container(root: Any, path: Sequence[str | int]) -> Any:
    """The object or array at ``path`` (the parent of a change's target)."""
    node = root
    for depth, step in enumerate(path):
        if not _holds(node, step):
            raise PartialChangeError(f"no value at {_describe(path[: depth + 1])} to change")
        node = node[step]
    if not isinstance(node, (dict, list)):
        raise PartialChangeError(f"{_describe(path)} is not an object or an array")
    return node


def _set(root: Any, path: Sequence[str | int], value: Any) -> Any:
    if not path:
        return value
    parent = _container(root, path[:-1])
    step = path[-1]
    if isinstance(parent, dict) and isinstance(step, str):
        parent[step] = value
    elif isinstance(parent, list) and type(step) is int and 0 <= step <= len(parent):
        if step == len(parent):
            parent.append(value)
        else:
            parent[step] = value
    else:
        raise PartialChangeError(f"{_describe(path)} cannot be set")
    return root


def _append(root: Any, path: Sequence[str | int], text: str) -> Any:
    if not path:
        if not isinstance(root, str):
            raise PartialChangeError("the root is not a string to append to")
        return root + text
    parent = _container(root, path[:-1])
    step = path[-1]
    try:
        current = parent[step]
    except (LookupError, TypeError):
        current = None
    if not isinstance(current, str) or (isinstance(parent, list) and type(step) is not int):
        raise PartialChangeError(f"no string at {_describe(path)} to append to")
    parent[step] = current + text
    return root


def apply_partial_changes(value: Any, changes: Iterable[PartialChange]) -> Any:
    """Apply ``changes`` in order to ``value`` (start from :data:`MISSING`); the new value.

    Objects and arrays in ``value`` are changed in place; the root is replaced by a
    :class:`PartialSet` with an empty path and by appending to a root string, so always use
    the value returned. Values taken from :class:`PartialSet` changes are copied, so the result
    never shares a container with the changes. Consecutive appends to one string are joined
    once, so applying a whole stream's changes in one call costs time linear in their size.

    Raises :class:`PartialChangeError` for a change that does not fit the value.
    """
    pending_path: ValuePath | None = None
    pending: list[str] = []
    for change in changes:
        if isinstance(change, PartialAppend):
            path = tuple(change.path)
            if path != pending_path and pending_path is not None:
                value = _append(value, pending_path, "".join(pending))
                pending = []
            pending_path = path
            pending.append(change.text)
            continue
        if pending_path is not None:
            value = _append(value, pending_path, "".join(pending))
            pending_path, pending = None, []
        if not isinstance(change, PartialSet):
            raise PartialChangeError(f"not a partial change: {change!r}")
        value = _set(value, tuple(change.path), _fresh(change.value))
    if pending_path is not None:
        value = _append(value, pending_path, "".join(pending))
    return value
