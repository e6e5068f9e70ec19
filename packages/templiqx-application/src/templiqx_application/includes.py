"""Expanding ``include`` nodes: splicing partials (YAML node lists) into contract content.

A partial is read from the including package, or from ``from_dependency`` when given (any
package under the same root). Nested includes resolve inside the partial's own package. The
expansion stack is fresh for every message and every component, so the same partial may be
included twice side by side, but never inside itself. ``when`` branches and ``for_each`` bodies
are expanded too; ``component`` nodes are not (component bodies are expanded on their own).

Expansion is bounded by what it produces, not only by how many includes it follows: the
expanded content of one contract (messages and components together) holds at most
:data:`MAX_SPLICED_NODES` nodes, and every node it produces draws a step of the call's render
fuel (:mod:`templiqx_core.fuel`), so a contract including a partial 99 times that includes
another 100 times (under :data:`MAX_INCLUDE_EXPANSIONS`) is refused in milliseconds instead of
building hundreds of thousands of nodes.

Every include is checked against what the package's signatures cover
(:mod:`templiqx_application.coverage`) before the partial is read: in strict mode an uncovered
partial is refused (``TQX_PACKAGE_FILE_UNLISTED`` / ``TQX_PACKAGE_DEPENDENCY_UNPINNED``); an
audit reports each one as a warning instead.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from templiqx_application.coverage import Coverage
from templiqx_application.diagnostics import contract_file, error, with_file
from templiqx_application.signing import strict_from_environment
from templiqx_contracts import (
    Contract,
    Diagnostic,
    ForEachNode,
    IncludeNode,
    MessageTemplate,
    Node,
    PackageManifest,
    TypedComponent,
    WhenNode,
)
from templiqx_core import parse_contract, parse_node_list
from templiqx_core.fuel import Fuel, FuelExhaustedError, current_fuel
from templiqx_ports import PackageStore, PortError

__all__ = [
    "MAX_INCLUDE_DEPTH",
    "MAX_INCLUDE_EXPANSIONS",
    "MAX_SPLICED_NODES",
    "IncludeError",
    "expand_includes",
    "package_coverage",
    "uncovered_includes",
]

MAX_INCLUDE_EXPANSIONS = 10_000
"""How many include nodes one contract load may splice (guards against exponential fan-out)."""

MAX_INCLUDE_DEPTH = 64
"""How deeply includes may nest."""

MAX_SPLICED_NODES = 100_000
"""How many content nodes one contract may hold once its includes are spliced (messages and
component bodies together, every node of every nested list counted)."""


class IncludeError(Exception):
    """Expansion stopped; ``diagnostic`` says why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic

    def placed(self, pointer: str | None) -> IncludeError:
        """The error placed at ``pointer`` (the contract's include node that led to it), unless
        it names a file of its own (a partial that does not parse) or is placed already."""
        found = self.diagnostic
        if pointer is None or found.file is not None or found.json_pointer:
            return self
        return IncludeError(msgspec.structs.replace(found, json_pointer=pointer))


def _below(pointer: str | None, key: str) -> str | None:
    return f"{pointer}/{key}" if pointer is not None else None


class _Expander:
    def __init__(
        self, store: PackageStore, coverage: Coverage | None, strict: bool, fuel: Fuel
    ) -> None:
        self._store = store
        self._partials: dict[str, list[Node]] = {}
        self._expansions = 0
        self._nodes = 0
        self._fuel = fuel
        self._coverage = coverage
        self._strict = strict
        self.uncovered: dict[str, Diagnostic] = {}  # by included file, as warnings

    def nodes(
        self, nodes: list[Node], package: str, stack: list[str], base: str | None = None
    ) -> list[Node]:
        """``nodes`` with their includes spliced. ``base`` is the JSON pointer of the list in
        the contract's own text (``None`` inside a partial): a problem met while expanding an
        include of the contract is placed at that include node."""
        out: list[Node] = []
        for index, node in enumerate(nodes):
            here = f"{base}/{index}" if base is not None else None
            if not isinstance(node, IncludeNode):
                self._count(node, stack)
            if isinstance(node, IncludeNode):
                try:
                    out.extend(self._include(node, package, stack))
                except IncludeError as exc:
                    raise exc.placed(here) from None
            elif isinstance(node, WhenNode):
                out.append(
                    msgspec.structs.replace(
                        node,
                        then=self.nodes(node.then, package, stack, _below(here, "then")),
                        else_=self.nodes(node.else_, package, stack, _below(here, "else")),
                    )
                )
            elif isinstance(node, ForEachNode):
                body = self.nodes(node.body, package, stack, _below(here, "body"))
                out.append(msgspec.structs.replace(node, body=body))
            else:
                out.append(node)
        return out

    def _count(self, node: Node, stack: list[str]) -> None:
        """One more node in the expanded content: within the limit, and paid for in fuel."""
        self._nodes += 1
        if self._nodes > MAX_SPLICED_NODES:
            where = f" (in '{stack[-1]}')" if stack else ""
            raise IncludeError(
                error(
                    "TQX_INCLUDE_INVALID",
                    f"the contract holds more than {MAX_SPLICED_NODES} content nodes once its "
                    f"includes are spliced{where} (MAX_SPLICED_NODES); include large partials "
                    "fewer times, or loop over data instead of repeating content",
                )
            )
        self._fuel.draw(1, "splicing includes")

    def _include(self, node: IncludeNode, package: str, stack: list[str]) -> list[Node]:
        target = node.from_dependency if node.from_dependency is not None else package
        key = f"{target}::{node.path}"
        if key in stack:
            raise IncludeError(error("TQX_INCLUDE_CYCLE", f"include cycle detected at '{key}'"))
        if len(stack) >= MAX_INCLUDE_DEPTH:
            raise IncludeError(
                error(
                    "TQX_INCLUDE_INVALID",
                    f"include '{key}' nests deeper than {MAX_INCLUDE_DEPTH} levels",
                )
            )
        self._expansions += 1
        if self._expansions > MAX_INCLUDE_EXPANSIONS:
            raise IncludeError(
                error(
                    "TQX_INCLUDE_INVALID",
                    f"include '{key}' exceeds the limit of {MAX_INCLUDE_EXPANSIONS} include "
                    "expansions per contract",
                )
            )
        self._check_coverage(package, target, node.path)
        partial = self._partial(target, node.path, key)
        stack.append(key)
        try:
            return self.nodes(partial, target, stack)
        finally:
            stack.pop()

    def _check_coverage(self, package: str, target: str, path: str) -> None:
        if self._coverage is None:
            return
        label = f"{target}/{path}"
        if label in self.uncovered:
            return
        problem = self._coverage.include_problem(package, target, path)
        if problem is None:
            return
        problem = with_file(problem, label)
        if self._strict:
            raise IncludeError(problem)
        self.uncovered[label] = msgspec.structs.replace(problem, severity="warning")

    def _partial(self, target: str, path: str, key: str) -> list[Node]:
        cached = self._partials.get(key)
        if cached is not None:
            return cached
        try:
            data = self._store.artifact_bytes(target, path)
        except PortError as exc:
            raise IncludeError(
                error("TQX_INCLUDE_UNRESOLVED", f"cannot resolve include '{key}': {exc}")
            ) from exc
        label = f"{target}/{path}"
        nodes, diagnostics = parse_node_list(data, file=label)  # bytes: bad UTF-8 is located
        if nodes is None:
            first = diagnostics[0] if diagnostics else None
            detail = first.message if first is not None else "unknown parse error"
            raise IncludeError(
                msgspec.structs.replace(
                    error(
                        "TQX_INCLUDE_INVALID",
                        f"include '{key}' is not a valid node list: {detail}",
                    ),
                    file=label,
                    span=first.span if first is not None else None,
                )
            )
        self._partials[key] = nodes
        return nodes


def expand_includes(
    store: PackageStore,
    contract: Contract,
    package: str,
    *,
    strict: bool | None = None,
    audit: bool = False,
) -> tuple[Contract | None, list[Diagnostic]]:
    """The contract with every include spliced, or the diagnostic that stopped expansion.

    ``strict`` (default: ``TEMPLIQX_PACKAGE_STRICT=1`` in the environment) refuses an include
    that the package's signatures do not cover. With ``audit``, each such include is returned
    as a warning beside the expanded contract (once per file) instead. Every node produced draws
    from the running call's fuel; a cancelled call raises
    :class:`~templiqx_core.fuel.CallCancelledError`.
    """
    strict = strict_from_environment() if strict is None else strict
    coverage = Coverage(store) if strict or audit else None
    expander = _Expander(store, coverage, strict, current_fuel())
    try:
        messages = [
            msgspec.structs.replace(
                message,
                content=expander.nodes(message.content, package, [], f"/messages/{i}/content"),
            )
            for i, message in enumerate(contract.messages)
        ]
        components: dict[str, TypedComponent | list[Node]] = {}
        for name, definition in contract.components.items():
            # a component's body is addressed as /components/<name>/<i>, typed or not (core)
            base = f"/components/{name}"
            if isinstance(definition, TypedComponent):
                components[name] = msgspec.structs.replace(
                    definition, content=expander.nodes(definition.content, package, [], base)
                )
            else:
                components[name] = expander.nodes(definition, package, [], base)
    except (IncludeError, FuelExhaustedError) as exc:
        return None, [exc.diagnostic]
    return _replace_body(contract, messages, components), list(expander.uncovered.values())


def _replace_body(
    contract: Contract,
    messages: list[MessageTemplate],
    components: dict[str, TypedComponent | list[Node]],
) -> Contract:
    return msgspec.structs.replace(contract, messages=messages, components=components)


def uncovered_includes(
    store: PackageStore,
    package: str,
    contract_id: str,
    source: str,
    *,
    parsed: Contract | None = None,
) -> list[Diagnostic]:
    """Warnings for the included files of one contract that the signatures do not cover.

    Empty when the contract does not parse or expand (loading it reports why). ``parsed``:
    ``source`` already parsed (a load's
    :attr:`~templiqx_application.loading.LoadedContract.parsed`), not parsed again.
    """
    if parsed is None:
        parsed, _ = parse_contract(source, file=contract_file(package, contract_id))
    if parsed is None:
        return []
    expanded, diagnostics = expand_includes(store, parsed, package, strict=False, audit=True)
    return diagnostics if expanded is not None else []


def package_coverage(
    store: PackageStore,
    package: str,
    manifest: PackageManifest,
    *,
    strict: bool,
    parsed: Mapping[str, tuple[str, Contract]] | None = None,
) -> list[Diagnostic]:
    """Every uncovered file the listed contracts include, once each: errors when ``strict``.

    ``parsed``: contract id -> (its source, that source parsed) for contracts the caller has
    already read and parsed in this call; the others are read from ``store`` and parsed.
    """
    found: dict[str, Diagnostic] = {}
    for contract_id in manifest.contracts:
        known = parsed.get(contract_id) if parsed is not None else None
        if known is not None:
            source, contract = known
            uncovered = uncovered_includes(store, package, contract_id, source, parsed=contract)
        else:
            try:
                source = store.contract_source(package, contract_id)
            except PortError:
                continue  # validating the package reports it
            uncovered = uncovered_includes(store, package, contract_id, source)
        for diagnostic in uncovered:
            found.setdefault(diagnostic.file or diagnostic.message, diagnostic)
    severity = "error" if strict else "warning"
    return [msgspec.structs.replace(d, severity=severity) for d in found.values()]
