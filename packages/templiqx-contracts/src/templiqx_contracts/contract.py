"""The contract model: what a ``contracts/<id>.yaml`` file declares.

Every Struct rejects unknown fields. Field names, defaults and which fields are always written
decide the contract fingerprint, so they follow the reference exactly: every field of every
Struct here is always serialized (defaults materialized), with two exceptions — an include
node's ``from_dependency`` is written only when set, and the contract's tool fields (``tools``,
``tool_choice``, ``parallel_tool_calls``, an addition over the reference) only when the contract
declares tools (see :mod:`templiqx_contracts.tools`).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from templiqx_contracts.tools import ToolChoice, ToolSpec

__all__ = [
    "API_VERSION",
    "FILTER_NAMES",
    "ROLES",
    "AndExpr",
    "ComponentDefinition",
    "ComponentNode",
    "Contract",
    "EqualsExpr",
    "EvalFixture",
    "Expr",
    "ExtensionSpec",
    "FieldSpec",
    "Filter",
    "ForEachNode",
    "IncludeNode",
    "InterpolateNode",
    "LiteralExpr",
    "MessageTemplate",
    "Node",
    "NotExpr",
    "OrExpr",
    "RefExpr",
    "RenderRequest",
    "Role",
    "TextNode",
    "TypedComponent",
    "WhenNode",
]

API_VERSION = "templiqx/v1alpha1"

Role: TypeAlias = Literal["system", "developer", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "developer", "user", "assistant")

Filter: TypeAlias = Literal[
    "trim",
    "lower",
    "upper",
    "json",
    "format_date",
    "format_number",
    "format_currency",
    "translate",
]
FILTER_NAMES: tuple[Filter, ...] = (
    "trim",
    "lower",
    "upper",
    "json",
    "format_date",
    "format_number",
    "format_currency",
    "translate",
)


class _Strict(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base for plain strict DTOs."""


# --- expressions ----------------------------------------------------------------------------


class _ExprBase(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag_field="kind"):
    """Base for the expression union (internally tagged by ``kind``)."""


class RefExpr(_ExprBase, kw_only=True, tag="ref"):
    """A dot-separated reference such as ``inputs.customer.name`` or a local name."""

    path: str


class LiteralExpr(_ExprBase, kw_only=True, tag="literal"):
    """A literal JSON value."""

    value: Any


class EqualsExpr(_ExprBase, kw_only=True, tag="equals"):
    """Strict JSON equality of two expressions (``1`` never equals ``1.0``)."""

    left: Expr
    right: Expr


class NotExpr(_ExprBase, kw_only=True, tag="not"):
    """Boolean negation; the operand must be boolean."""

    value: Expr


class AndExpr(_ExprBase, kw_only=True, tag="and"):
    """Short-circuit conjunction of boolean operands."""

    values: list[Expr]


class OrExpr(_ExprBase, kw_only=True, tag="or"):
    """Short-circuit disjunction of boolean operands."""

    values: list[Expr]


Expr: TypeAlias = RefExpr | LiteralExpr | EqualsExpr | NotExpr | AndExpr | OrExpr


# --- content nodes --------------------------------------------------------------------------


class _NodeBase(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag_field="kind"):
    """Base for the content-node union (internally tagged by ``kind``)."""


class TextNode(_NodeBase, kw_only=True, tag="text"):
    """Literal text; ``${...}`` or ``{{...}}`` inside it has no meaning."""

    value: str


class InterpolateNode(_NodeBase, kw_only=True, tag="interpolate"):
    """The display form of an expression, passed through filters left to right."""

    expression: Expr
    filters: list[Filter] = msgspec.field(default_factory=list)


class WhenNode(_NodeBase, kw_only=True, tag="when"):
    """Render ``then`` when the boolean condition holds, else ``else``."""

    condition: Expr
    then: list[Node]
    else_: list[Node] = msgspec.field(default_factory=list, name="else")


class ForEachNode(_NodeBase, kw_only=True, tag="for_each"):
    """Render ``body`` once per element of an array, binding ``item``, joined by ``separator``."""

    collection: Expr
    item: str
    body: list[Node]
    separator: str = ""


class ComponentNode(_NodeBase, kw_only=True, tag="component"):
    """Render a named component with arguments bound from expressions."""

    name: str
    with_: dict[str, Expr] = msgspec.field(default_factory=dict, name="with")


class IncludeNode(_NodeBase, kw_only=True, tag="include", omit_defaults=True):
    """A partial spliced in by the application before validation."""

    path: str
    from_dependency: str | None = None


Node: TypeAlias = TextNode | InterpolateNode | WhenNode | ForEachNode | ComponentNode | IncludeNode


# --- declarations ---------------------------------------------------------------------------


class FieldSpec(_Strict, kw_only=True):
    """A typed input, context value or component parameter."""

    schema: Any
    required: bool = False
    description: str = ""


class MessageTemplate(_Strict, kw_only=True):
    """One role message built from content nodes."""

    role: Role
    content: list[Node]


class ExtensionSpec(_Strict, kw_only=True):
    """A namespaced, capability-gated extension value validated by its own schema."""

    capability: str
    schema: Any
    value: Any


class TypedComponent(_Strict, kw_only=True):
    """A component with declared, typed parameters."""

    parameters: dict[str, FieldSpec] = msgspec.field(default_factory=dict)
    content: list[Node]


ComponentDefinition: TypeAlias = TypedComponent | list[Node]
"""A typed component, or a legacy component: a bare node list with inferred string parameters."""


class EvalFixture(_Strict, kw_only=True):
    """An inline eval: a request and the output the deterministic fake runtime returns."""

    id: str
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    context: dict[str, Any] = msgspec.field(default_factory=dict)
    fake_output: Any


class RenderRequest(_Strict, kw_only=True):
    """The values a contract is compiled with."""

    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    context: dict[str, Any] = msgspec.field(default_factory=dict)


class Contract(_Strict, kw_only=True):
    """A parsed contract. Every field is always serialized; this decides its fingerprint.

    The exception are the tool fields, unset (and so never serialized) unless the contract
    declares tools: an empty ``tools`` list is stored as unset, so a contract without tools
    fingerprints exactly as it did before tools existed. Read them with ``declared_tools``,
    ``tool_choice_of`` and ``parallel_tool_calls_of`` (:mod:`templiqx_contracts.tools`).
    """

    api_version: str
    id: str
    version: str
    description: str = ""
    inputs: dict[str, FieldSpec] = msgspec.field(default_factory=dict)
    context: dict[str, FieldSpec] = msgspec.field(default_factory=dict)
    capabilities: list[str] = msgspec.field(default_factory=list)
    messages: list[MessageTemplate]
    output_schema: Any
    runtime_policy: dict[str, Any] = msgspec.field(default_factory=dict)
    extensions: dict[str, ExtensionSpec] = msgspec.field(default_factory=dict)
    components: dict[str, ComponentDefinition] = msgspec.field(default_factory=dict)
    provenance: dict[str, str] = msgspec.field(default_factory=dict)
    evals: list[EvalFixture] = msgspec.field(default_factory=list)
    tools: list[ToolSpec] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        if not isinstance(self.tools, UnsetType) and not self.tools:
            self.tools = UNSET
