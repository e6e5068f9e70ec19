"""Typing of YAML scalars under the YAML 1.2 core schema, as the reference reads them.

A plain (unquoted, untagged) scalar resolves, in this order, to null (empty, ``~``, ``null``,
``Null``, ``NULL``), a boolean (``true``/``True``/``TRUE``, ``false``/``False``/``FALSE``), an
integer (decimal, ``0x``/``0o``/``0b`` with lowercase prefixes, one optional sign, no
underscores, no leading zeros), a float (Rust ``f64::from_str`` syntax, finite only, plus
``.inf``/``.nan`` which become null) or else a string. Quoted and block scalars are strings.
The standard tags ``!!str``, ``!!int``, ``!!float``, ``!!bool`` and ``!!null`` force a type.

Integers keep Python ``int`` and floats Python ``float``: ``1`` and ``1.0`` stay different.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from templiqx_contracts import quote_input
from templiqx_core._yaml_tree import TAG, Scalar, YamlError

__all__ = ["describe", "resolve_scalar", "short_tag"]

_TAG_PREFIX: Final = "tag:yaml.org,2002:"
TAG_STR: Final = _TAG_PREFIX + "str"
TAG_INT: Final = _TAG_PREFIX + "int"
TAG_FLOAT: Final = _TAG_PREFIX + "float"
TAG_BOOL: Final = _TAG_PREFIX + "bool"
TAG_NULL: Final = _TAG_PREFIX + "null"
TAG_MAP: Final = _TAG_PREFIX + "map"
TAG_SEQ: Final = _TAG_PREFIX + "seq"
CORE_TAGS: Final = frozenset({TAG_STR, TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_NULL, TAG_MAP, TAG_SEQ})
"""The tags of YAML 1.2's core schema: the only ones the reader accepts."""

_NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS: Final = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
_POS_INF: Final = frozenset({".inf", ".Inf", ".INF"})
_NEG_INF: Final = frozenset({"-.inf", "-.Inf", "-.INF"})
_NAN: Final = frozenset({".nan", ".NaN", ".NAN"})

_INTEGER = re.compile(r"([+-]?)(?:0x([0-9a-fA-F]+)|0o([0-7]+)|0b([01]+)|([0-9]+))")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

_U64_MAX: Final = (1 << 64) - 1
_I64_MIN: Final = -(1 << 63)
_U128_MAX: Final = (1 << 128) - 1
_I128_MIN: Final = -(1 << 127)

_NO_MATCH: Final = object()
_DIGITS_NOT_NUMBER: Final = object()  # `007`, `-01`: leading zeros make digits a string


def _integer(text: str, scalar: Scalar) -> Any:
    """The integer ``text`` denotes, ``_NO_MATCH`` if it is no integer token, or a float.

    ``_DIGITS_NOT_NUMBER`` marks digits with a leading zero (``007``), which are strings.

    Integers beyond the 128-bit range fall through to float parsing (decimal) or to a string
    (prefixed); integers inside it but outside 64 bits are refused, as the reference does.
    """
    match = _INTEGER.fullmatch(text)
    if match is None:
        return _NO_MATCH
    sign, hex_digits, oct_digits, bin_digits, dec_digits = match.groups()
    if dec_digits is not None:
        if len(dec_digits) > 1 and dec_digits[0] == "0":
            return _DIGITS_NOT_NUMBER
        # u128::MAX has 39 digits; longer tokens are beyond it (and int() limits digit counts)
        magnitude = int(dec_digits) if len(dec_digits) <= 40 else _U128_MAX + 1
    elif hex_digits is not None:
        magnitude = int(hex_digits, 16)
    elif oct_digits is not None:
        magnitude = int(oct_digits, 8)
    else:
        magnitude = int(bin_digits, 2)
    value = -magnitude if sign == "-" else magnitude
    if (sign != "-" and value <= _U64_MAX) or (sign == "-" and value >= _I64_MIN):
        return value
    if (sign != "-" and value <= _U128_MAX) or (sign == "-" and value >= _I128_MIN):
        raise YamlError(
            f"number `{text}` is out of range: integers must fit in 64 bits "
            f"(from {_I64_MIN} to {_U64_MAX}) at line {scalar.line} column {scalar.column}; "
            "quote it to keep it as a string",
            scalar.line,
            scalar.column,
        )
    return _NO_MATCH if dec_digits is None else _float(text)


def _float(text: str) -> Any:
    """The float ``text`` denotes (``None`` for infinities and NaN), or ``_NO_MATCH``."""
    unsigned = text
    if text[:1] == "+":
        unsigned = text[1:]
        if unsigned[:1] in ("+", "-") and unsigned:
            return _NO_MATCH
    if unsigned in _POS_INF or text in _NEG_INF or text in _NAN:
        return None  # non-finite floats are not JSON numbers: they become null
    if _FLOAT.fullmatch(unsigned) is None:
        return _NO_MATCH
    value = float(unsigned)
    return value if math.isfinite(value) else _NO_MATCH


def _plain(scalar: Scalar) -> Any:
    text = scalar.value
    if text in _NULLS:
        return None
    boolean = _BOOLS.get(text)
    if boolean is not None:
        return boolean
    first = text[0]
    if not (first.isdigit() or first in "+-."):
        return text  # cannot be a number: the common case for words
    number = _integer(text, scalar)
    if number is _DIGITS_NOT_NUMBER:
        return text
    if number is not _NO_MATCH:
        return number
    number = _float(text)
    return text if number is _NO_MATCH else number


def _tag_error(scalar: Scalar, expected: str) -> YamlError:
    return YamlError(
        f"tagged scalar `{scalar.value}` is not {expected} "
        f"at line {scalar.line} column {scalar.column}; fix the value or remove the tag",
        scalar.line,
        scalar.column,
    )


def _tagged(scalar: Scalar, tag: str) -> Any:
    text = scalar.value
    if tag == TAG_STR:
        return text
    if tag == TAG_INT:
        number = _integer(text, scalar)
        if number is _NO_MATCH or number is _DIGITS_NOT_NUMBER or isinstance(number, float):
            raise _tag_error(scalar, "an integer (!!int)")
        return number
    if tag == TAG_FLOAT:
        number = _float(text)
        if number is _NO_MATCH:
            raise _tag_error(scalar, "a float (!!float)")
        return number
    if tag == TAG_BOOL:
        boolean = _BOOLS.get(text)
        if boolean is None:
            raise _tag_error(scalar, "a boolean (!!bool)")
        return boolean
    if tag == TAG_NULL:
        if text not in _NULLS:
            raise _tag_error(scalar, "null (!!null)")
        return None
    raise YamlError(
        f"unsupported tag `{short_tag(tag)}` on scalar `{text}` at line {scalar.line} "
        f"column {scalar.column}; only !!str, !!int, !!float, !!bool and !!null are accepted",
        scalar.line,
        scalar.column,
        kind=TAG,
    )


def short_tag(tag: str) -> str:
    """A tag as written in YAML (``!!str`` rather than ``tag:yaml.org,2002:str``)."""
    return "!!" + tag[len(_TAG_PREFIX) :] if tag.startswith(_TAG_PREFIX) else tag


def resolve_scalar(scalar: Scalar) -> Any:
    """The JSON value of a scalar: ``None``, ``bool``, ``int``, ``float`` or ``str``."""
    tag = scalar.tag
    if tag is not None:
        return _tagged(scalar, tag)
    if scalar.style:
        return scalar.value
    return _plain(scalar)


def describe(value: Any) -> str:
    """How a resolved scalar is named in messages (``an integer `123```)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return f"a boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"an integer `{value}`"
    if isinstance(value, float):
        return f"a float `{value!r}`"
    return f"a string {quote_input(value)}"
