"""Evals: the inline ``evals:`` fixtures of each contract, always run on the fake runtime.

Whatever runtime the service is composed with, evals never call a live model (DECISIONS 14):
each fixture's ``fake_output`` is what the deterministic fake runtime returns, and the case
passes when the execution envelope is ok. A contract is loaded once for all its fixtures (the
load that lists them is the one they run on).
"""

from __future__ import annotations

from templiqx_application.context import ServiceContext, envelope, port_failure
from templiqx_application.diagnostics import error
from templiqx_application.execution import execute_contract
from templiqx_application.loading import LoadedContract
from templiqx_contracts import (
    EvalCase,
    EvalFixture,
    OperationEnvelope,
    RenderRequest,
    TestCaseResult,
    TestReport,
    quote_input,
)
from templiqx_core import required_capabilities
from templiqx_ports import PortError

__all__ = ["list_evals", "run_eval", "run_fixture", "test_package"]


def run_fixture(
    ctx: ServiceContext,
    package: str,
    contract_id: str,
    fixture: EvalFixture,
    capabilities: list[str] | None,
    *,
    loaded: LoadedContract | None = None,
) -> TestCaseResult:
    """Execute one fixture on the fake runtime (``loaded``: the contract's load, if done)."""
    outcome = execute_contract(
        ctx,
        ctx.eval_runtime,
        package,
        contract_id,
        RenderRequest(inputs=dict(fixture.inputs), context=dict(fixture.context)),
        capabilities,
        fixture_output=fixture.fake_output,
        stream=False,
        loaded=loaded,
        package_data=True,  # the package's own fixture: not a caller's context
    )
    return TestCaseResult(
        contract_id=contract_id,
        fixture_id=fixture.id,
        passed=outcome.ok,
        diagnostics=outcome.diagnostics,
        artifact_fingerprint=outcome.fingerprints.get("output"),
    )


def test_package(
    ctx: ServiceContext, package: str, capabilities: list[str] | None
) -> OperationEnvelope:
    """Run every fixture of every listed contract, in manifest then fixture order."""
    operation = "test_package"
    try:
        manifest = ctx.store.manifest(package)
    except PortError as exc:
        return port_failure(operation, exc)
    cases: list[TestCaseResult] = []
    for contract_id in manifest.contracts:
        loaded = ctx.loader.load(package, contract_id, manifest=manifest)
        if loaded.contract is None:
            cases.append(
                TestCaseResult(
                    contract_id=contract_id,
                    fixture_id="",
                    passed=False,
                    diagnostics=loaded.diagnostics,
                    artifact_fingerprint=None,
                )
            )
            continue
        for fixture in loaded.contract.evals:
            cases.append(
                run_fixture(ctx, package, contract_id, fixture, capabilities, loaded=loaded)
            )
    passed = sum(1 for case in cases if case.passed)
    failed = len(cases) - passed
    diagnostics = (
        [error("TQX_TEST_FAILED", f"{failed} fixture(s) failed", "/cases")] if failed else []
    )
    report = TestReport(package=package, passed=passed, failed=failed, cases=cases)
    return envelope(operation, result=report, diagnostics=diagnostics)


def list_evals(ctx: ServiceContext, package: str) -> OperationEnvelope:
    """Every (contract, fixture) pair of the package with the capabilities its contract
    requires; load failures become diagnostics."""
    operation = "list_evals"
    try:
        manifest = ctx.store.manifest(package)
    except PortError as exc:
        return port_failure(operation, exc)
    cases: list[EvalCase] = []
    diagnostics = []
    for contract_id in manifest.contracts:
        loaded = ctx.loader.load(package, contract_id, manifest=manifest)
        if loaded.contract is None:
            diagnostics.extend(loaded.diagnostics)
            continue
        required = required_capabilities(loaded.contract)
        cases.extend(
            EvalCase(contract_id=contract_id, fixture_id=fixture.id, required_capabilities=required)
            for fixture in loaded.contract.evals
        )
    return envelope(operation, result=cases, diagnostics=diagnostics)


def run_eval(
    ctx: ServiceContext,
    package: str,
    contract: str,
    fixture_id: str,
    capabilities: list[str] | None,
) -> OperationEnvelope:
    """Run one fixture; the case is the result, and a failure adds ``TQX_TEST_FAILED``."""
    operation = "run_eval"
    loaded = ctx.loader.load(package, contract)
    if loaded.contract is None:
        return envelope(operation, diagnostics=loaded.diagnostics)
    fixture = next((f for f in loaded.contract.evals if f.id == fixture_id), None)
    if fixture is None:
        return envelope(
            operation,
            diagnostics=[
                error(
                    "TQX_NOT_FOUND",
                    f"eval fixture {quote_input(fixture_id)} not found for contract '{contract}'",
                    "/evals",
                )
            ],
        )
    case = run_fixture(ctx, package, contract, fixture, capabilities, loaded=loaded)
    diagnostics = (
        [] if case.passed else [error("TQX_TEST_FAILED", f"fixture '{fixture_id}' failed", "/case")]
    )
    return envelope(operation, result=case, diagnostics=diagnostics)
