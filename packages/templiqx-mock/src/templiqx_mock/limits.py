"""Reliability limits of scenario files (manifests, inventories, expected outputs).

A scenario file is configuration, but it is read by the same process that serves requests, so a
broken or hostile one must cost bounded time and memory. Exceeding a limit is a
:class:`~templiqx_mock.errors.ScenarioError` (``TQX_DATA_INVALID``) whose message names the
constant. The values match the core's document limits (``templiqx_core.limits``), which this
adapter may not import.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "ALIAS_EXPANSION_FACTOR",
    "MAX_EXPANDED_BYTES",
    "MAX_NESTING_DEPTH",
    "MAX_SCENARIO_BYTES",
    "TOO_DEEP",
    "document_size",
    "nesting_problem",
    "size_problem",
]

MAX_SCENARIO_BYTES: Final = 8 * 1024 * 1024
"""Largest scenario file, in bytes (8 MiB); a larger one is refused before it is read."""

MAX_NESTING_DEPTH: Final = 128
"""Deepest nesting of sequences and mappings, in JSON and in YAML (after alias expansion)."""

ALIAS_EXPANSION_FACTOR: Final = 100
"""YAML alias budget: at most this many expanded nodes per node of the document (plus 1,000)."""

MAX_EXPANDED_BYTES: Final = 2 * MAX_SCENARIO_BYTES
"""YAML alias budget on text: at most this many UTF-8 bytes of scalar text (keys and values) once
every alias is expanded (16 MiB). A 1 MB string aliased a thousand times stays under the node
budget but is a gigabyte once a receipt or fingerprint encodes it; it is refused while reading."""

TOO_DEEP: Final = (
    f"the document nests sequences and mappings more than {MAX_NESTING_DEPTH} levels deep "
    "(MAX_NESTING_DEPTH)"
)
"""The message of a document that nests too deeply."""


def size_problem(size: int) -> str | None:
    """Why a document of ``size`` bytes is too large to read, or ``None``."""
    if size <= MAX_SCENARIO_BYTES:
        return None
    return (
        f"the document is {size} bytes, more than the {MAX_SCENARIO_BYTES}-byte limit "
        "(MAX_SCENARIO_BYTES)"
    )


def document_size(data: bytes | str) -> int:
    """The size of a document in UTF-8 bytes (ASCII text is measured without encoding it)."""
    if isinstance(data, bytes) or data.isascii():
        return len(data)
    return len(data.encode("utf-8", "replace"))


def nesting_problem(value: Any) -> str | None:
    """:data:`TOO_DEEP` when decoded JSON data nests deeper than the limit, else ``None``."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_NESTING_DEPTH:
            return TOO_DEEP
        stack.extend((child, depth + 1) for child in children)
    return None
