"""Component facts shared by validation, rendering and explain.

* the content of a definition (typed or legacy);
* the inferred parameters of a legacy component;
* the component names a node list references;
* cycle detection over the component graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from templiqx_contracts import (
    AndExpr,
    ComponentDefinition,
    ComponentNode,
    EqualsExpr,
    Expr,
    ForEachNode,
    InterpolateNode,
    Node,
    NotExpr,
    OrExpr,
    RefExpr,
    TypedComponent,
    WhenNode,
)

__all__ = [
    "component_content",
    "find_component_cycle",
    "legacy_arguments",
    "referenced_components",
]

_SCOPES = frozenset({"inputs", "context"})


def component_content(definition: ComponentDefinition) -> list[Node]:
    """The nodes a component renders."""
    if isinstance(definition, TypedComponent):
        return definition.content
    return definition


def _expression_roots(expr: Expr, bound: set[str], out: set[str]) -> None:
    if isinstance(expr, RefExpr):
        root = expr.path.split(".", 1)[0]
        if root not in _SCOPES and root not in bound:
            out.add(root)
    elif isinstance(expr, EqualsExpr):
        _expression_roots(expr.left, bound, out)
        _expression_roots(expr.right, bound, out)
    elif isinstance(expr, NotExpr):
        _expression_roots(expr.value, bound, out)
    elif isinstance(expr, (AndExpr, OrExpr)):
        for operand in expr.values:
            _expression_roots(operand, bound, out)


def _node_roots(nodes: Iterable[Node], bound: set[str], out: set[str]) -> None:
    for node in nodes:
        if isinstance(node, InterpolateNode):
            _expression_roots(node.expression, bound, out)
        elif isinstance(node, WhenNode):
            _expression_roots(node.condition, bound, out)
            _node_roots(node.then, bound, out)
            _node_roots(node.else_, bound, out)
        elif isinstance(node, ForEachNode):
            _expression_roots(node.collection, bound, out)
            newly_bound = node.item not in bound
            bound.add(node.item)
            _node_roots(node.body, bound, out)
            if newly_bound:
                bound.discard(node.item)
        elif isinstance(node, ComponentNode):
            for argument in node.with_.values():
                _expression_roots(argument, bound, out)


def legacy_arguments(nodes: Iterable[Node]) -> list[str]:
    """The inferred (required, string-typed) parameters of a legacy component, sorted.

    Every ``ref`` root that is not ``inputs``/``context`` and not bound by a ``for_each`` inside
    the component is an argument.
    """
    found: set[str] = set()
    _node_roots(nodes, set(), found)
    return sorted(found)


def _walk_references(nodes: Iterable[Node]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, ComponentNode):
            yield node.name
        elif isinstance(node, WhenNode):
            yield from _walk_references(node.then)
            yield from _walk_references(node.else_)
        elif isinstance(node, ForEachNode):
            yield from _walk_references(node.body)


def referenced_components(nodes: Iterable[Node]) -> set[str]:
    """Names used by ``component`` nodes, descending into ``when`` and ``for_each``."""
    return set(_walk_references(nodes))


def find_component_cycle(components: Mapping[str, ComponentDefinition]) -> str | None:
    """The first component found on a cycle (depth first, names in sorted order), if any."""
    graph = {
        name: sorted(referenced_components(component_content(definition)))
        for name, definition in components.items()
    }
    finished: set[str] = set()
    for root in sorted(graph):
        in_progress: set[str] = set()
        # Iterative depth-first search: each frame is (name, iterator over its neighbours).
        stack: list[tuple[str, Iterator[str]]] = []
        if root in finished:
            continue
        in_progress.add(root)
        stack.append((root, iter(graph[root])))
        while stack:
            name, neighbours = stack[-1]
            advanced = False
            for neighbour in neighbours:
                if neighbour in in_progress:
                    return neighbour
                if neighbour in finished or neighbour not in graph:
                    continue
                in_progress.add(neighbour)
                stack.append((neighbour, iter(graph[neighbour])))
                advanced = True
                break
            if not advanced:
                stack.pop()
                in_progress.discard(name)
                finished.add(name)
    return None
