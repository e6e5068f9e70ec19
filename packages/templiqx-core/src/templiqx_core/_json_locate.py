"""Line and column of a problem in a render request written as JSON.

``json.loads`` reports positions only for syntax errors, but a well-formed request can still be
refused: an unknown top-level field, ``inputs``/``context`` that are not objects, a number out
of the float range, nesting beyond ``MAX_NESTING_DEPTH``. :func:`locate` finds where such a
problem sits by one scan over the text that skips string literals, so every refusal of
:func:`templiqx_core.parse.parse_render_request` carries a location like the YAML reader's.
"""

from __future__ import annotations

import json
import re
from typing import Final

__all__ = ["locate_depth", "locate_key", "locate_number", "locate_value_of"]

_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING_END: Final = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)
_MEMBER_COLON: Final = re.compile(r"[ \t\r\n]*:")


def _position(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _tokens(text: str) -> list[tuple[int, str, int]]:
    """``(index, token, depth)`` for every bracket, string and number outside strings.

    ``token`` is the bracket character, the string literal (with quotes) or the number text;
    ``depth`` is the container depth the token sits at (the top-level object's members are 1).
    """
    tokens: list[tuple[int, str, int]] = []
    depth = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            match = _STRING_END.match(text, index + 1)
            end = match.end() if match else len(text)
            tokens.append((index, text[index:end], depth))
            index = end
            continue
        if char in "{[":
            depth += 1
            tokens.append((index, char, depth))
        elif char in "}]":
            tokens.append((index, char, depth))
            depth -= 1
        elif char == "-" or char.isdigit():
            match = _NUMBER.match(text, index)
            if match:
                tokens.append((index, match.group(), depth))
                index = match.end()
                continue
        index += 1
    return tokens


def _key_index(text: str, tokens: list[tuple[int, str, int]], key: str) -> int | None:
    """The position in ``tokens`` of the top-level member name ``key``.

    The text is valid JSON, so a member name of the top-level object is exactly a string at
    depth 1 that is followed by ``:``.
    """
    for position, (index, token, depth) in enumerate(tokens):
        if depth != 1 or not token.startswith('"'):
            continue
        if not _MEMBER_COLON.match(text, index + len(token)):
            continue
        if json.loads(token) == key:
            return position
    return None


def locate_key(text: str, key: str) -> tuple[int, int] | None:
    """Where the top-level member ``key`` is named."""
    tokens = _tokens(text)
    found = _key_index(text, tokens, key)
    return None if found is None else _position(text, tokens[found][0])


def locate_value_of(text: str, key: str) -> tuple[int, int] | None:
    """Where the value of the top-level member ``key`` starts."""
    tokens = _tokens(text)
    found = _key_index(text, tokens, key)
    if found is None:
        return None
    name_index, name, _ = tokens[found]
    index = name_index + len(name)
    while index < len(text) and text[index] in " \t\r\n:":
        index += 1
    return _position(text, index)


def locate_number(text: str, number: str) -> tuple[int, int] | None:
    """Where the number written as ``number`` first appears (outside strings)."""
    for index, token, _ in _tokens(text):
        if token == number:
            return _position(text, index)
    return None


def locate_depth(text: str, limit: int) -> tuple[int, int] | None:
    """Where the first container nested more than ``limit`` levels deep opens."""
    for index, token, depth in _tokens(text):
        if token in "{[" and depth > limit:
            return _position(text, index)
    return None
