"""Parsing templiqx documents: contracts, manifests, locks, translations, partials, requests.

Every function takes YAML text (``str`` or UTF-8 ``bytes``) and an optional file label and
returns ``(value, [])`` on success or ``(None, diagnostics)`` on failure: one ``TQX_PARSE_YAML``
diagnostic (severity ``error``, no ``json_pointer``, ``file`` when given, a 1-based ``span``
over the offending token) for each independent problem. Text that is not one well-formed YAML
document has one problem; in a well-formed document every unknown, missing, repeated or
wrongly typed field is found in the same run (see :mod:`templiqx_core._recovery`). They never
raise on bad input.

The YAML rules are those of :mod:`templiqx_core.yaml_reader` (``core.md`` §1.1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from templiqx_contracts import (
    Contract,
    Diagnostic,
    Node,
    PackageLock,
    PackageManifest,
    RenderRequest,
    SourceSpan,
)
from templiqx_core import _json_locate, _yaml_tree
from templiqx_core._recovery import Collector, collecting
from templiqx_core._tokens import token_end
from templiqx_core._yaml_contract import CONTRACT, RENDER_REQUEST, read_nodes
from templiqx_core._yaml_decode import StructSpec, json_value, map_of, read_struct
from templiqx_core._yaml_package import LOCK, MANIFEST
from templiqx_core._yaml_tree import YamlError, read_document
from templiqx_core.limits import MAX_DOCUMENT_BYTES, MAX_NESTING_DEPTH

__all__ = [
    "parse_contract",
    "parse_json_value",
    "parse_lock",
    "parse_manifest",
    "parse_node_list",
    "parse_render_request",
    "parse_translation_bundle",
]

PARSE_YAML: Final = "TQX_PARSE_YAML"
"""The one diagnostic code of every parse failure."""

PARSE_HELP: Final = "Use the strict Templiqx YAML schema; unknown fields are rejected."
"""The ``help`` of an unknown field (core.md §1.1)."""

SYNTAX_HELP: Final = (
    "Fix the YAML syntax at the reported line and column: indent with spaces, close every "
    "quote and bracket, and write `key: value` with a space after the colon."
)
"""The ``help`` of text that is not one well-formed YAML document."""

SCHEMA_HELP: Final = (
    "Give the named field the type and shape the strict Templiqx YAML schema expects (the "
    "message says what it found and what it expected); quote a value to keep it a string."
)
"""The ``help`` of well-formed YAML with a wrong type, a missing or a repeated field."""

LIMIT_HELP: Final = (
    "Make the document smaller or flatter: the message names the reader limit it exceeds."
)
"""The ``help`` of a document beyond the reader's size, nesting or alias limits."""

PARSE_HELPS: Final[dict[str, str]] = {
    _yaml_tree.SYNTAX: SYNTAX_HELP,
    _yaml_tree.UNKNOWN_FIELD: PARSE_HELP,
    _yaml_tree.SCHEMA: SCHEMA_HELP,
    _yaml_tree.LIMIT: LIMIT_HELP,
}
"""The ``help`` of a parse failure by the kind of problem, so the fix fits the error."""

_T = TypeVar("_T")


def _struct_reader(spec: StructSpec) -> Callable[[_yaml_tree.Node, str, bool], Any]:
    def read(node: _yaml_tree.Node, path: str, buffered: bool) -> Any:
        return read_struct(node, path, buffered, spec)

    return read


CONTRACT_READER: Final = _struct_reader(CONTRACT)
"""Reads a contract (also for :class:`templiqx_core.sources.ContractSource`)."""


def diagnostic_of(error: YamlError, file: str | None, line_text: str = "") -> Diagnostic:
    """The ``TQX_PARSE_YAML`` diagnostic of ``error``; ``line_text`` (the text of the line
    it points at) stretches the span over the offending token."""
    span = None
    if error.line is not None and error.column is not None:
        end = token_end(line_text, error.column) if line_text else error.column
        span = SourceSpan(line=error.line, column=error.column, end_line=error.line, end_column=end)
    return Diagnostic(
        code=PARSE_YAML,
        severity="error",
        message=error.message,
        file=file,
        span=span,
        help=PARSE_HELPS.get(error.kind, PARSE_HELP),
    )


@dataclass
class Reading:
    """One document read in collecting mode.

    ``root`` is the raw node tree (``None`` when the text is not one well-formed document),
    ``value`` what the reader built, placeholders included; ``collector`` the problems it read
    past and ``error`` the one it could not (the text's syntax, a root of the wrong shape).
    """

    root: _yaml_tree.Node | None
    value: Any
    collector: Collector
    error: YamlError | None

    def errors(self) -> list[YamlError]:
        """Every problem, in the order found."""
        found = list(self.collector.errors)
        if self.error is not None:
            found.append(self.error)
        return found


def read_collected(
    source: str | bytes, read: Callable[[_yaml_tree.Node, str, bool], Any]
) -> Reading:
    """Read ``source`` with the reader ``read``, collecting every problem."""
    with collecting() as collector:
        try:
            root = read_document(source)
        except YamlError as error:
            return Reading(None, None, collector, error)
        except RecursionError:  # pragma: no cover - the reader bounds nesting itself
            return Reading(None, None, collector, _too_deep())
        try:
            value = read(root, "", False)
        except YamlError as error:
            return Reading(root, None, collector, error)
        except RecursionError:
            return Reading(root, None, collector, _too_deep())
    return Reading(root, value, collector, None)


def diagnostics_of(
    errors: list[YamlError],
    source: str | bytes,
    file: str | None,
    points: set[int] | frozenset[int] = frozenset(),
) -> list[Diagnostic]:
    """The diagnostics of ``errors`` found in ``source``, spans over the offending tokens.

    The span of an error about a whole mapping (its ``id`` in ``points``: a missing field) and
    of a document beyond a reader limit (not scanned for its lines) stays a point.
    """
    lines: list[str] | None = None
    found: list[Diagnostic] = []
    for error in errors:
        line_text = ""
        if error.kind != _yaml_tree.LIMIT and error.line is not None and id(error) not in points:
            if lines is None:
                text = source[:MAX_DOCUMENT_BYTES]
                if isinstance(text, bytes):
                    text = bytes(text).decode("utf-8", errors="replace")
                lines = text.splitlines()
            if 0 < error.line <= len(lines):
                line_text = lines[error.line - 1]
        found.append(diagnostic_of(error, file, line_text))
    return found


def _parse(
    source: str | bytes, file: str | None, read: Callable[[_yaml_tree.Node, str, bool], _T]
) -> tuple[_T | None, list[Diagnostic]]:
    reading = read_collected(source, read)
    errors = reading.errors()
    if errors:
        return None, diagnostics_of(errors, source, file, reading.collector.whole)
    value: _T = reading.value
    return value, []


def _too_deep() -> YamlError:
    return YamlError(
        f"the document nests values more than {MAX_NESTING_DEPTH} levels deep "
        "(MAX_NESTING_DEPTH); flatten it",
        kind=_yaml_tree.LIMIT,
    )


def parse_contract(
    source: str | bytes, file: str | None = None
) -> tuple[Contract | None, list[Diagnostic]]:
    """Parse a contract (``contracts/<id>.yaml``) with every default materialized."""
    return _parse(source, file, CONTRACT_READER)


def parse_manifest(
    source: str | bytes, file: str | None = None
) -> tuple[PackageManifest | None, list[Diagnostic]]:
    """Parse a package manifest (``templiqx.yaml``) with every default filled in."""
    return _parse(source, file, _struct_reader(MANIFEST))


def parse_lock(
    source: str | bytes, file: str | None = None
) -> tuple[PackageLock | None, list[Diagnostic]]:
    """Parse a ``templiqx.lock`` file."""
    return _parse(source, file, _struct_reader(LOCK))


_BUNDLE = map_of(json_value, "translation values")


def parse_translation_bundle(
    source: str | bytes, file: str | None = None
) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """Parse a translation bundle (``translations/<locale>.yaml``): a flat map key → value."""
    return _parse(source, file, _BUNDLE)


def parse_node_list(
    source: str | bytes, file: str | None = None
) -> tuple[list[Node] | None, list[Diagnostic]]:
    """Parse an include partial: a YAML list of content nodes."""
    return _parse(source, file, read_nodes)


def parse_json_value(source: str | bytes, file: str | None = None) -> tuple[Any, list[Diagnostic]]:
    """Parse one free JSON value written in YAML (or JSON) with the YAML typing rules.

    On failure the value is ``None``; check the diagnostics, since ``None`` is also a value.
    """
    return _parse(source, file, json_value)


def parse_render_request(
    source: str | bytes, file: str | None = None
) -> tuple[RenderRequest | None, list[Diagnostic]]:
    """Parse a render request ``{inputs, context}`` (both optional, nothing else allowed).

    A JSON object is read with the JSON number rules of the reference (``-0`` is the float
    ``-0.0``, integers beyond 64 bits become floats, ``1e400`` is refused) and may use any JSON
    escape; anything else is read as YAML.
    """
    try:
        request = _json_request(source)
    except YamlError as error:
        return None, diagnostics_of([error], source, file)
    if request is not None:
        return request, []
    return _parse(source, file, _struct_reader(RENDER_REQUEST))


# --- render requests written as JSON --------------------------------------------------------

_U64_MAX: Final = (1 << 64) - 1
_I64_MIN: Final = -(1 << 63)
_JSON_WHITESPACE: Final = " \t\r\n"


class _NotJsonError(Exception):
    """The text is not a JSON document we read as JSON; fall back to YAML."""


class _JsonNumberError(Exception):
    """A JSON number beyond the 64-bit float range (``text`` as written)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _located(problem: str, hint: str, where: tuple[int, int] | None, kind: str) -> YamlError:
    """A refusal of a JSON render request, worded and located like the YAML reader's errors."""
    if where is None:  # pragma: no cover - the locators find every problem they are asked for
        return YamlError(f"{problem}; {hint}", kind=kind)
    line, column = where
    return YamlError(f"{problem} at line {line} column {column}; {hint}", line, column, kind=kind)


def _json_int(text: str) -> int | float:
    if text == "-0":
        return -0.0
    if len(text.lstrip("-")) > 20:
        # float() of thousands of digits is inf (and int() refuses them): out of range either way
        value_f = float(text)
        if not math.isfinite(value_f):
            raise _JsonNumberError(text)
        return value_f
    value = int(text)
    if value > _U64_MAX or value < _I64_MIN:
        return float(value)
    return value


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _JsonNumberError(text)
    return value


def _json_constant(name: str) -> Any:
    raise _NotJsonError(name)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _NotJsonError("duplicate key")  # YAML reports it with its location
    return result


def _json_request(source: str | bytes) -> RenderRequest | None:
    if isinstance(source, str):
        if len(source) > MAX_DOCUMENT_BYTES:
            return None  # the YAML reader reports the size limit
        text = source
    else:
        if len(source) > MAX_DOCUMENT_BYTES:
            return None
        try:
            text = bytes(source).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not text.lstrip(_JSON_WHITESPACE + "\ufeff").startswith("{"):
        return None
    text = text.lstrip("\ufeff")
    try:
        data = json.loads(
            text,
            object_pairs_hook=_json_object,
            parse_int=_json_int,
            parse_float=_json_float,
            parse_constant=_json_constant,
        )
    except (_NotJsonError, json.JSONDecodeError):
        return None
    except _JsonNumberError as error:
        raise _located(
            f"number `{_shown_number(error.text)}` is out of range for a 64-bit float",
            "write a smaller number or quote it as a string",
            _json_locate.locate_number(text, error.text),
            _yaml_tree.SCHEMA,
        ) from None
    except RecursionError:
        raise _json_too_deep(text) from None
    if _json_depth(data) > MAX_NESTING_DEPTH:
        raise _json_too_deep(text)
    return _request_from_json(data, text)


def _shown_number(text: str) -> str:
    """A number as a message shows it: whole up to 24 characters, else its ends and length."""
    if len(text) <= 24:
        return text
    return f"{text[:12]}...{text[-6:]} ({len(text)} characters)"


def _json_too_deep(text: str) -> YamlError:
    return _located(
        f"the document nests values more than {MAX_NESTING_DEPTH} levels deep (MAX_NESTING_DEPTH)",
        "flatten it",
        _json_locate.locate_depth(text, MAX_NESTING_DEPTH),
        _yaml_tree.LIMIT,
    )


def _json_depth(value: Any) -> int:
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING_DEPTH:
            break
        stack.extend((entry, depth) for entry in children)
    return deepest


def _request_from_json(data: dict[str, Any], text: str) -> RenderRequest:
    values: dict[str, dict[str, Any]] = {}
    for key, value in data.items():
        if key not in ("inputs", "context"):
            raise _located(
                f"unknown field `{key}` in a render request",
                "expected one of `inputs`, `context`",
                _json_locate.locate_key(text, key),
                _yaml_tree.UNKNOWN_FIELD,
            )
        if not isinstance(value, dict):
            raise _located(
                f"{key}: expected a JSON object of values, found {_json_kind(value)}",
                'write for example {"name": "Ada"}',
                _json_locate.locate_value_of(text, key),
                _yaml_tree.SCHEMA,
            )
        values[key] = value
    return RenderRequest(**values)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"
