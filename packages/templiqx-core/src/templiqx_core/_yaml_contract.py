"""Readers for the contract model: content nodes, expressions, components, the contract.

Content nodes, expressions and whole component definitions are *buffered* positions (see
:mod:`templiqx_core._yaml_decode`); the contract, its field declarations, messages, extensions
and eval fixtures are *direct* positions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from templiqx_contracts import (
    FILTER_NAMES,
    ROLES,
    AndExpr,
    ComponentNode,
    Contract,
    EqualsExpr,
    EvalFixture,
    ExtensionSpec,
    FieldSpec,
    ForEachNode,
    IncludeNode,
    InterpolateNode,
    LiteralExpr,
    MessageTemplate,
    NotExpr,
    OrExpr,
    RefExpr,
    RenderRequest,
    TextNode,
    TypedComponent,
    WhenNode,
)
from templiqx_core._recovery import register_placeholder
from templiqx_core._yaml_decode import (
    Field,
    StructSpec,
    boolean,
    check_collection_tag,
    child,
    fail,
    found,
    json_value,
    key_text,
    list_of,
    map_of,
    optional_string,
    read_struct,
    string,
    struct,
)
from templiqx_core._yaml_tools import TOOL_FIELDS
from templiqx_core._yaml_tree import (
    DUPLICATE_KEY,
    MISSING_FIELD,
    UNKNOWN_FILTER,
    UNKNOWN_KIND,
    UNKNOWN_ROLE,
    Mapping,
    Node,
    Sequence,
)
from templiqx_core.suggest import closest

__all__ = [
    "CONTRACT",
    "RENDER_REQUEST",
    "read_component",
    "read_expr",
    "read_node",
    "read_nodes",
]

_KIND: Final = "kind"


def _choices(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _suggest(word: str, names: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` when ``word`` is a likely misspelling of one of ``names``."""
    match = closest(word, names)
    return f" (did you mean `{match}`?)" if match is not None else ""


def _read_tagged(node: Node, path: str, variants: dict[str, StructSpec], what: str) -> Any:
    """An internally tagged value: ``kind`` (anywhere in the mapping) selects the variant."""
    if not isinstance(node, Mapping):
        fail(
            node,
            path,
            f"expected {what} (a mapping with `kind: <{'|'.join(variants)}>`), found {found(node)}",
        )
    check_collection_tag(node, path)
    kind_node: Node | None = None
    for key_node, value_node in node.pairs:
        if key_text(key_node, path, True) == _KIND:
            if kind_node is not None:
                fail(
                    key_node,
                    path,
                    f"duplicate field `kind` in {what}; remove one of them",
                    DUPLICATE_KEY,
                )
            kind_node = value_node
    if kind_node is None:
        fail(
            node,
            path,
            f"missing field `kind` in {what}; add `kind:` with one of {_choices(list(variants))}",
            MISSING_FIELD,
        )
    kind = string(kind_node, child(path, _KIND), True)
    spec = variants.get(kind)
    if spec is None:
        fail(
            kind_node,
            child(path, _KIND),
            f"unknown kind `{kind}` for {what}{_suggest(kind, variants)}; "
            f"expected one of {_choices(list(variants))}",
            UNKNOWN_KIND,
        )
    return read_struct(node, path, True, spec)


# --- expressions ----------------------------------------------------------------------------


def read_expr(node: Node, path: str, buffered: bool) -> Any:
    """An expression (always a buffered position)."""
    return _read_tagged(node, path, _EXPRESSIONS, "an expression")


# A broken expression reads on as an empty string literal: a scalar of known type, so the
# checks that use it (interpolation, filters) find nothing to add to the reported problem.
register_placeholder(read_expr, lambda: LiteralExpr(value=""))


_EXPR_LIST = list_of(read_expr, "expressions")

_EXPRESSIONS: Final = {
    "ref": StructSpec("a `ref` expression", RefExpr, (Field("path", string),), _KIND),
    "literal": StructSpec(
        "a `literal` expression", LiteralExpr, (Field("value", json_value),), _KIND
    ),
    "equals": StructSpec(
        "an `equals` expression",
        EqualsExpr,
        (Field("left", read_expr), Field("right", read_expr)),
        _KIND,
    ),
    "not": StructSpec("a `not` expression", NotExpr, (Field("value", read_expr),), _KIND),
    "and": StructSpec("an `and` expression", AndExpr, (Field("values", _EXPR_LIST),), _KIND),
    "or": StructSpec("an `or` expression", OrExpr, (Field("values", _EXPR_LIST),), _KIND),
}


# --- content nodes --------------------------------------------------------------------------


def _read_filter(node: Node, path: str, buffered: bool) -> str:
    name = string(node, path, True)
    if name not in FILTER_NAMES:
        fail(
            node,
            path,
            f"unknown filter `{name}`{_suggest(name, FILTER_NAMES)}; "
            f"expected one of {_choices(FILTER_NAMES)}",
            UNKNOWN_FILTER,
        )
    return name


def read_node(node: Node, path: str, buffered: bool) -> Any:
    """A content node (always a buffered position)."""
    return _read_tagged(node, path, _NODES, "a content node")


register_placeholder(read_node, lambda: TextNode(value=""))
read_nodes = list_of(read_node, "content nodes")

_NODES: Final = {
    "text": StructSpec("a `text` node", TextNode, (Field("value", string),), _KIND),
    "interpolate": StructSpec(
        "an `interpolate` node",
        InterpolateNode,
        (
            Field("expression", read_expr),
            Field("filters", list_of(_read_filter, "filter names"), list),
        ),
        _KIND,
    ),
    "when": StructSpec(
        "a `when` node",
        WhenNode,
        (
            Field("condition", read_expr),
            Field("then", read_nodes),
            Field("else", read_nodes, list, attr="else_"),
        ),
        _KIND,
    ),
    "for_each": StructSpec(
        "a `for_each` node",
        ForEachNode,
        (
            Field("collection", read_expr),
            Field("item", string),
            Field("body", read_nodes),
            Field("separator", string, str),
        ),
        _KIND,
    ),
    "component": StructSpec(
        "a `component` node",
        ComponentNode,
        (
            Field("name", string),
            Field("with", map_of(read_expr, "argument expressions"), dict, attr="with_"),
        ),
        _KIND,
    ),
    "include": StructSpec(
        "an `include` node",
        IncludeNode,
        (
            Field("path", string),
            Field("from_dependency", optional_string, lambda: None),
        ),
        _KIND,
    ),
}


# --- declarations ---------------------------------------------------------------------------

_FIELD_SPEC: Final = StructSpec(
    "a field declaration",
    FieldSpec,
    (
        Field("schema", json_value),
        Field("required", boolean, lambda: False),
        Field("description", string, str),
    ),
)
_FIELD_SPECS = map_of(struct(_FIELD_SPEC), "field declarations")

_TYPED_COMPONENT: Final = StructSpec(
    "a typed component",
    TypedComponent,
    (
        Field("parameters", _FIELD_SPECS, dict),
        Field("content", read_nodes),
    ),
)


def read_component(node: Node, path: str, buffered: bool) -> Any:
    """A component: a typed ``{parameters, content}`` mapping or a legacy list of nodes."""
    if not isinstance(node, Sequence | Mapping):
        fail(
            node,
            path,
            "a component definition must be a list of content nodes (legacy component) or a "
            f"mapping with `parameters` and `content` (typed component), found {found(node)}",
        )
    if isinstance(node, Sequence):
        return read_nodes(node, path, True)
    return read_struct(node, path, True, _TYPED_COMPONENT)


register_placeholder(read_component, list)


def _read_role(node: Node, path: str, buffered: bool) -> str:
    role = string(node, path, buffered)
    if role not in ROLES:
        fail(
            node,
            path,
            f"unknown role `{role}`{_suggest(role, ROLES)}; expected one of {_choices(ROLES)}",
            UNKNOWN_ROLE,
        )
    return role


register_placeholder(_read_filter, lambda: "json")
register_placeholder(_read_role, lambda: "user")

_MESSAGE: Final = StructSpec(
    "a message template",
    MessageTemplate,
    (Field("role", _read_role), Field("content", read_nodes)),
)

_EXTENSION: Final = StructSpec(
    "an extension",
    ExtensionSpec,
    (Field("capability", string), Field("schema", json_value), Field("value", json_value)),
)

_JSON_MAP = map_of(json_value, "JSON values")

_EVAL: Final = StructSpec(
    "an eval fixture",
    EvalFixture,
    (
        Field("id", string),
        Field("inputs", _JSON_MAP, dict),
        Field("context", _JSON_MAP, dict),
        Field("fake_output", json_value),
    ),
)

CONTRACT: Final = StructSpec(
    "a contract",
    Contract,
    (
        Field("api_version", string),
        Field("id", string),
        Field("version", string),
        Field("description", string, str),
        Field("inputs", _FIELD_SPECS, dict),
        Field("context", _FIELD_SPECS, dict),
        Field("capabilities", list_of(string, "capability names"), list),
        Field("messages", list_of(struct(_MESSAGE), "message templates")),
        Field("output_schema", json_value),
        Field("runtime_policy", _JSON_MAP, dict),
        Field("extensions", map_of(struct(_EXTENSION), "extensions"), dict),
        Field("components", map_of(read_component, "component definitions"), dict),
        Field("provenance", map_of(string, "strings"), dict),
        Field("evals", list_of(struct(_EVAL), "eval fixtures"), list),
        *TOOL_FIELDS,
    ),
)

RENDER_REQUEST: Final = StructSpec(
    "a render request",
    RenderRequest,
    (Field("inputs", _JSON_MAP, dict), Field("context", _JSON_MAP, dict)),
)
