"""Finding numbers in encoded JSON and msgpack exactly, without being fooled by other values.

msgspec writes JSON several times faster than anything else available, and its text is what
canonical JSON (and ``json.dumps``) would write except for a few numbers (floats with an
exponent, non-finite floats, integers beyond 64 bits). Finding those numbers cheaply means
searching bytes, and the bytes of *other* values can look like them: a string may hold
``4e6``; in msgpack an integer ``203`` is ``cc cb``, and ``cb`` is also the marker of every
float. Two exact tools settle such doubts:

* :func:`find_outside_strings` finds a pattern in JSON text *outside* string literals. The
  pattern is searched with :mod:`re` (a literal first byte makes that a fast scan); whether a
  hit lies inside a string is decided by the parity of the unescaped quotes before it, counted
  with ``bytes.count`` between consecutive hits (linear in the text in all).
* :func:`float_markers` tells which ``cb`` bytes of a msgpack document really start a float:
  it walks down to each one through msgspec's own tokenizer, decoding only the containers on
  the way (each once, into raw slices of its children). A false alarm costs a few container
  decodes, never a pass over the whole value in Python.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["find_outside_strings", "float_markers"]

_encode_msgpack = msgspec.msgpack.Encoder().encode
_decode_array = msgspec.msgpack.Decoder(list[msgspec.Raw]).decode
_decode_map = msgspec.msgpack.Decoder(dict[str, msgspec.Raw]).decode


def find_outside_strings(text: bytes, pattern: re.Pattern[bytes]) -> list[int]:
    """Offsets of the matches of ``pattern`` in JSON ``text`` that begin outside every string.

    ``text`` is one JSON document as an encoder writes it (strings delimited by ``"``, with
    ``\\"`` and ``\\\\`` escapes). A string's own quotes count as inside it. Matches are found
    as :meth:`re.Pattern.finditer` finds them (non-overlapping, left to right), so give the
    pattern a literal first byte to keep the scan fast.

    >>> find_outside_strings(b'{"4e6":1e16,"x":"1e5"}', re.compile(rb"e[0-9]"))
    [8]
    """
    hits = [match.start() for match in pattern.finditer(text)]
    if not hits:
        return hits
    escapes = b"\\" in text
    # With every escaped backslash blanked out (same length), each remaining backslash-quote
    # pair is an escaped quote; no other byte pair can be mistaken for one.
    plain = text.replace(b"\\\\", b"\0\0") if escapes else text
    found: list[int] = []
    quotes = 0
    previous = 0
    for at in hits:
        # Quotes at offsets [previous, at): all of them, less the escaped ones (a backslash at
        # [previous - 1, at - 2] followed by its quote).
        quotes += plain.count(b'"', previous, at)
        if escapes:
            quotes -= plain.count(b'\\"', max(previous - 1, 0), at)
        previous = at
        if not quotes & 1:
            found.append(at)
    return found


def float_markers(packed: bytes, offsets: list[int]) -> list[int]:
    """The offsets, of those given, at which a float value starts in the msgpack ``packed``.

    ``offsets`` (ascending) are positions of ``cb`` bytes, the float64 marker, found by a byte
    search; the ones inside another value's bytes (an integer's or a string's payload, a
    float's own eight bytes, a length field, a map key) are dropped. ``packed`` must be one
    msgpack document whose maps have string keys, as msgspec encodes JSON data and Structs; a
    map with other keys raises ``msgspec.ValidationError``.

    >>> import msgspec
    >>> packed = msgspec.msgpack.encode([203, 1.5])  # 92 cc cb cb 3f f8 00 ...
    >>> float_markers(packed, [i for i, byte in enumerate(packed) if byte == 0xCB])
    [3]
    """
    found: list[int] = []
    if not offsets:
        return found
    view = memoryview(packed)
    pending: list[tuple[int, int, list[int]]] = [(0, len(packed), offsets)]
    while pending:
        start, end, inside = pending.pop()
        if inside[0] == start:
            found.append(start)  # this value is the float; nothing else lies inside it
            continue
        spans = _child_spans(view, start, end)
        if spans is None:
            continue  # a scalar: the offsets are inside its payload
        k = 0
        for child_start, child_end in spans:
            while k < len(inside) and inside[k] < child_start:
                k += 1  # inside a header or a map key
            first = k
            while k < len(inside) and inside[k] < child_end:
                k += 1
            if k > first:
                pending.append((child_start, child_end, inside[first:k]))
            if k == len(inside):
                break
    found.sort()
    return found


def _header_size(head: int) -> tuple[bool, int] | None:
    """``(is_map, header bytes)`` of a msgpack container's first byte, ``None`` for a scalar."""
    if 0x80 <= head <= 0x8F:
        return True, 1
    if 0x90 <= head <= 0x9F:
        return False, 1
    if head == 0xDE:
        return True, 3
    if head == 0xDF:
        return True, 5
    if head == 0xDC:
        return False, 3
    if head == 0xDD:
        return False, 5
    return None


def _child_spans(view: memoryview, start: int, end: int) -> list[tuple[int, int]] | None:
    """The byte spans of the container's values (map keys skipped); ``None`` for a scalar."""
    shape = _header_size(view[start])
    if shape is None:
        return None
    is_map, at = shape
    at += start
    spans: list[tuple[int, int]] = []
    if is_map:
        for key, raw in _decode_map(view[start:end]).items():
            at += len(_encode_msgpack(key))
            spans.append((at, at + len(raw)))
            at += len(raw)
    else:
        for raw in _decode_array(view[start:end]):
            spans.append((at, at + len(raw)))
            at += len(raw)
    return spans
