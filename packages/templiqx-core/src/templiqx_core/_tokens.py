"""How far the token at a line and column reaches, for spans that underline it."""

from __future__ import annotations

from typing import Final

__all__ = ["token_end"]

_FLOW_STOPS: Final = ",]}"


def token_end(line: str, column: int) -> int:
    """The column just after the token starting at 1-based ``column`` of ``line``.

    A quoted scalar ends at its closing quote, a flow collection at its closing bracket (or the
    end of the line), a block scalar's indicator is one character, and anything else (a key, a
    plain scalar) ends before ``: ``, `` #``, a flow separator or the end of the line. A column
    beyond the line gives ``column`` itself.
    """
    index = column - 1
    if index < 0 or index >= len(line):
        return column
    first = line[index]
    if first in "\"'":
        cursor = index + 1
        while cursor < len(line):
            char = line[cursor]
            if first == '"' and char == "\\":
                cursor += 2
                continue
            if char == first:
                if first == "'" and line[cursor + 1 : cursor + 2] == "'":
                    cursor += 2
                    continue
                return cursor + 2
            cursor += 1
        return len(line.rstrip()) + 1
    if first in "[{":
        return _flow_end(line, index) + 1
    if first in "|>":
        return column + 1
    cursor = index
    while cursor < len(line):
        char = line[cursor]
        if char == ":" and (cursor + 1 == len(line) or line[cursor + 1] in " \t"):
            break
        if char == "#" and cursor > index and line[cursor - 1] in " \t":
            break
        if char in _FLOW_STOPS and cursor > index:
            break
        cursor += 1
    end = len(line[:cursor].rstrip())
    return max(end, index + 1) + 1


def _flow_end(line: str, index: int) -> int:
    """The 1-based column of the bracket closing the flow collection opened at ``index``, or
    of the line's last character when it closes on a later line."""
    depth = 0
    quote = ""
    cursor = index
    while cursor < len(line):
        char = line[cursor]
        if quote:
            if char == "\\" and quote == '"':
                cursor += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return cursor + 1
        cursor += 1
    return len(line.rstrip())
