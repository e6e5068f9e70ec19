"""Building blocks of human output: counts, indented text, JSON values, tables.

Each returns lines (no trailing newlines), so renderers compose them freely.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from templiqx_cli.human.style import Style

__all__ = ["INDENT", "count", "indented", "json_lines", "listing", "table", "text_lines"]

INDENT = "  "


def count(number: int, singular: str, plural: str | None = None) -> str:
    """``1 error``, ``2 errors``, ``0 packages``."""
    word = singular if number == 1 else (plural or singular + "s")
    return f"{number} {word}"


def indented(lines: Iterable[str], depth: int = 1) -> list[str]:
    """``lines`` shifted right by ``depth`` indents (blank lines stay blank)."""
    pad = INDENT * depth
    return [pad + line if line else line for line in lines]


def text_lines(text: str) -> list[str]:
    """A text value as lines; an empty text shows as ``(empty)``."""
    return text.split("\n") if text else ["(empty)"]


def json_lines(value: Any) -> list[str]:
    """A JSON value for reading: strings as they are, anything else as indented JSON."""
    if isinstance(value, str):
        return text_lines(value)
    return json.dumps(value, indent=2, ensure_ascii=False).split("\n")


def listing(items: Sequence[str], style: Style, *, empty: str = "none") -> str:
    """``a, b, c`` (names highlighted), or ``empty`` for no items."""
    if not items:
        return style.dim(empty)
    return ", ".join(style.name(item) for item in items)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], style: Style) -> list[str]:
    """An aligned table with a header row; columns are separated by two spaces.

    Cells are plain text (widths are measured before any colour is applied); the first column
    is highlighted as a name. A table without rows is no lines at all (the summary says 0).
    """
    widths = [len(header) for header in headers]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    last = len(headers) - 1

    def line(cells: Sequence[str], paint: Callable[[int, str], str]) -> str:
        parts = []
        for index, cell in enumerate(cells):
            padding = "" if index == last else " " * (widths[index] - len(cell))
            parts.append(paint(index, cell) + padding)
        return "  ".join(parts).rstrip()

    if not rows:
        return []
    lines = [line(headers, lambda _index, cell: style.heading(cell))]
    for row in rows:
        lines.append(line(row, lambda index, cell: style.name(cell) if index == 0 else cell))
    return lines
