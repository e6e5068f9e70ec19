"""Canonical JSON and SHA-256 fingerprints, byte-exact with the reference implementation.

Canonical JSON is the only serialization that is ever hashed:

* object keys (dict keys and Struct field names alike) sorted by code point at every depth;
* no whitespace, no trailing newline;
* strings escape only ``"``, ``\\`` and characters below U+0020 (``\\b \\f \\n \\r \\t`` or
  ``\\u00xx`` in lowercase hex); everything else is raw UTF-8;
* integers and floats keep their identity (``0`` and ``0.0`` differ);
* floats use the shortest round-trip digits, printed in fixed notation for decimal exponents
  -5..15 and in scientific notation otherwise, always with a signed exponent (``1e+16``, ``1e-7``);
* NaN and infinities are refused.

The fast path is msgspec's encoder with sorted keys, which already produces these bytes except
for positive exponents (msgspec writes ``1e16``), non-finite floats (msgspec writes ``null``) and
integers outside the 64-bit range (msgspec writes them; canonical JSON refuses them). All three
are detected from a msgpack encoding of the same value rather than by scanning the JSON text:
msgpack refuses out-of-range integers, and every float is written there as a ``0xcb`` marker
followed by its 8 bytes, so finding the markers (a C-speed byte search) and reading the few
doubles behind them tells whether any float is non-finite or large enough for an exponent.
A value without floats costs one search that finds nothing. Every flagged case (including a
``0xcb`` byte that is really part of a string or an integer) is handed to an exact, slower
writer.
"""

from __future__ import annotations

import hashlib
import math
import struct
from typing import Any

import msgspec

__all__ = [
    "CanonicalJSONError",
    "canonical_json",
    "fingerprint",
    "fingerprint_bytes",
    "format_float",
]

_encode = msgspec.json.Encoder(order="sorted").encode
_encode_msgpack = msgspec.msgpack.Encoder().encode

# The msgpack marker of a float64; msgspec writes every float as float64.
_FLOAT64 = b"\xcb"
_read_double = struct.Struct(">d").unpack_from
# msgspec prints floats in fixed notation below this magnitude, exactly as canonical JSON does
# (both switch to an exponent at 1e16); from here on (and for NaN) the exact writer decides.
_FIXED_NOTATION_BELOW = 1e15

_U64_MAX = (1 << 64) - 1
_I64_MIN = -(1 << 63)


class CanonicalJSONError(ValueError):
    """A value cannot be written as canonical JSON (NaN, infinity, unsupported type, ...)."""


def format_float(value: float) -> str:
    """Print a finite float exactly as the reference's JSON writer does.

    >>> [format_float(x) for x in (0.0, 1e16, 0.00001, 1e-6, 100.0)]
    ['0.0', '1e+16', '0.00001', '1e-6', '100.0']
    """
    if not math.isfinite(value):
        raise CanonicalJSONError(
            f"{value!r} cannot be fingerprinted: NaN and infinities are not JSON numbers"
        )
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    point = len(int_part) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = point - 1  # decimal exponent of the first significant digit
    n = len(digits)
    if -5 <= k <= 15:
        if n - 1 <= k:
            body = digits + "0" * (k + 1 - n) + ".0"
        elif k >= 0:
            body = digits[: k + 1] + "." + digits[k + 1 :]
        else:
            body = "0." + "0" * (-k - 1) + digits
    else:
        body = digits[0]
        if n > 1:
            body += "." + digits[1:]
        body += ("e-" if k < 0 else "e+") + str(abs(k))
    return sign + body


def canonical_json(value: Any) -> bytes:
    """Return the canonical JSON bytes of ``value`` (a msgspec Struct or plain JSON data)."""
    try:
        out = _encode(value)
    except (TypeError, OverflowError, ValueError):
        return _exact(value)
    try:
        packed = _encode_msgpack(value)
    except (TypeError, OverflowError, ValueError):
        return _exact(value)  # an integer outside the 64-bit range, refused there
    at = packed.find(_FLOAT64)
    last = len(packed) - 9
    while 0 <= at <= last:
        if not abs(_read_double(packed, at + 1)[0]) < _FIXED_NOTATION_BELOW:
            return _exact(value)  # large, infinite or NaN (or a false alarm)
        at = packed.find(_FLOAT64, at + 1)
    return out


def fingerprint(value: Any) -> str:
    """Lowercase hex SHA-256 of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def fingerprint_bytes(data: bytes) -> str:
    """Lowercase hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


def _exact(value: Any) -> bytes:
    try:
        plain = msgspec.to_builtins(value, order="sorted")
    except (TypeError, OverflowError, ValueError) as exc:
        raise CanonicalJSONError(f"value cannot be written as canonical JSON: {exc}") from exc
    parts: list[str] = []
    _write(plain, parts)
    return "".join(parts).encode("utf-8")


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode(value).decode("utf-8"))
    elif isinstance(value, int):
        if value > _U64_MAX or value < _I64_MIN:
            raise CanonicalJSONError(
                f"integer {value} is outside the 64-bit range canonical JSON supports"
            )
        out.append(str(value))
    elif isinstance(value, float):
        out.append(format_float(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key in sorted(value):
            if not isinstance(key, str):
                raise CanonicalJSONError(f"object keys must be strings, found {key!r}")
            if not first:
                out.append(",")
            first = False
            out.append(_encode(key).decode("utf-8"))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise CanonicalJSONError(
            f"{type(value).__name__} values cannot be written as canonical JSON"
        )
