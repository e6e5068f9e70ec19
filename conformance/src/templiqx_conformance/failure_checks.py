"""``failure.projection``: every failure the adapter can be driven into, through both calls.

The cases are the author's :class:`~templiqx_conformance.FailureCase` values plus, over a wire,
the kit's own (HTTP errors, non-JSON structured content, an in-band error and a dropped
connection once deltas went out). An adapter that overrides ``execute_streaming`` and offers no
case at all is not conformant: its failure projection would go unproven.
"""

from __future__ import annotations

from templiqx_conformance.context import (
    BrokenInvariantError,
    CheckContext,
    NotApplicableError,
    fail_if,
)
from templiqx_conformance.probes import STRUCTURED_OUTPUT, Probe
from templiqx_conformance.recording import describe_error, run_execute, run_streaming
from templiqx_conformance.rig import DrivenFailure
from templiqx_conformance.verdicts import check_failed_stream
from templiqx_ports import PortError

__all__ = ["driving_probe", "failure_projection", "run_driven_failure"]


def driving_probe(ctx: CheckContext) -> Probe:
    """The probe failures are driven with: the structured one if declared, else the first."""
    probes = ctx.probes()
    return next((p for p in probes if p.capability == STRUCTURED_OUTPUT), probes[0])


def run_driven_failure(ctx: CheckContext, case: DrivenFailure) -> list[str]:
    """Drive one failure through ``execute`` and ``execute_streaming``; return the problems."""
    if case.capability is not None and case.capability not in ctx.descriptor().capabilities:
        return []
    probe = driving_probe(ctx)
    problems: list[str] = []
    request = ctx.request(probe)
    if case.prepare is not None:
        request = case.prepare(request)
    for mode in case.modes:
        if case.arrange is not None:
            case.arrange(request)
        try:
            made = case.make_adapter()
        except Exception as exc:
            problems.append(f"{case.label}: its adapter factory raised {describe_error(exc)}")
            return problems
        adapter = ctx.require_adapter(made, f"the factory of failure case {case.label!r}")
        label = f"{case.label} via {mode}"
        if mode == "execute":
            outcome = run_execute(adapter, request, ctx.timeout)
            if outcome.timed_out:
                problems.append(f"{label}: still running after {ctx.timeout:g} s")
            elif outcome.error is None:
                problems.append(f"{label}: the adapter did not fail (the case must make it fail)")
            elif not isinstance(outcome.error, PortError):
                problems.append(
                    f"{label}: adapters must raise templiqx_ports.PortError subclasses, "
                    f"got {describe_error(outcome.error)}"
                )
            elif case.code is not None and outcome.error.code != case.code:
                problems.append(
                    f"{label}: raised code {outcome.error.code!r}, expected {case.code!r}"
                )
            continue
        outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
        if outcome.timed_out:
            problems.append(f"{label}: still running after {ctx.timeout:g} s")
            continue
        found, _ = check_failed_stream(label, outcome, case.code)
        problems.extend(found)
    return problems


def failure_projection(ctx: CheckContext) -> None:
    cases = ctx.rig.failures()
    if not cases:
        if ctx.streams_by_default(ctx.new_adapter()):
            raise NotApplicableError(
                "no failure cases were supplied, and the adapter keeps the port's default "
                "execute_streaming, which projects every failure by construction"
            )
        raise BrokenInvariantError(
            "an adapter that overrides execute_streaming must show how it projects failures, "
            "but no failure cases were supplied: give FailureCase values (the "
            "templiqx_failure_cases fixture, or failures=...) for the failures it can be driven "
            "into, at least one of them after deltas went out; or run it against the kit's "
            "server with a transport (a Wire), which drives failures itself"
        )
    problems: list[str] = []
    for case in cases:
        problems.extend(run_driven_failure(ctx, case))
    fail_if(
        "a failure must be projected as exactly one Failed whose code and message equal the "
        "raised error's, with nothing after it (also once deltas went out)",
        problems,
    )
