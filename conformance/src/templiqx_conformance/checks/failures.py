"""``failure.projection``: every failure the adapter can be driven into, through both calls.

The cases are the author's :class:`~templiqx_conformance.FailureCase` values plus the kit's own:
over a wire, HTTP errors, non-JSON structured content and a connection dropped once deltas went
out; in fixture mode — where the kit's only lever is the cancel token — a stream cancelled when
its first delta arrives, whenever no author case already fails after deltas. So the projection
*after deltas* (the one adapters forget) is always exercised for an adapter that streams, and a
check that could exercise nothing says so instead of passing.
"""

from __future__ import annotations

import threading
from typing import Any

from templiqx_conformance.checks.context import CheckContext, NotApplicableError, fail_if
from templiqx_conformance.checks.verdicts import check_failed_stream
from templiqx_conformance.probes import STRUCTURED_OUTPUT, Probe
from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig.rig import DrivenFailure
from templiqx_contracts import Delta, Failed, ToolCallDelta
from templiqx_ports import PortError

__all__ = ["driving_probe", "failure_projection", "run_driven_failure"]


def driving_probe(ctx: CheckContext) -> Probe:
    """The probe failures are driven with: the structured one if declared, else the first."""
    probes = ctx.probes()
    return next((p for p in probes if p.capability == STRUCTURED_OUTPUT), probes[0])


def _deltas_before_failed(outcome: Outcome) -> int:
    count = 0
    for event in outcome.events:
        if isinstance(event, Failed):
            return count
        count += isinstance(event, (Delta, ToolCallDelta))
    return 0


def run_driven_failure(
    ctx: CheckContext, case: DrivenFailure, after_deltas: list[bool] | None = None
) -> list[str]:
    """Drive one failure through ``execute`` and ``execute_streaming``; return the problems.

    ``after_deltas`` (if given) gets ``True`` appended when the stream failed once deltas had
    gone out.
    """
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
        if after_deltas is not None and outcome.error is not None:
            after_deltas.append(
                _deltas_before_failed(outcome) > 0
                or any(isinstance(e, (Delta, ToolCallDelta)) for e in outcome.events)
            )
    return problems


def _cancelled_at_first_delta(ctx: CheckContext) -> tuple[bool, list[str]]:
    """The kit's own failure after deltas (fixture mode): a token set when the first delta
    arrives. Returns whether a failure was driven, and the problems with its projection. An
    adapter that ignores the token is ``cancellation.token``'s finding, not this check's."""
    for probe in ctx.probes():
        token = threading.Event()

        def on_event(event: Any, token: threading.Event = token) -> None:
            if isinstance(event, (Delta, ToolCallDelta)):
                token.set()

        outcome = ctx.stream(probe, cancel=token, on_event=on_event, grace=0.05)
        if not token.is_set():
            continue  # no delta for this probe: try the next
        if outcome.error is None:
            return False, []
        label = f"cancelled when the first delta arrived ({probe.name}) via execute_streaming"
        return True, check_failed_stream(label, outcome, None)[0]
    return False, []


def failure_projection(ctx: CheckContext) -> None:
    cases = ctx.rig.failures()
    default = ctx.streams_by_default(ctx.new_adapter())
    problems: list[str] = []
    after_deltas: list[bool] = []
    for case in cases:
        problems.extend(run_driven_failure(ctx, case, after_deltas))
    exercised = bool(cases)
    if not default and not any(after_deltas) and ctx.rig.with_fixture:
        driven, found = _cancelled_at_first_delta(ctx)
        problems.extend(found)
        exercised = exercised or driven
    fail_if(
        "a failure must be projected as exactly one Failed whose code and message equal the "
        "raised error's, with nothing after it (also once deltas went out)",
        problems,
    )
    if not exercised:
        why = (
            "the adapter keeps the port's default execute_streaming, which projects every "
            "failure by construction"
            if default
            else "the kit's only lever in fixture mode, a cancel token set at the first delta, "
            "did not make it fail (cancellation.token says why)"
        )
        raise NotApplicableError(
            f"not exercised: no failure case was supplied and {why}; give FailureCase values "
            "(the templiqx_failure_cases fixture, or failures=...) for the failures it can be "
            "driven into, or run it against the kit's server with a transport (a Wire)"
        )
