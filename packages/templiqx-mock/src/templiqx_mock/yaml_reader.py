"""Read a YAML document into plain JSON data with YAML 1.2 core-schema typing.

PyYAML composes the node graph (libyaml when available); the scalars are typed here, not by
PyYAML's YAML 1.1 resolvers, following the reference's rules for free JSON values:

* plain ``~``, ``null``/``Null``/``NULL`` and the empty scalar are ``null``;
* plain ``true``/``True``/``TRUE`` and ``false``/``False``/``FALSE`` are booleans (``yes``,
  ``on``, ``no`` stay strings);
* plain integers: decimal, ``0x``/``0o``/``0b`` (lowercase prefixes) with one optional sign;
  a decimal with a leading zero (``007``) is a string; integers outside the 64-bit range are
  refused up to the 128-bit range and become floats beyond it;
* plain floats as Rust reads them (``1.5``, ``.5``, ``5.``, ``1e5``); ``.inf`` and ``.nan`` are
  refused (NaN and infinities never reach a fingerprint); ``inf``/``nan`` words are strings;
* everything else, and every quoted or block scalar, is a string (dates stay strings);
* ``!!str``, ``!!int``, ``!!float``, ``!!bool`` and ``!!null`` force a type; other tags are refused;
* mapping keys are the key's raw scalar text; a duplicate key is an error; merge keys (``<<``)
  are ordinary keys; anchors and aliases expand by value within a repetition budget (nodes) and
  a text budget (bytes of scalar text, counted through every alias).

Errors carry a 1-based line and column. The size, depth and alias limits are the constants of
:mod:`templiqx_mock.limits`, named in the messages that enforce them.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from templiqx_mock.limits import (
    ALIAS_EXPANSION_FACTOR,
    MAX_EXPANDED_BYTES,
    MAX_NESTING_DEPTH,
    TOO_DEEP,
    document_size,
    size_problem,
)

__all__ = ["YAMLReadError", "read_yaml"]

_PLAIN = "tag:templiqx,2026:plain"
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

_U64_MAX = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_U128_MAX = (1 << 128) - 1
_I128_MIN = -(1 << 127)

_INT_RE = re.compile(r"([-+]?)(0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+|[0-9]+)")
_FLOAT_RE = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_NON_FINITE = frozenset({".inf", ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN"})
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Composes nodes only; every untagged plain scalar gets the private ``_PLAIN`` tag."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


_Loader.add_implicit_resolver(_PLAIN, re.compile(r"(?s).*"), None)


class YAMLReadError(ValueError):
    """The text is not a YAML document this reader accepts; the message names the location."""


def _where(node: yaml.Node) -> str:
    mark = node.start_mark
    return f"at line {mark.line + 1} column {mark.column + 1}"


class _Reader:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.text = MAX_EXPANDED_BYTES  # bytes of scalar text still allowed

    def weigh(self, node: yaml.ScalarNode) -> str:
        """The scalar's text, charged to the text budget (each alias occurrence again)."""
        text = str(node.value)
        self.text -= len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if self.text < 0:
            raise YAMLReadError(
                f"the document holds more than {MAX_EXPANDED_BYTES} bytes of scalar text once "
                f"its aliases are expanded (MAX_EXPANDED_BYTES) {_where(node)}"
            )
        return text

    def value(self, node: yaml.Node, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise YAMLReadError(
                "repetition limit exceeded while expanding aliases: more than "
                f"{ALIAS_EXPANSION_FACTOR} expanded nodes per node (ALIAS_EXPANSION_FACTOR) "
                f"{_where(node)}"
            )
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if depth >= MAX_NESTING_DEPTH:
            raise YAMLReadError(f"recursion limit exceeded: {TOO_DEEP} {_where(node)}")
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise YAMLReadError(f"unsupported YAML tag {node.tag} {_where(node)}")
            return [self.value(item, depth + 1) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP:
                raise YAMLReadError(f"unsupported YAML tag {node.tag} {_where(node)}")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise YAMLReadError(f"mapping keys must be scalars {_where(key_node)}")
                key = self.weigh(key_node)
                if key in result:
                    raise YAMLReadError(f"duplicate key '{key}' {_where(key_node)}")
                result[key] = self.value(value_node, depth + 1)
            return result
        raise YAMLReadError(f"unsupported YAML node {_where(node)}")  # pragma: no cover

    def scalar(self, node: yaml.ScalarNode) -> Any:
        text = self.weigh(node)
        tag = node.tag
        if tag == _PLAIN:
            return _plain(text, node)
        if tag == _STR:
            return text
        if tag == _NULL:
            if text in _NULLS:
                return None
        elif tag == _BOOL:
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
        elif tag == _INT:
            number = _integer(text, node)
            if number is not None:
                return number
        elif tag == _FLOAT:
            number = _integer(text, node)
            if number is not None:
                return float(number)
            real = _real(text, node)
            if real is not None:
                return real
        else:
            raise YAMLReadError(f"unsupported YAML tag {tag} {_where(node)}")
        raise YAMLReadError(f"invalid value {text!r} for tag {tag} {_where(node)}")


def _integer(text: str, node: yaml.ScalarNode) -> int | None:
    match = _INT_RE.fullmatch(text)
    if match is None:
        return None
    sign, body = match.groups()
    if body[:2] in ("0x", "0o", "0b"):
        value = int(body[2:], {"0x": 16, "0o": 8, "0b": 2}[body[:2]])
    elif len(body) > 1 and body[0] == "0":
        return None
    else:
        value = int(body)
    if sign == "-":
        value = -value
    if _I64_MIN <= value <= _U64_MAX:
        return value
    if _I128_MIN <= value <= _U128_MAX:
        raise YAMLReadError(f"JSON number out of range: {text} {_where(node)}")
    return None


def _real(text: str, node: yaml.ScalarNode) -> float | None:
    if text in _NON_FINITE or text.lstrip("+") in _NON_FINITE:
        raise YAMLReadError(
            f"non-finite number {text} is not allowed (NaN and infinities are not JSON numbers) "
            f"{_where(node)}"
        )
    if _FLOAT_RE.fullmatch(text) is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _plain(text: str, node: yaml.ScalarNode) -> Any:
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    number = _integer(text, node)
    if number is not None:
        return number
    real = _real(text, node)  # also a decimal beyond the 128-bit range, as Rust reads it
    return text if real is None or _is_leading_zero(text) else real


def _is_leading_zero(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return len(body) > 1 and body[0] == "0" and body.isdigit()


def _count_nodes(root: yaml.Node) -> int:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
    return len(seen)


def read_yaml(data: bytes | str) -> Any:
    """Read exactly one YAML document into JSON data (dicts, lists, str, int, float, bool, None)."""
    problem = size_problem(document_size(data))
    if problem is not None:
        raise YAMLReadError(problem)
    try:
        root = yaml.compose(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        message = " ".join(str(exc).split())
        if "exceeded maximum nesting depth" in message:  # libyaml's own guard fired first
            message = f"{TOO_DEEP}: {message}"
        raise YAMLReadError(message) from exc
    except RecursionError:
        raise YAMLReadError(TOO_DEEP) from None
    if root is None:
        raise YAMLReadError("the document is empty: expected one YAML document")
    budget = ALIAS_EXPANSION_FACTOR * _count_nodes(root) + 1000
    return _Reader(budget=budget).value(root, 0)
