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
for floats of magnitude 1e16 and above (msgspec writes ``1e16``), non-finite floats (msgspec
writes ``null``) and integers outside the 64-bit range (msgspec writes them; canonical JSON
refuses them). Those cases are found from a msgpack encoding of the same value, which costs
less than any scan of the JSON text:

* msgpack refuses integers outside 64 bits;
* without a ``cb`` byte (the float64 marker; a ``memchr``-speed search) there is no float;
* every float msgspec prints differently is a ``cb`` followed by a byte whose low seven bits
  are at least ``0x43`` (a double of magnitude 2**49 or more, or non-finite), so when no such
  pair occurs — one scan at C speed — the JSON is already canonical.

Ordinary documents, whatever their mix of strings, integers, floats and nesting, end there. A
pair that does occur may be a real large or non-finite float or the bytes of another value
(``203`` is ``cc cb``); it is settled exactly, never by sending the document to the slow
writer: a non-finite float counts only if :func:`~templiqx_contracts.json_numbers.float_markers`
confirms its marker (it is refused), and exponents are taken from the JSON text itself — an
``e`` followed by a digit outside string literals — and given their ``+`` in place.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import msgspec

from templiqx_contracts.json_numbers import find_outside_strings, float_markers

__all__ = [
    "CanonicalJSONError",
    "canonical_json",
    "fingerprint",
    "fingerprint_bytes",
    "format_float",
]

_encode = msgspec.json.Encoder(order="sorted").encode
_encode_msgpack = msgspec.msgpack.Encoder().encode

_FLOAT64 = b"\xcb"  # msgpack's float64 marker; msgspec writes every float as a float64
# A marker and the first byte of a double of magnitude >= 2**49 or non-finite (exponent field
# >= 0x430): every float msgspec prints unlike canonical JSON starts this way.
_LARGE_OR_NON_FINITE = re.compile(rb"\xcb[\x43-\x7f\xc3-\xff]")
# A marker and a double whose exponent bits are all set: NaN or an infinity.
_NON_FINITE = re.compile(rb"\xcb[\x7f\xff][\xf0-\xff]")
# Outside strings, an "e" followed by a digit is the exponent of a float msgspec wrote without
# its sign (1e16 and above; small floats get "e-", which canonical JSON writes too).
_UNSIGNED_EXPONENT = re.compile(rb"e[0-9]")

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
        packed = _encode_msgpack(value)
    except (TypeError, OverflowError, ValueError):
        return _exact(value)  # raises CanonicalJSONError, naming what cannot be written
    if _FLOAT64 not in packed or _LARGE_OR_NON_FINITE.search(packed) is None:
        return out
    return _fix_rare_numbers(value, out, packed)


def _fix_rare_numbers(value: Any, out: bytes, packed: bytes) -> bytes:
    """msgspec's ``out`` made canonical when a float may be large or non-finite."""
    if b"null" in out:  # msgspec writes NaN and the infinities as null
        suspects = [match.start() for match in _NON_FINITE.finditer(packed)]
        if float_markers(packed, suspects):
            return _exact(value)  # raises CanonicalJSONError for the non-finite float
    exponents = find_outside_strings(out, _UNSIGNED_EXPONENT)
    if not exponents:
        return out
    parts: list[bytes] = []
    start = 0
    for at in exponents:
        parts.append(out[start : at + 1])
        parts.append(b"+")
        start = at + 1
    parts.append(out[start:])
    return b"".join(parts)


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
