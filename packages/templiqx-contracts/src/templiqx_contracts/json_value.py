"""Reading JSON documents the way the reference does, keeping integer/float identity.

``1`` stays an ``int`` and ``1.0`` a ``float``; ``-0`` becomes the float ``-0.0``; integers outside
the 64-bit range become floats; NaN, infinities and out-of-range numbers (``1e400``) are refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

__all__ = ["JSONDecodeError", "decode_json"]

_decode = msgspec.json.decode
# A "-0" integer token, or a run of 19+ digits (possibly beyond the 64-bit range). Both are rare;
# either sends the document through the exact, slower reader. Matches inside strings are harmless.
_NEEDS_EXACT = re.compile(rb"-0(?![0-9.eE])|[0-9]{19,}")

_U64_MAX = (1 << 64) - 1
_I64_MIN = -(1 << 63)


class JSONDecodeError(ValueError):
    """The bytes are not a JSON document templiqx accepts."""


def _parse_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    value = int(text)
    if value > _U64_MAX or value < _I64_MIN:
        return float(value)
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JSONDecodeError(f"number {text} is out of range")
    return value


def _refuse_constant(name: str) -> Any:
    raise JSONDecodeError(f"{name} is not a JSON value")


def decode_json(data: bytes | str) -> Any:
    """Decode one JSON document with the reference's number rules.

    Every failure is :class:`JSONDecodeError`, including a document nested too deeply for the
    decoders' recursion (``RecursionError`` never escapes).
    """
    try:
        return _decode_document(data)
    except RecursionError:
        raise JSONDecodeError(
            "JSON is nested too deeply to decode (more than the interpreter's recursion limit)"
        ) from None


def _decode_document(data: bytes | str) -> Any:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if _NEEDS_EXACT.search(raw) is None:
        try:
            return _decode(raw)
        except msgspec.DecodeError as exc:
            raise JSONDecodeError(str(exc)) from exc
    try:
        text = raw.decode("utf-8")
        return json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_refuse_constant,
        )
    except UnicodeDecodeError as exc:
        raise JSONDecodeError(f"JSON is not valid UTF-8: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise JSONDecodeError(str(exc)) from exc
