"""Contract authoring: inspect, put (create or replace), delete, diff and explain.

The compare-and-swap token of a contract is the fingerprint ``inspect_contract`` reports: the
contract as loaded, with tool-contract references resolved and includes expanded
(DECISIONS 13). The store holds the package lock while it calls the guard built here with the
current source; the guard recomputes the token from that source and refuses a stale write.
"""

from __future__ import annotations

from templiqx_application.context import ServiceContext, envelope, port_failure
from templiqx_application.diagnostics import (
    address,
    contract_file,
    error,
    fingerprint_or_diagnostic,
)
from templiqx_application.loading import LoadedContract
from templiqx_contracts import ContractSummary, OperationEnvelope, has_errors, quote_input
from templiqx_core import diff_contracts
from templiqx_core import explain_contract as core_explain_contract
from templiqx_core import validate_contract as core_validate_contract
from templiqx_ports import ConflictError, ContractGuard, NotFoundError, PortError

__all__ = [
    "delete_contract",
    "diff_contract",
    "explain_contract",
    "inspect_contract",
    "inspect_contract_text",
    "put_contract",
]


def inspect_contract(ctx: ServiceContext, package: str, contract: str) -> OperationEnvelope:
    """The loaded contract; fingerprint ``contract`` (its compare-and-swap token).

    A stored contract that does not load still reports its token (the fingerprint of its
    source text) beside the diagnostics, so it can be repaired with ``put_contract``.
    """
    return _inspected(ctx.loader.load(package, contract))


def inspect_contract_text(
    ctx: ServiceContext, package: str, contract: str
) -> tuple[OperationEnvelope, str | None]:
    """``inspect_contract``'s envelope and the stored text it was loaded from.

    The text is there whenever it could be read, also when it does not load (its diagnostics
    point into it), so an editor can show the problems where they are; ``None`` when the
    contract cannot be read at all (the envelope says why).
    """
    loaded = ctx.loader.load(package, contract)
    return _inspected(loaded), loaded.source


def _inspected(loaded: LoadedContract) -> OperationEnvelope:
    operation = "inspect_contract"
    token = loaded.token
    fingerprints = {"contract": token} if token is not None else {}
    if loaded.contract is None:
        return envelope(operation, diagnostics=loaded.diagnostics, fingerprints=fingerprints)
    if token is None:
        _, problems = fingerprint_or_diagnostic(loaded.contract)
        return envelope(operation, diagnostics=problems)
    return envelope(operation, result=loaded.contract, fingerprints=fingerprints)


def _guard(ctx: ServiceContext, package: str, contract: str, expected: str | None) -> ContractGuard:
    def check(current: str | None) -> None:
        if current is None:
            if expected is not None:
                raise ConflictError("contract does not exist")
            return
        if expected is None:
            raise ConflictError("contract already exists; provide expected_fingerprint")
        actual = ctx.loader.load_source(package, contract, current).token
        if actual != expected:
            raise ConflictError(f"expected {expected}, found {actual}")

    return check


def put_contract(
    ctx: ServiceContext,
    package: str,
    contract: str,
    source: str,
    expected_fingerprint: str | None,
) -> OperationEnvelope:
    """Write a contract after loading and validating the new source through the pipeline."""
    operation = "put_contract"
    loaded = ctx.loader.load_source(package, contract, source)
    if loaded.contract is None:
        return envelope(operation, diagnostics=loaded.diagnostics)
    diagnostics = address(
        core_validate_contract(loaded.contract), package, contract, source=loaded.source
    )
    if has_errors(diagnostics):
        return envelope(operation, diagnostics=diagnostics)
    if loaded.contract.id != contract:
        return envelope(
            operation,
            diagnostics=[
                error(
                    "TQX_DATA_INVALID",
                    f"invalid data: contract id {quote_input(loaded.contract.id)} does not match "
                    f"inventory id '{contract}'",
                    "/id",
                )
            ],
        )
    token, problems = fingerprint_or_diagnostic(loaded.contract)
    if token is None:
        return envelope(operation, diagnostics=diagnostics + problems)
    try:
        ctx.store.put_contract(
            package, contract, source, guard=_guard(ctx, package, contract, expected_fingerprint)
        )
    except PortError as exc:
        return port_failure(operation, exc)
    summary = ContractSummary(
        package=package, id=loaded.contract.id, version=loaded.contract.version, fingerprint=token
    )
    return envelope(
        operation, result=summary, diagnostics=diagnostics, fingerprints={"contract": token}
    )


def delete_contract(
    ctx: ServiceContext, package: str, contract: str, expected_fingerprint: str
) -> OperationEnvelope:
    """Delete a contract whose token matches; the result summarizes what was deleted."""
    operation = "delete_contract"
    deleted: list[LoadedContract] = []

    def check(current: str | None) -> None:
        if current is None:
            raise NotFoundError(contract_file(package, contract))
        loaded = ctx.loader.load_source(package, contract, current)
        if loaded.token != expected_fingerprint:
            raise ConflictError(f"expected {expected_fingerprint}, found {loaded.token}")
        deleted.append(loaded)

    try:
        ctx.store.delete_contract(package, contract, guard=check)
    except PortError as exc:
        return port_failure(operation, exc)
    if not deleted:
        # A store must show the guard what it deletes; one that did not removed nothing.
        return envelope(
            operation,
            diagnostics=[error("TQX_NOT_FOUND", f"not found: {contract_file(package, contract)}")],
        )
    loaded = deleted[0]
    summary = ContractSummary(
        package=package,
        id=loaded.contract.id if loaded.contract is not None else contract,
        version=loaded.contract.version if loaded.contract is not None else "",
        fingerprint=expected_fingerprint,
    )
    return envelope(operation, result=summary, fingerprints={"contract": expected_fingerprint})


def diff_contract(
    ctx: ServiceContext,
    left_package: str,
    left_contract: str,
    right_package: str,
    right_contract: str,
) -> OperationEnvelope:
    """Compare two loaded contracts."""
    operation = "diff_contract"
    left = ctx.loader.load(left_package, left_contract)
    if left.contract is None:
        return envelope(operation, diagnostics=left.diagnostics)
    right = ctx.loader.load(right_package, right_contract)
    if right.contract is None:
        return envelope(operation, diagnostics=right.diagnostics)
    return envelope(operation, result=diff_contracts(left.contract, right.contract))


def explain_contract(ctx: ServiceContext, package: str, contract: str) -> OperationEnvelope:
    """Explain a loaded contract (no validation, no fingerprints)."""
    operation = "explain_contract"
    loaded = ctx.loader.load(package, contract)
    if loaded.contract is None:
        return envelope(operation, diagnostics=loaded.diagnostics)
    return envelope(operation, result=core_explain_contract(loaded.contract))
