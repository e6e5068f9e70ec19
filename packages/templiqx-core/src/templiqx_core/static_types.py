"""Static typing of content: references, expressions, nodes and component calls.

The checker works with seven kinds derived from schemas (``Any`` when unknown). References are
resolved against the contract's declared fields and the local scope (``for_each`` items and
component parameters) through ``properties`` and ``items``; the request is never consulted.

A reference that does not resolve is reported once, with what was declared where it stopped
(and the closest name when it looks misspelt). Its consequences are not reported again: the
kind checks of an expression whose reference is unknown (the ``Any`` interpolation, a ``when``
condition, a ``for_each`` collection, a boolean operand) stay silent, and a loop over an
unknown or non-array collection binds its item as *unknown*, so references through it are not
reported either.
"""

from __future__ import annotations

import enum
import re
from typing import Any, Final

from templiqx_contracts import (
    AndExpr,
    ComponentNode,
    Contract,
    Diagnostic,
    EqualsExpr,
    Expr,
    FieldSpec,
    ForEachNode,
    IncludeNode,
    InterpolateNode,
    LiteralExpr,
    Node,
    NotExpr,
    OrExpr,
    RefExpr,
    TextNode,
    TypedComponent,
    WhenNode,
    quote_input,
)
from templiqx_core import codes
from templiqx_core.components import component_content, legacy_arguments
from templiqx_core.suggest import closest, name_list

__all__ = [
    "STRING_SCHEMA",
    "ContentChecker",
    "Kind",
    "is_identifier",
    "parse_index",
    "schema_kind",
    "value_kind",
]

STRING_SCHEMA: Final[dict[str, Any]] = {"type": "string"}
_IDENTIFIER = re.compile(r"[A-Za-z0-9._-]+")
_INDEX = re.compile(r"\+?[0-9]+")
_USIZE_MAX = (1 << 64) - 1
_TEXT_FILTERS = frozenset({"trim", "lower", "upper"})


class _Unresolved:
    """Why a reference path did not resolve: the problem, as the rest of a message."""

    __slots__ = ("detail",)

    def __init__(self, detail: str) -> None:
        self.detail = detail


class _UnknownType:
    """The schema of a local whose binding is already reported broken (see module doc)."""


_UNKNOWN: Final = _UnknownType()


class Kind(enum.Enum):
    """The static kind of an expression (printed as in diagnostics)."""

    ANY = "Any"
    NULL = "Null"
    BOOLEAN = "Boolean"
    NUMBER = "Number"
    STRING = "String"
    ARRAY = "Array"
    OBJECT = "Object"


_SCHEMA_KINDS: Final = {
    "null": Kind.NULL,
    "boolean": Kind.BOOLEAN,
    "integer": Kind.NUMBER,
    "number": Kind.NUMBER,
    "string": Kind.STRING,
    "array": Kind.ARRAY,
    "object": Kind.OBJECT,
}
_SCHEMA_TYPE_NAMES: Final = {
    Kind.NULL: "null",
    Kind.BOOLEAN: "boolean",
    Kind.NUMBER: "number",
    Kind.STRING: "string",
    Kind.ARRAY: "array",
    Kind.OBJECT: "object",
}


def is_identifier(text: str) -> bool:
    """Non-empty ASCII letters, digits, ``.``, ``_`` and ``-`` (contract ids, loop items)."""
    return _IDENTIFIER.fullmatch(text) is not None


def parse_index(segment: str) -> int | None:
    """A path segment read as an array index: optional ``+`` then ASCII digits, <= 2**64 - 1."""
    if _INDEX.fullmatch(segment) is None:
        return None
    value = int(segment)
    return value if value <= _USIZE_MAX else None


def schema_kind(schema: Any) -> Kind:
    """The kind a schema's ``type`` declares (``Any`` when missing or not a known string)."""
    if isinstance(schema, dict):
        type_name = schema.get("type")
        if isinstance(type_name, str):
            return _SCHEMA_KINDS.get(type_name, Kind.ANY)
    return Kind.ANY


def value_kind(value: Any) -> Kind:
    """The JSON type of a literal value."""
    if value is None:
        return Kind.NULL
    if isinstance(value, bool):
        return Kind.BOOLEAN
    if isinstance(value, (int, float)):
        return Kind.NUMBER
    if isinstance(value, str):
        return Kind.STRING
    if isinstance(value, list):
        return Kind.ARRAY
    if isinstance(value, dict):
        return Kind.OBJECT
    return Kind.ANY


class ContentChecker:
    """Validates node lists of one contract, appending diagnostics to ``out``."""

    def __init__(self, contract: Contract, out: list[Diagnostic]) -> None:
        self.contract = contract
        self.out = out
        self._parameters: dict[str, dict[str, tuple[Kind, bool]]] = {}

    # --- references ----------------------------------------------------------------------

    def _resolve(self, path: str, scope: dict[str, Any]) -> Any:
        """The schema ``path`` leads to, :data:`_UNKNOWN`, or an :class:`_Unresolved`."""
        segments = path.split(".")
        if "" in segments:
            return _Unresolved("a path is names joined by single dots, with no empty part")
        first = segments[0]
        if first in ("inputs", "context"):
            fields: dict[str, FieldSpec] = (
                self.contract.inputs if first == "inputs" else self.contract.context
            )
            if len(segments) < 2:
                return _Unresolved(f"name one of its fields: declared {first}: {_names(fields)}")
            spec = fields.get(segments[1])
            if spec is None:
                return _Unresolved(
                    f"{_suggestion(segments[1], fields, first)}declared {first}: {_names(fields)}"
                )
            schema = spec.schema
            rest = segments[2:]
            done = segments[:2]
        else:
            if first not in scope:
                return self._unknown_root(first, scope)
            schema = scope[first]
            rest = segments[1:]
            done = segments[:1]
        for segment in rest:
            if schema is _UNKNOWN:
                return _UNKNOWN
            kind = schema_kind(schema)
            where = quote_input(".".join(done))
            if kind is Kind.OBJECT:
                properties = schema.get("properties")
                if not isinstance(properties, dict) or segment not in properties:
                    declared = properties if isinstance(properties, dict) else {}
                    return _Unresolved(
                        f"{_suggestion(segment, declared, '.'.join(done))}"
                        f"properties of {where}: {_names(declared)}"
                    )
                schema = properties[segment]
            elif kind is Kind.ARRAY and parse_index(segment) is not None:
                if "items" not in schema:
                    return _Unresolved(f"the array {where} declares no `items` schema")
                schema = schema["items"]
            elif kind is Kind.ARRAY:
                return _Unresolved(
                    f"{where} is an array: follow it with an item index, as in "
                    f"{quote_input('.'.join([*done, '0']))}"
                )
            else:
                what = "has no declared type" if kind is Kind.ANY else f"is a {kind.value}"
                return _Unresolved(f"{where} {what}, so it has no part {quote_input(segment)}")
            done.append(segment)
        return schema

    def _unknown_root(self, first: str, scope: dict[str, Any]) -> _Unresolved:
        roots = ["inputs", "context", *sorted(scope)]
        match = closest(first, roots)
        hint = ""
        if match is not None:
            hint = (
                f"did you mean {quote_input(match)} (the path starts with {quote_input(first)})? "
            )
        locals_ = f"; in scope here: {name_list(sorted(scope))}" if scope else ""
        return _Unresolved(
            f"{hint}a path starts with `inputs`, `context` or a loop item or component "
            f"parameter in scope (declared inputs: {_names(self.contract.inputs)}; declared "
            f"context: {_names(self.contract.context)}{locals_})"
        )

    def infer_schema(self, expr: Expr, scope: dict[str, Any]) -> Any:
        """The schema an expression is known to satisfy (``None`` when unknown)."""
        if isinstance(expr, RefExpr):
            resolved = self._resolve(expr.path, scope)
            return None if isinstance(resolved, _Unresolved | _UnknownType) else resolved
        if isinstance(expr, LiteralExpr):
            kind = value_kind(expr.value)
            name = _SCHEMA_TYPE_NAMES.get(kind)
            return {"type": name} if name is not None else {}
        return {"type": "boolean"}

    def infer_kind(self, expr: Expr, scope: dict[str, Any]) -> Kind:
        """The static kind of an expression."""
        if isinstance(expr, RefExpr):
            resolved = self._resolve(expr.path, scope)
            if isinstance(resolved, _Unresolved | _UnknownType):
                return Kind.ANY
            return schema_kind(resolved)
        if isinstance(expr, LiteralExpr):
            return value_kind(expr.value)
        return Kind.BOOLEAN

    def is_known(self, expr: Expr, scope: dict[str, Any]) -> bool:
        """False for a reference already reported unknown (or through an unknown local)."""
        if not isinstance(expr, RefExpr):
            return True
        return not isinstance(self._resolve(expr.path, scope), _Unresolved | _UnknownType)

    # --- expressions ---------------------------------------------------------------------

    def check_expr(self, expr: Expr, pointer: str, scope: dict[str, Any]) -> None:
        """Validate one expression rooted at ``pointer``."""
        if isinstance(expr, RefExpr):
            resolved = self._resolve(expr.path, scope)
            if isinstance(resolved, _Unresolved):
                self._error(
                    codes.REF_UNKNOWN,
                    f"unknown or schema-incompatible reference path {quote_input(expr.path)}: "
                    f"{resolved.detail}",
                    pointer,
                )
        elif isinstance(expr, EqualsExpr):
            self.check_expr(expr.left, f"{pointer}/left", scope)
            self.check_expr(expr.right, f"{pointer}/right", scope)
        elif isinstance(expr, NotExpr):
            self._check_boolean_operand(expr.value, f"{pointer}/value", scope)
        elif isinstance(expr, (AndExpr, OrExpr)):
            if not expr.values:
                self._error(
                    codes.BOOLEAN_EMPTY,
                    "and/or requires at least one boolean operand",
                    f"{pointer}/values",
                )
            for index, operand in enumerate(expr.values):
                self._check_boolean_operand(operand, f"{pointer}/values/{index}", scope)

    def _check_boolean_operand(self, expr: Expr, pointer: str, scope: dict[str, Any]) -> None:
        self.check_expr(expr, pointer, scope)
        if self.is_known(expr, scope) and self.infer_kind(expr, scope) is not Kind.BOOLEAN:
            self._error(codes.BOOLEAN_TYPE, "boolean operator operands must be boolean", pointer)

    # --- nodes ---------------------------------------------------------------------------

    def check_nodes(self, nodes: list[Node], base: str, scope: dict[str, Any]) -> None:
        """Validate a node list whose node ``i`` lives at ``{base}/{i}``."""
        for index, node in enumerate(nodes):
            pointer = f"{base}/{index}"
            if isinstance(node, TextNode):
                continue
            if isinstance(node, InterpolateNode):
                self._check_interpolate(node, pointer, scope)
            elif isinstance(node, WhenNode):
                self.check_expr(node.condition, f"{pointer}/condition", scope)
                if (
                    self.is_known(node.condition, scope)
                    and self.infer_kind(node.condition, scope) is not Kind.BOOLEAN
                ):
                    self._error(
                        codes.CONDITION_TYPE,
                        "when condition must be boolean",
                        f"{pointer}/condition",
                    )
                self.check_nodes(node.then, f"{pointer}/then", scope)
                self.check_nodes(node.else_, f"{pointer}/else", scope)
            elif isinstance(node, ForEachNode):
                self._check_for_each(node, pointer, scope)
            elif isinstance(node, ComponentNode):
                self._check_component_call(node, pointer, scope)
            elif isinstance(node, IncludeNode):
                self._error(
                    codes.INCLUDE_UNEXPANDED,
                    "include node reached validation unexpanded "
                    "(composition layer must expand includes)",
                    pointer,
                )

    def _check_interpolate(
        self, node: InterpolateNode, pointer: str, scope: dict[str, Any]
    ) -> None:
        self.check_expr(node.expression, f"{pointer}/expression", scope)
        if not self.is_known(node.expression, scope):
            return
        kind = self.infer_kind(node.expression, scope)
        filters = node.filters
        if kind in (Kind.ARRAY, Kind.OBJECT, Kind.NULL) and "json" not in filters:
            self._error(
                codes.INTERPOLATION_TYPE,
                "arrays, objects and null require the json filter",
                f"{pointer}/filters",
            )
        if kind is Kind.ANY:
            self._error(
                codes.INTERPOLATION_TYPE,
                "interpolation expression must have a statically known scalar type or use a "
                "typed json value",
                f"{pointer}/expression",
            )
        if kind is not Kind.STRING and any(f in _TEXT_FILTERS for f in filters):
            self._error(
                codes.FILTER_TYPE,
                "trim, lower and upper filters require a string expression",
                f"{pointer}/filters",
            )

    def _check_for_each(self, node: ForEachNode, pointer: str, scope: dict[str, Any]) -> None:
        self.check_expr(node.collection, f"{pointer}/collection", scope)
        known = self.is_known(node.collection, scope)
        is_array = self.infer_kind(node.collection, scope) is Kind.ARRAY
        if known and not is_array:
            self._error(
                codes.FOR_EACH_TYPE,
                "for_each collection must be an array",
                f"{pointer}/collection",
            )
        if not is_identifier(node.item):
            self._error(
                codes.LOCAL_INVALID, "iteration item is not a valid identifier", f"{pointer}/item"
            )
            return
        collection_schema = self.infer_schema(node.collection, scope)
        item_schema: Any = {} if known and is_array else _UNKNOWN
        if is_array and isinstance(collection_schema, dict) and "items" in collection_schema:
            item_schema = collection_schema["items"]
        # The binding is scoped to the body: an outer binding of the same name is restored
        # afterwards (the reference deletes it instead; see docs/decisions/core-semantics.md).
        inner = dict(scope)
        inner[node.item] = item_schema
        self.check_nodes(node.body, f"{pointer}/body", inner)

    def parameters(self, name: str) -> dict[str, tuple[Kind, bool]] | None:
        """Declared parameters of a component: name -> (kind, required)."""
        cached = self._parameters.get(name)
        if cached is not None:
            return cached
        definition = self.contract.components.get(name)
        if definition is None:
            return None
        if isinstance(definition, TypedComponent):
            params = {
                param: (schema_kind(spec.schema), spec.required)
                for param, spec in definition.parameters.items()
            }
        else:
            params = dict.fromkeys(
                legacy_arguments(component_content(definition)), (Kind.STRING, True)
            )
        self._parameters[name] = params
        return params

    def _check_component_call(
        self, node: ComponentNode, pointer: str, scope: dict[str, Any]
    ) -> None:
        params = self.parameters(node.name)
        if params is None:
            components = sorted(self.contract.components)
            self._error(
                codes.COMPONENT_MISSING,
                f"unknown component {quote_input(node.name)}"
                f"{_maybe(node.name, components)}; defined components: {name_list(components)}",
                f"{pointer}/name",
            )
            return
        for param in sorted(params):
            _, required = params[param]
            if required and param not in node.with_:
                self._error(
                    codes.COMPONENT_ARGUMENT_MISSING,
                    f"component '{node.name}' requires argument '{param}'",
                    f"{pointer}/with/{param}",
                )
        for argument in sorted(node.with_):
            expr = node.with_[argument]
            arg_pointer = f"{pointer}/with/{argument}"
            self.check_expr(expr, arg_pointer, scope)
            declared = params.get(argument)
            if declared is None:
                self._error(
                    codes.COMPONENT_ARGUMENT_UNKNOWN,
                    f"component {quote_input(node.name)} has no parameter "
                    f"{quote_input(argument)}{_maybe(argument, sorted(params))}"
                    f"; its parameters: {name_list(sorted(params))}",
                    arg_pointer,
                )
                continue
            expected = declared[0]
            actual = self.infer_kind(expr, scope)
            if Kind.ANY not in (expected, actual) and expected is not actual:
                self._error(
                    codes.COMPONENT_ARGUMENT_TYPE,
                    f"component '{node.name}' parameter '{argument}' expects "
                    f"{expected.value}, found {actual.value}",
                    arg_pointer,
                )

    def _error(self, code: str, message: str, pointer: str) -> None:
        self.out.append(codes.problem(code, message, pointer))


def _names(fields: dict[str, Any]) -> str:
    return name_list(sorted(fields))


def _maybe(name: str, declared: list[str]) -> str:
    """`` (did you mean 'x'?)`` when ``name`` looks like a misspelt declared name."""
    match = closest(name, declared)
    return "" if match is None else f" (did you mean {quote_input(match)}?)"


def _suggestion(segment: str, declared: dict[str, Any], prefix: str) -> str:
    """``did you mean 'inputs.name'? `` when ``segment`` looks like a misspelt declared name."""
    match = closest(segment, sorted(declared))
    return "" if match is None else f"did you mean {quote_input(f'{prefix}.{match}')}? "
