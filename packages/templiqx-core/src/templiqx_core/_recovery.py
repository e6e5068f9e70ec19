"""Reading on after a problem, so one run reports every independent error of a document.

The schema-directed readers (:mod:`templiqx_core._yaml_decode`) stop at the first problem by
raising :class:`~templiqx_core._yaml_tree.YamlError`. Inside :func:`collecting`, the places
that can recover — a struct field, a list item, a map entry, an unknown or missing field —
hand the error to :func:`report` instead, which records it and lets reading go on with a
*placeholder* of the right shape in place of the broken value (an empty string or list, a
``text`` node, a literal expression, ``null`` for a JSON value). What is recorded besides the
errors lets later stages tell a consequence from a new problem:

* ``failed`` — the raw nodes whose value was replaced by a placeholder;
* ``missing`` — the (mapping, field) pairs whose required field was absent;
* ``renamed`` — a misspelt key (``mesages``) that was read as the field it is one or two
  keystrokes away from (``messages``), so what is inside it is checked too.

Outside :func:`collecting`, :func:`report` raises, which keeps every reader's one-error
behaviour for callers that want it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from templiqx_core._yaml_tree import Node, YamlError

__all__ = ["Collector", "collecting", "placeholder", "register_placeholder", "rename", "report"]


class Collector:
    """The problems found while reading one document, and what they replaced."""

    def __init__(self) -> None:
        self.errors: list[YamlError] = []
        self.failed: dict[int, Node] = {}
        self.missing: set[tuple[int, str]] = set()
        self.renamed: dict[tuple[int, str], tuple[Node, Node]] = {}
        self.whole: set[int] = set()
        """The ``id`` of each error about a whole mapping (a missing field), not one token."""
        self._seen: set[tuple[int | None, int | None, str]] = set()

    def add(self, error: YamlError) -> None:
        """Record ``error`` once (an aliased node read twice fails twice the same way)."""
        key = (error.line, error.column, error.message)
        if key not in self._seen:
            self._seen.add(key)
            self.errors.append(error)


_ACTIVE: ContextVar[Collector | None] = ContextVar("templiqx_yaml_collector", default=None)


@contextmanager
def collecting() -> Iterator[Collector]:
    """Within the block, recoverable reader errors are recorded in the collector it yields."""
    collector = Collector()
    token = _ACTIVE.set(collector)
    try:
        yield collector
    finally:
        _ACTIVE.reset(token)


def report(error: YamlError, node: Node, *, missing: str | None = None) -> None:
    """Raise ``error`` — or, while collecting, record it and return so reading goes on.

    ``node`` is the node whose value the caller replaces by a placeholder; for a missing field
    it is the mapping and ``missing`` the field's key.
    """
    collector = _ACTIVE.get()
    if collector is None:
        raise error
    if not error.follows:
        collector.add(error)
    if missing is None:
        collector.failed[id(node)] = node
    else:
        collector.missing.add((id(node), missing))
        collector.whole.add(id(error))


def rename(mapping: Node, field: str, key: Node, value: Node) -> bool:
    """While collecting, note that ``key`` (misspelt) is read as ``field``; False otherwise."""
    collector = _ACTIVE.get()
    if collector is None:
        return False
    collector.renamed[(id(mapping), field)] = (key, value)
    return True


_R = TypeVar("_R", bound=Callable[..., Any])
_PLACEHOLDERS: dict[Callable[..., Any], Callable[[], Any]] = {}


def register_placeholder(reader: _R, factory: Callable[[], Any]) -> _R:
    """Declare what stands in for a value ``reader`` failed to read; returns ``reader``."""
    _PLACEHOLDERS[reader] = factory
    return reader


def placeholder(reader: Callable[..., Any]) -> Any:
    """A fresh stand-in of the shape ``reader`` produces (``None`` for JSON values)."""
    factory = _PLACEHOLDERS.get(reader)
    return None if factory is None else factory()
