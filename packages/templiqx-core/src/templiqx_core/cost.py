"""What rendering a contract provably costs: the fewest fuel steps any render of it draws.

Rendering draws a step per content node, per ``for_each`` iteration and per component
expansion (:mod:`templiqx_core.fuel`). Some of that is fixed by the contract alone: a component
always renders its whole body, a ``when`` renders at least its cheaper branch, a ``for_each``
over a literal list renders its body once per element (over anything else it may run zero
times). :func:`minimum_steps` adds that up, so validation can refuse a contract whose every
render needs more than the budget (a chain of components each calling the next twice needs
2**depth steps, however small its text) before any request is rendered.

The count is a lower bound: it leaves out expressions, filters and loops whose length only the
request decides, so a contract that passes may still run out of fuel at render time.
"""

from __future__ import annotations

from collections.abc import Mapping

from templiqx_contracts import (
    ComponentDefinition,
    ComponentNode,
    Contract,
    ForEachNode,
    LiteralExpr,
    Node,
    WhenNode,
)
from templiqx_core.components import component_content

__all__ = ["minimum_steps"]


class _Counter:
    def __init__(self, components: Mapping[str, ComponentDefinition], cap: int) -> None:
        self._components = components
        self._cap = cap
        self._known: dict[str, int] = {}
        self._open: set[str] = set()

    def nodes(self, nodes: list[Node]) -> int:
        total = 0
        for node in nodes:
            total += 1 + self._inside(node)
            if total > self._cap:
                return self._cap + 1
        return total

    def _inside(self, node: Node) -> int:
        if isinstance(node, WhenNode):
            return min(self.nodes(node.then), self.nodes(node.else_))
        if isinstance(node, ForEachNode):
            collection = node.collection
            if isinstance(collection, LiteralExpr) and isinstance(collection.value, list):
                count = len(collection.value)
                return min(count * (1 + self.nodes(node.body)), self._cap + 1) if count else 0
            return 0
        if isinstance(node, ComponentNode):
            return 1 + self.component(node.name)
        return 0

    def component(self, name: str) -> int:
        known = self._known.get(name)
        if known is not None:
            return known
        definition = self._components.get(name)
        if definition is None or name in self._open:
            return 0  # an unknown component or a cycle: validation reports it
        self._open.add(name)
        try:
            steps = self.nodes(component_content(definition))
        finally:
            self._open.discard(name)
        self._known[name] = steps
        return steps


def minimum_steps(contract: Contract, cap: int) -> tuple[int, int | None]:
    """The fewest steps rendering ``contract`` takes, and the message where it passes ``cap``.

    Counting stops once ``cap`` is exceeded: the first value is then ``cap + 1`` and the second
    the index of the message where the total went over it (``None`` when it did not).
    """
    counter = _Counter(contract.components, cap)
    total = 0
    for index, message in enumerate(contract.messages):
        total += counter.nodes(message.content)
        if total > cap:
            return cap + 1, index
    return total, None
