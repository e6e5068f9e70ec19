"""Reading JSON documents the way the reference does, keeping integer/float identity.

``1`` stays an ``int`` and ``1.0`` a ``float``; ``-0`` becomes the float ``-0.0``; integers outside
the 64-bit range become floats; NaN, infinities and numbers beyond float range (``1e400``, or an
integer above 1.8e308) are refused, and so are ``\\u`` escapes of unpaired UTF-16 surrogates
(msgspec's rule: such a string has no UTF-8 form).

A document can be refused from its size in values before it is decoded
(:func:`json_node_estimate`, ``decode_json(..., max_nodes=N)``): decoding builds a Python object
per value, so eight megabytes of ``[{}, {}, ...]`` cost hundreds of MiB and seconds where eight
megabytes of text cost eight.

Most documents are read by msgspec. The rare ones with a ``-0`` or a run of 19+ digits are read
by :func:`json.loads` with the number rules above, then held to msgspec's rules where the two
readers differ: ``json`` accepts unpaired surrogate escapes, and its integer conversion can
raise ``OverflowError`` (beyond float range) or ``ValueError`` (beyond the interpreter's digit
limit). Either way the caller sees one :class:`JSONDecodeError`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import msgspec

__all__ = ["JSONDecodeError", "decode_json", "json_node_estimate"]

_decode = msgspec.json.decode
# A "-0" integer token, or a run of 19+ digits (possibly beyond the 64-bit range). Both are rare;
# either sends the document through the exact, slower reader. Matches inside strings are harmless.
_NEEDS_EXACT = re.compile(rb"-0(?![0-9.eE])|[0-9]{19,}")
# A \u escape of a UTF-16 surrogate (D800-DFFF); only then can json.loads produce a lone one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_encode = msgspec.json.encode
# A JSON string (quotes included), for counting the punctuation outside strings.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')

_U64_MAX = (1 << 64) - 1
_I64_MIN = -(1 << 63)


class JSONDecodeError(ValueError):
    """The bytes are not a JSON document templiqx accepts."""


def _out_of_range(text: str) -> JSONDecodeError:
    shown = text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"
    return JSONDecodeError(f"number {shown} is out of range")


def _parse_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    try:
        value = int(text)
        if value > _U64_MAX or value < _I64_MIN:
            return float(value)
    except (OverflowError, ValueError):  # beyond float range, or beyond int()'s digit limit
        raise _out_of_range(text) from None
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _out_of_range(text)
    return value


def _refuse_constant(name: str) -> Any:
    raise JSONDecodeError(f"{name} is not a JSON value")


def _punctuation(raw: bytes | str) -> int:
    if isinstance(raw, str):
        return raw.count(",") + raw.count(":") + raw.count("[")
    return raw.count(b",") + raw.count(b":") + raw.count(b"[")


_CHUNK: Final = 1 << 18
# The rest of a string whose opening quote was in an earlier chunk: up to its closing quote.
_STRING_TAIL = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _outside_strings(raw: bytes) -> int:
    """The commas, colons and opening brackets outside the strings of ``raw``.

    Read in 256 KiB chunks, each a few milliseconds of C, so a thread doing it never holds the
    interpreter for long (another thread, an event loop, runs in between).
    """
    count = 0
    in_string = False
    escaped = False  # the previous chunk ended on a backslash inside a string
    position = 0
    while position < len(raw):
        chunk = raw[position : position + _CHUNK]
        position += len(chunk)
        start = 0
        if in_string:
            if escaped:
                start, escaped = 1, False
            tail = _STRING_TAIL.match(chunk, start)
            if tail is None:  # the string goes on past this chunk
                backslashes = len(chunk) - len(chunk.rstrip(b"\\"))
                escaped = (backslashes % 2 == 1) != (start == 1 and backslashes == len(chunk))
                continue
            start = tail.end()
            in_string = False
        rest = _STRING.sub(b"", chunk[start:])
        quote = rest.find(b'"')
        if quote >= 0:  # a string opens here and closes in a later chunk
            count += _punctuation(rest[:quote])
            in_string = True
            opened = rest[quote + 1 :]
            backslashes = len(opened) - len(opened.rstrip(b"\\"))
            escaped = backslashes % 2 == 1
        else:
            count += _punctuation(rest)
    return count


def json_node_estimate(data: bytes | str, limit: int) -> int:
    """How many values and object keys the JSON text ``data`` holds, without decoding it.

    The estimate is one plus the commas, colons and opening brackets outside strings: the
    values and keys of the document, give or take one per array and object. Counting stops
    being exact once it passes ``limit`` (any count above ``limit`` means "too many"). It reads
    at C speed: the punctuation of the whole text first, and only when that passes ``limit``
    the text again outside its strings (which may hold punctuation of their own), in chunks.
    """
    rough = 1 + _punctuation(data)
    if rough <= limit:
        return rough
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    return 1 + _outside_strings(raw)


def decode_json(
    data: bytes | str, *, max_nodes: int | None = None, limit_name: str = "MAX_ARGUMENT_NODES"
) -> Any:
    """Decode one JSON document with the reference's number rules.

    Every failure is :class:`JSONDecodeError`, including a document nested too deeply for the
    decoders' recursion (``RecursionError`` never escapes). With ``max_nodes``, a document
    holding more values and keys than that (:func:`json_node_estimate`) is refused before it
    is decoded, with a message naming the count and the limit (``limit_name``).
    """
    if max_nodes is not None:
        count = json_node_estimate(data, max_nodes)
        if count > max_nodes:
            raise JSONDecodeError(
                f"the document holds about {count} values and keys, more than the {max_nodes} "
                f"a document may hold ({limit_name}); send fewer, larger values"
            )
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
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_refuse_constant,
        )
    except UnicodeDecodeError as exc:
        raise JSONDecodeError(f"JSON is not valid UTF-8: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise JSONDecodeError(str(exc)) from exc
    if _SURROGATE_ESCAPE.search(raw) is not None:
        _refuse_lone_surrogates(value)
    return value


def _refuse_lone_surrogates(value: Any) -> None:
    """Raise when a string of ``value`` holds an unpaired surrogate (what msgspec refuses).

    A paired escape (``\\ud83d\\ude00``) was already joined into one character by ``json``;
    only an unpaired one is left as a surrogate, which has no UTF-8 form, so encoding the value
    finds it at C speed.
    """
    try:
        _encode(value)
    except UnicodeEncodeError:
        raise JSONDecodeError(
            "JSON is malformed: a \\u escape of an unpaired UTF-16 surrogate (U+D800-U+DFFF) "
            "has no Unicode character"
        ) from None
