"""Rendering content nodes to message text.

Rendering runs after validation. It resolves references against the request (never against
schemas), evaluates expressions with strict JSON equality and short-circuit ``and``/``or``, and
applies filters. The first failure stops rendering; its diagnostic has pointer ``""``.

The text produced is counted as it is produced: past :data:`~templiqx_core.limits.
MAX_RENDERED_BYTES` (all messages together) rendering stops with ``TQX_RENDER_TOO_LARGE``,
before the oversized text is joined, so a small request cannot make a huge prompt. The work is
counted too, whatever it produces: every node, loop iteration, component expansion and
expression draws from the call's :class:`~templiqx_core.fuel.Fuel` (``TQX_FUEL_EXHAUSTED``),
and a cancelled call stops as fuel is drawn (``TQX_CANCELLED``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from templiqx_contracts import (
    AndExpr,
    CompiledInteraction,
    CompiledMessage,
    ComponentNode,
    Contract,
    Diagnostic,
    EqualsExpr,
    Expr,
    ForEachNode,
    IncludeNode,
    InterpolateNode,
    LiteralExpr,
    Node,
    NotExpr,
    OrExpr,
    RefExpr,
    RenderRequest,
    TextNode,
    WhenNode,
)
from templiqx_core import codes
from templiqx_core.components import component_content
from templiqx_core.equality import strict_json_equal
from templiqx_core.filters import RenderError, apply_filter, display
from templiqx_core.fuel import (
    CallCancelledError,
    Fuel,
    FuelExhaustedError,
    current_fuel,
    text_steps,
)
from templiqx_core.limits import MAX_COMPILED_BYTES, MAX_RENDERED_BYTES
from templiqx_core.static_types import parse_index

__all__ = ["compiled_size_problem", "render_messages"]

_MISSING: Final = object()
_EMPTY_LOCALS: Final[dict[str, Any]] = {}


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


# What a filter costs per KiB it reads, in steps (measured against a render step, ~0.5 us):
# case mapping ~3 us a KiB; `json` ~7 us a KiB of what it writes; `trim` ~50 us a KiB of the
# white space it removes (str.strip with a set of characters), almost nothing for the rest.
_CASE_STEPS_PER_KIB: Final = 8
_JSON_STEPS_PER_KIB: Final = 16
_TRIM_STEPS_PER_KIB: Final = 128


def _filter_steps(name: str, before: Any, after: str) -> int:
    """The steps a filter took: by the text it read (or, for ``json``, wrote)."""
    read = len(before) if isinstance(before, str) else len(after)
    if name == "trim":
        return text_steps(len(after)) + (read - len(after)) * _TRIM_STEPS_PER_KIB // 1024
    if name in ("upper", "lower"):
        return text_steps(read * _CASE_STEPS_PER_KIB)
    if name == "json":
        return text_steps(len(after) * _JSON_STEPS_PER_KIB)
    return text_steps(read)


def _equal(a: Any, b: Any, fuel: Fuel) -> bool:
    """Strict JSON equality (:func:`strict_json_equal`) that draws a step per value it walks
    and per KiB of text it compares, so repeated comparisons of large values are bounded."""
    if a is b and (type(a) is str or type(a) is int or a is None):
        return True  # common identity fast path (never a float: NaN is not equal to itself)
    pairs = [(a, b)]
    while pairs:
        left, right = pairs.pop()
        fuel.draw()
        if isinstance(left, (list, tuple)):
            if not isinstance(right, (list, tuple)) or len(left) != len(right):
                return False
            pairs.extend(zip(left, right, strict=True))
        elif isinstance(left, dict):
            if not isinstance(right, dict) or left.keys() != right.keys():
                return False
            fuel.draw(len(left))
            pairs.extend((value, right[key]) for key, value in left.items())
        else:
            if isinstance(left, str) and isinstance(right, str):
                fuel.draw(text_steps(min(len(left), len(right))))
            if not strict_json_equal(left, right):
                return False
    return True


class _Renderer:
    __slots__ = ("components", "context", "fuel", "left", "locale", "root", "stack")

    def __init__(self, contract: Contract, request: RenderRequest, fuel: Fuel) -> None:
        self.fuel = fuel
        self.components = contract.components
        self.context: Mapping[str, Any] = request.context
        self.root: dict[str, Any] = {"inputs": request.inputs, "context": request.context}
        locale = request.context.get("locale")
        self.locale = locale if isinstance(locale, str) else ""
        self.stack: list[str] = []
        self.left = MAX_RENDERED_BYTES  # bytes of message text still allowed

    def emit(self, text: str, out: list[str]) -> None:
        """Append ``text`` to ``out``, charged to the render budget."""
        self.charge(_utf8_size(text))
        out.append(text)

    def charge(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise RenderError(
                codes.RENDER_TOO_LARGE,
                f"the rendered messages exceed {MAX_RENDERED_BYTES} bytes "
                "(MAX_RENDERED_BYTES); a for_each or a component repeats more text than a "
                "request may produce",
            )

    # --- expressions ---------------------------------------------------------------------

    def resolve(self, path: str, local: Mapping[str, Any]) -> Any:
        segments = path.split(".")
        first = segments[0]
        # `inputs` and `context` always name the request scopes, as they do for validation
        # (the reference lets a local of that name shadow them at render time only).
        if first in self.root:
            current = self.root[first]
        elif first in local:
            current = local[first]
        else:
            raise RenderError(codes.VALUE_MISSING, f"reference '{path}' is missing")
        for segment in segments[1:]:
            if isinstance(current, dict):
                current = current.get(segment, _MISSING)
            elif isinstance(current, list):
                index = parse_index(segment)
                current = current[index] if index is not None and index < len(current) else _MISSING
            else:
                current = _MISSING
            if current is _MISSING:
                raise RenderError(codes.VALUE_MISSING, f"reference '{path}' is missing")
        return current

    def evaluate(self, expr: Expr, local: Mapping[str, Any]) -> Any:
        self.fuel.draw()
        if isinstance(expr, RefExpr):
            return self.resolve(expr.path, local)
        if isinstance(expr, LiteralExpr):
            return expr.value
        if isinstance(expr, EqualsExpr):
            left = self.evaluate(expr.left, local)
            return _equal(left, self.evaluate(expr.right, local), self.fuel)
        if isinstance(expr, NotExpr):
            return not self.boolean(expr.value, local)
        if isinstance(expr, AndExpr):
            return all(self.boolean(operand, local) for operand in expr.values)
        if isinstance(expr, OrExpr):
            return any(self.boolean(operand, local) for operand in expr.values)
        raise RenderError(codes.BOOLEAN_TYPE, "unknown expression kind")

    def boolean(self, expr: Expr, local: Mapping[str, Any]) -> bool:
        value = self.evaluate(expr, local)
        if not isinstance(value, bool):
            raise RenderError(
                codes.BOOLEAN_TYPE, "boolean expression resolved to a non-boolean value"
            )
        return value

    # --- nodes ---------------------------------------------------------------------------

    def nodes(self, nodes: list[Node], local: Mapping[str, Any], out: list[str]) -> None:
        draw = self.fuel.draw
        for node in nodes:
            draw()
            if isinstance(node, TextNode):
                self.emit(node.value, out)
            elif isinstance(node, InterpolateNode):
                value = self.evaluate(node.expression, local)
                for name in node.filters:
                    before = value
                    value = apply_filter(name, value, self.locale, self.context)
                    draw(_filter_steps(name, before, value))
                self.emit(display(value), out)
            elif isinstance(node, WhenNode):
                branch = node.then if self.boolean(node.condition, local) else node.else_
                self.nodes(branch, local, out)
            elif isinstance(node, ForEachNode):
                self.for_each(node, local, out)
            elif isinstance(node, ComponentNode):
                self.component(node, local, out)
            elif isinstance(node, IncludeNode):
                raise RenderError(
                    codes.INCLUDE_UNEXPANDED,
                    "include node reached rendering unexpanded "
                    "(composition layer must expand includes)",
                )

    def for_each(self, node: ForEachNode, local: Mapping[str, Any], out: list[str]) -> None:
        collection = self.evaluate(node.collection, local)
        if not isinstance(collection, list):
            raise RenderError(codes.FOR_EACH_TYPE, "for_each collection must resolve to an array")
        parts: list[str] = []
        separator = _utf8_size(node.separator)
        draw = self.fuel.draw
        for element in collection:
            draw()
            if parts:
                self.charge(separator)
            inner = dict(local)
            inner[node.item] = element
            body: list[str] = []
            self.nodes(node.body, inner, body)
            parts.append("".join(body))
        out.append(node.separator.join(parts))

    def component(self, node: ComponentNode, local: Mapping[str, Any], out: list[str]) -> None:
        name = node.name
        if name in self.stack:
            raise RenderError(codes.COMPONENT_CYCLE, f"component cycle at '{name}'")
        definition = self.components.get(name)
        if definition is None:
            raise RenderError(codes.COMPONENT_MISSING, f"unknown component '{name}'")
        # Lexical scope: the body sees its arguments only, never the caller's locals (the
        # reference copies the caller's locals; see docs/decisions/core-semantics.md).
        self.fuel.draw()
        arguments = {key: self.evaluate(node.with_[key], local) for key in sorted(node.with_)}
        self.stack.append(name)
        self.nodes(component_content(definition), arguments, out)
        self.stack.pop()


def render_messages(
    contract: Contract, request: RenderRequest, fuel: Fuel | None = None
) -> tuple[list[CompiledMessage] | None, list[Diagnostic]]:
    """Render every message of a contract with a request, without validating either.

    Returns ``(messages, [])`` on success or ``(None, [diagnostic])`` for the first render
    failure. Call it on a validated contract and request (``compile_interaction`` does); on
    unvalidated input it still never raises. ``fuel`` is the budget to draw from (default: the
    running call's, :func:`~templiqx_core.fuel.current_fuel`).
    """
    renderer = _Renderer(contract, request, fuel if fuel is not None else current_fuel())
    messages: list[CompiledMessage] = []
    try:
        renderer.fuel.check()  # a call cancelled before it renders does not start
        for message in contract.messages:
            parts: list[str] = []
            renderer.nodes(message.content, _EMPTY_LOCALS, parts)
            messages.append(CompiledMessage(role=message.role, content="".join(parts)))
    except (RenderError, FuelExhaustedError, CallCancelledError) as error:
        return None, [error.diagnostic]
    except RecursionError:
        return None, [
            codes.problem(codes.CONTENT_TOO_DEEP, "the content nests too deeply to render", "")
        ]
    return messages, []


_encode_json: Final = msgspec.json.Encoder().encode


def compiled_size_problem(interaction: CompiledInteraction) -> Diagnostic | None:
    """``TQX_RENDER_TOO_LARGE`` when ``interaction`` is larger than ``MAX_COMPILED_BYTES``.

    Its size is the UTF-8 size of the rendered messages plus the JSON of what the contract adds
    (output schema, runtime policy, extension values). A part that cannot be encoded is left to
    fingerprinting, which reports it.
    """
    size = sum(_utf8_size(message.content) for message in interaction.messages)
    if size <= MAX_COMPILED_BYTES:
        parts = (interaction.output_schema, interaction.runtime_policy, interaction.extensions)
        try:
            size += len(_encode_json(parts))
        except (TypeError, ValueError, OverflowError):
            return None
    if size <= MAX_COMPILED_BYTES:
        return None
    return codes.problem(
        codes.RENDER_TOO_LARGE,
        f"the compiled request takes more than {MAX_COMPILED_BYTES} bytes "
        "(MAX_COMPILED_BYTES) with the contract's output schema, runtime policy and extensions",
    )
