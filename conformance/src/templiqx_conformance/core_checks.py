"""The port-contract checks every adapter must pass, whatever its transport."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec

from templiqx_conformance.context import (
    HEX64,
    Check,
    CheckContext,
    NotApplicableError,
    completes_of,
    fail_if,
    receipt_diff,
    roundtrips,
    show,
)
from templiqx_conformance.probes import STRUCTURED_OUTPUT, Probe
from templiqx_conformance.recording import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig import DrivenFailure
from templiqx_conformance.schema import satisfies
from templiqx_conformance.tool_probe import declared_tools_check
from templiqx_contracts import (
    AdapterDescriptor,
    CanonicalJSONError,
    Complete,
    ExecutionReceipt,
    Failed,
    canonical_json,
    fingerprint,
)
from templiqx_ports import (
    EventOrderError,
    PortError,
    RuntimeFailureCode,
    validate_event_order,
)

__all__ = [
    "CANCEL_DEADLINE",
    "CORE_CHECKS",
    "check_cancelled",
    "check_failed_stream",
    "event_kinds",
    "order_problems",
    "run_driven_failure",
]

CANCEL_DEADLINE = 1.0
"""Seconds within which a set cancel token must end a stream (DECISIONS 6)."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]*")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]*")
_CAPABILITY = re.compile(r"[A-Za-z0-9._:-]+")


def event_kinds(events: list[Any]) -> str:
    """``[Delta, Delta, Complete]`` — the shape of a stream for a failure message."""
    return "[" + ", ".join(type(event).__name__ for event in events) + "]"


# --- descriptor ---------------------------------------------------------------------------


def _descriptor_well_formed(ctx: CheckContext) -> None:
    adapter = ctx.new_adapter()
    descriptor = ctx.descriptor()
    # msgspec does not check types on construction: look at the raw values.
    ident: Any = descriptor.id
    version: Any = descriptor.version
    capabilities: Any = descriptor.capabilities
    problems = []
    if not isinstance(ident, str) or not _ID.fullmatch(ident):
        problems.append(
            f"id {ident!r} must be a non-empty string of letters, digits and . _ : / + -"
        )
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        problems.append(f"version {version!r} must be a non-empty string without spaces")
    if not isinstance(capabilities, list):
        problems.append(f"capabilities must be a list of strings, got {capabilities!r}")
    else:
        for capability in capabilities:
            if not isinstance(capability, str) or not _CAPABILITY.fullmatch(capability):
                problems.append(
                    f"capability {capability!r} must be a non-empty string of letters, digits "
                    "and . _ : -"
                )
        duplicates = sorted(
            {c for c in capabilities if isinstance(c, str) and capabilities.count(c) > 1}
        )
        if duplicates:
            problems.append(f"capabilities list {show(duplicates)} more than once")
    try:
        again = msgspec.json.decode(msgspec.json.encode(descriptor), type=AdapterDescriptor)
        if again != descriptor:
            problems.append("the descriptor does not survive a JSON round trip unchanged")
    except (msgspec.ValidationError, TypeError) as exc:
        problems.append(f"the descriptor does not survive a JSON round trip: {exc}")
    second = adapter.descriptor()
    if second != descriptor:
        problems.append(
            f"descriptor() must be static: two calls gave {show(descriptor)} and {show(second)}"
        )
    fail_if("the descriptor must be a well-formed, static identity", problems)


def _capabilities_honest(ctx: CheckContext) -> None:
    descriptor = ctx.descriptor()
    refusals = []
    for probe in ctx.probes():
        ctx.rig.serve(probe)
        outcome = run_execute(ctx.new_adapter(), ctx.request(probe), ctx.timeout)
        if outcome.timed_out:
            refusals.append(f"{probe.name}: still running after {ctx.timeout:g} s")
        elif outcome.error is not None:
            refusals.append(f"{probe.name}: raised {describe_error(outcome.error)}")
    fail_if(
        "a declared capability must be honoured (the application, not the adapter, refuses "
        "interactions needing a capability the adapter lacks); the adapter declares "
        f"{show(descriptor.capabilities)} but failed the kit's request for it",
        refusals,
    )


# --- receipts -----------------------------------------------------------------------------


def _receipt_well_formed(ctx: CheckContext) -> None:
    descriptor = ctx.descriptor()
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        if receipt.adapter != descriptor:
            problems.append(
                f"{probe.name}: receipt.adapter {show(receipt.adapter)} must equal "
                f"descriptor() {show(descriptor)}"
            )
        for field in ("request_fingerprint", "output_fingerprint"):
            value = getattr(receipt, field)
            if not isinstance(value, str) or not HEX64.fullmatch(value):
                problems.append(
                    f"{probe.name}: {field} {value!r} must be 64 lowercase hex digits (SHA-256)"
                )
        flag: Any = receipt.output_schema_valid
        if not isinstance(flag, bool):
            problems.append(f"{probe.name}: output_schema_valid must be a bool")
        try:
            canonical_json(receipt.output)
        except (CanonicalJSONError, TypeError, ValueError) as exc:
            problems.append(f"{probe.name}: the output cannot be written as canonical JSON: {exc}")
            continue
        if not roundtrips(receipt):
            problems.append(f"{probe.name}: the receipt does not survive a JSON round trip")
    fail_if("receipts must be well formed", problems)


def _output_fingerprint(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        try:
            expected = fingerprint(receipt.output)
        except (CanonicalJSONError, TypeError, ValueError) as exc:
            problems.append(f"{probe.name}: the output cannot be fingerprinted: {exc}")
            continue
        if receipt.output_fingerprint != expected:
            problems.append(
                f"{probe.name}: receipt says {receipt.output_fingerprint!r}, "
                f"fingerprint(output) is {expected!r} for output {show(receipt.output)}"
            )
    fail_if(
        "output_fingerprint must equal fingerprint(output) (SHA-256 of its canonical JSON)",
        problems,
    )


def _request_fingerprint(ctx: CheckContext) -> None:
    problems = []
    seen: dict[bytes, str] = {}
    for probe in ctx.probes():
        adapter = ctx.new_adapter()
        first = ctx.execute(probe, adapter)
        again = ctx.execute(probe, adapter)
        fresh = ctx.execute(probe)
        if again.request_fingerprint != first.request_fingerprint:
            problems.append(
                f"{probe.name}: a repeated call on the same adapter gave "
                f"{again.request_fingerprint!r} after {first.request_fingerprint!r}"
            )
        if fresh.request_fingerprint != first.request_fingerprint:
            problems.append(
                f"{probe.name}: a fresh adapter gave {fresh.request_fingerprint!r}, "
                f"the first gave {first.request_fingerprint!r}"
            )
        outcome = ctx.stream(probe)
        for streamed in completes_of(outcome.events):
            if streamed.request_fingerprint != first.request_fingerprint:
                problems.append(
                    f"{probe.name}: streaming changed it to {streamed.request_fingerprint!r} "
                    f"(execute gave {first.request_fingerprint!r})"
                )
        interaction = canonical_json(probe.interaction)
        for other_interaction, other_fp in seen.items():
            if other_fp == first.request_fingerprint and other_interaction != interaction:
                problems.append(
                    f"{probe.name}: a different interaction gave the same request_fingerprint "
                    f"{other_fp!r}; it must bind the request"
                )
        seen[interaction] = first.request_fingerprint
    fail_if(
        "request_fingerprint must be a stable function of the request, unaffected by streaming",
        problems,
    )


def _output_schema_valid(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        truth = satisfies(probe.interaction.output_schema, receipt.output)
        if receipt.output_schema_valid is not truth:
            verdict = "satisfies" if truth else "violates"
            problems.append(
                f"{probe.name}: the adapter claims "
                f"output_schema_valid={receipt.output_schema_valid} but output "
                f"{show(receipt.output)} {verdict} schema {show(probe.interaction.output_schema)}"
            )
    fail_if("output_schema_valid must agree with the interaction's output schema", problems)


# --- streaming ----------------------------------------------------------------------------


def order_problems(label: str, outcome: Outcome) -> list[str]:
    problems = []
    try:
        validate_event_order(outcome.events)
    except EventOrderError as exc:
        problems.append(f"{label}: {exc}; events {event_kinds(outcome.events)}")
    if outcome.late_events:
        problems.append(
            f"{label}: the sink received {event_kinds(outcome.late_events)} after "
            "execute_streaming had ended; nothing may follow the terminal event"
        )
    if outcome.events:
        last = outcome.events[-1]
        if outcome.error is None and isinstance(last, Failed):
            problems.append(f"{label}: execute_streaming returned but the stream ended in Failed")
        if outcome.error is not None and isinstance(last, Complete):
            problems.append(
                f"{label}: execute_streaming raised {describe_error(outcome.error)} but the stream "
                "ended in Complete"
            )
    return problems


def _event_order(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        outcome = ctx.stream(probe, grace=0.05)
        problems.extend(order_problems(probe.name, outcome))
    fail_if(
        "every stream must be deltas then exactly one terminal event (Complete or Failed), "
        "which is last",
        problems,
    )


def _complete_matches_execute(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        executed = ctx.execute(probe)
        outcome = ctx.stream(probe)
        if outcome.error is not None:
            problems.append(
                f"{probe.name}: execute succeeded but execute_streaming raised "
                f"{describe_error(outcome.error)}"
            )
            continue
        returned = outcome.receipt
        if returned is None:
            problems.append(
                f"{probe.name}: execute_streaming must return the receipt, "
                f"got {type(outcome.result).__name__}"
            )
        else:
            diff = receipt_diff(executed, returned, ("execute", "returned"))
            if diff:
                problems.append(f"{probe.name}: the returned receipt differs:\n{diff}")
        completes = completes_of(outcome.events)
        if not completes:
            problems.append(f"{probe.name}: the stream carried no Complete event")
        for streamed in completes:
            diff = receipt_diff(executed, streamed, ("execute", "Complete"))
            if diff:
                problems.append(f"{probe.name}: the Complete receipt differs:\n{diff}")
    fail_if("the Complete receipt must equal the execute receipt, field by field", problems)


def _default_projection(ctx: CheckContext) -> None:
    adapter = ctx.new_adapter()
    if not ctx.streams_by_default(adapter):
        raise NotApplicableError(
            "the adapter overrides execute_streaming; its streams are checked by "
            "streaming.event_order and streaming.complete_matches_execute"
        )
    problems = []
    for probe in ctx.probes():
        outcome = ctx.stream(probe)
        receipt = ctx.receipt_of(outcome, f"execute_streaming({probe.name})")
        if outcome.events != [Complete.of(receipt)]:
            problems.append(
                f"{probe.name}: events {event_kinds(outcome.events)}, expected exactly "
                "[Complete] carrying the returned receipt"
            )
    fail_if(
        "an adapter with the default execute_streaming must emit exactly one Complete", problems
    )


# --- failures -----------------------------------------------------------------------------


def check_failed_stream(
    label: str, outcome: Outcome, expected_code: str | None
) -> tuple[list[str], PortError | None]:
    """Problems with a stream that had to fail: the projection must equal the raised error."""
    problems = order_problems(label, outcome)
    error = outcome.error
    if error is None:
        problems.append(
            f"{label}: execute_streaming must raise the failure, but it returned "
            f"{type(outcome.result).__name__} with events {event_kinds(outcome.events)}"
        )
        return problems, None
    if not isinstance(error, PortError):
        problems.append(
            f"{label}: adapters must raise templiqx_ports.PortError subclasses, "
            f"got {describe_error(error)}"
        )
        return problems, None
    if expected_code is not None and error.code != expected_code:
        problems.append(f"{label}: raised code {error.code!r}, expected {expected_code!r}")
    failed = [event for event in outcome.events if isinstance(event, Failed)]
    if len(failed) != 1:
        problems.append(
            f"{label}: exactly one Failed must be emitted, got {len(failed)} in "
            f"{event_kinds(outcome.events)}"
        )
    for event in failed:
        if event.code != error.code:
            problems.append(
                f"{label}: Failed.code {event.code!r} must equal the raised error's code "
                f"{error.code!r}"
            )
        if event.message != str(error):
            problems.append(
                f"{label}: Failed.message {event.message!r} must equal str(raised error) "
                f"{str(error)!r}"
            )
    return problems, error


def run_driven_failure(ctx: CheckContext, case: DrivenFailure) -> list[str]:
    """Drive one failure through ``execute`` and ``execute_streaming``; return the problems."""
    probes = ctx.probes()
    probe = next((p for p in probes if p.capability == STRUCTURED_OUTPUT), probes[0])
    problems: list[str] = []
    request = ctx.request(probe)
    if case.prepare is not None:
        request = case.prepare(request)
    for mode in ("execute", "execute_streaming"):
        if case.arrange is not None:
            case.arrange()
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


def _failure_projection(ctx: CheckContext) -> None:
    cases = ctx.rig.failures()
    if not cases:
        raise NotApplicableError(
            "no failure cases were supplied: give FailureCase values (the templiqx_failure_cases "
            "fixture, or failures=...) for every failure the adapter can be driven into"
        )
    problems: list[str] = []
    for case in cases:
        problems.extend(run_driven_failure(ctx, case))
    fail_if(
        "a failure must be projected as exactly one Failed whose code and message equal the "
        "raised error's, with nothing after it",
        problems,
    )


# --- cancellation -------------------------------------------------------------------------


def check_cancelled(label: str, outcome: Outcome, set_at: float | None) -> list[str]:
    """Problems with a stream that a set token had to end with ``TQX_RUNTIME_CANCELLED``."""
    cancelled = RuntimeFailureCode.CANCELLED.value
    problems = []
    if outcome.error is None:
        problems.append(
            f"{label}: the stream ended in {event_kinds(outcome.events[-1:])} although the token "
            f"was set; it must end with Failed{{{cancelled}}} and raise"
        )
        return problems
    found, error = check_failed_stream(label, outcome, cancelled)
    problems.extend(found)
    if set_at is not None and error is not None:
        waited = outcome.finished_at - set_at
        if waited > CANCEL_DEADLINE:
            problems.append(
                f"{label}: the stream ended {waited:.2f} s after the token was set "
                f"(at most {CANCEL_DEADLINE:g} s)"
            )
    return problems


def _cancellation(ctx: CheckContext) -> None:
    adapter = ctx.new_adapter()
    if ctx.streams_by_default(adapter):
        raise NotApplicableError(
            "the adapter keeps the port's default execute_streaming, which runs execute to the "
            "end and does not consult the cancel token (DECISIONS 5)"
        )
    probe = ctx.probes()[0]
    token = threading.Event()
    token.set()
    outcome = ctx.stream(probe, adapter=adapter, cancel=token, grace=0.05)
    problems = check_cancelled("token set before the call", outcome, None)
    if outcome.elapsed > CANCEL_DEADLINE:
        problems.append(
            f"token set before the call: the stream took {outcome.elapsed:.2f} s to end "
            f"(at most {CANCEL_DEADLINE:g} s)"
        )
    fail_if(
        "a set cancel token must end the stream within 1 s with one "
        "Failed{TQX_RUNTIME_CANCELLED} and the same error raised",
        problems,
    )


# --- concurrency --------------------------------------------------------------------------

_PARALLEL_CALLS = 8


def _parallel_execute(ctx: CheckContext) -> None:
    probe: Probe = ctx.probes()[0]
    adapter = ctx.new_adapter()
    ctx.rig.serve(probe)
    request = ctx.request(probe)
    with ThreadPoolExecutor(max_workers=_PARALLEL_CALLS) as pool:
        outcomes = list(
            pool.map(lambda _: run_execute(adapter, request, ctx.timeout), range(_PARALLEL_CALLS))
        )
    problems = []
    receipts: list[ExecutionReceipt] = []
    for index, outcome in enumerate(outcomes):
        if outcome.timed_out:
            problems.append(f"call {index}: still running after {ctx.timeout:g} s")
        elif outcome.error is not None:
            problems.append(f"call {index}: raised {describe_error(outcome.error)}")
        elif isinstance(outcome.result, ExecutionReceipt):
            receipts.append(outcome.result)
        else:
            problems.append(f"call {index}: returned {type(outcome.result).__name__}")
    for index, receipt in enumerate(receipts[1:], 1):
        diff = receipt_diff(receipts[0], receipt, ("first", f"call {index}"))
        if diff:
            problems.append(f"call {index} differs from the first:\n{diff}")
    fail_if(
        f"one adapter must serve {_PARALLEL_CALLS} concurrent executions of the same request "
        "with identical receipts (adapters are shared between threads)",
        problems,
    )


CORE_CHECKS: tuple[Check, ...] = (
    Check(
        "descriptor.well_formed",
        "descriptor() is a static, well-formed identity (id, version, capabilities)",
        _descriptor_well_formed,
    ),
    Check(
        "descriptor.capabilities_honest",
        "every declared capability the kit can exercise is honoured",
        _capabilities_honest,
    ),
    Check(
        "receipt.well_formed",
        "receipts carry the descriptor, SHA-256 fingerprints and JSON-able output",
        _receipt_well_formed,
    ),
    Check(
        "receipt.output_fingerprint",
        "output_fingerprint == fingerprint(output)",
        _output_fingerprint,
    ),
    Check(
        "receipt.request_fingerprint",
        "request_fingerprint is stable across calls and unaffected by streaming",
        _request_fingerprint,
    ),
    Check(
        "receipt.output_schema_valid",
        "output_schema_valid agrees with the output schema",
        _output_schema_valid,
    ),
    Check(
        "streaming.event_order",
        "every stream is deltas then exactly one terminal event, nothing after it",
        _event_order,
    ),
    Check(
        "streaming.complete_matches_execute",
        "the Complete receipt equals the execute receipt, field by field",
        _complete_matches_execute,
    ),
    Check(
        "streaming.default_projection",
        "an adapter with the default execute_streaming emits exactly one Complete",
        _default_projection,
    ),
    Check(
        "failure.projection",
        "each failure yields exactly one Failed equal to the raised error, nothing after it",
        _failure_projection,
    ),
    Check(
        "cancellation.token",
        "a set cancel token ends the stream within 1 s with TQX_RUNTIME_CANCELLED",
        _cancellation,
    ),
    Check(
        "concurrency.parallel_execute",
        "one adapter serves concurrent executions with identical receipts",
        _parallel_execute,
    ),
    Check(
        "tools.declared_calls",
        "(tool_calling adapters) calls of declared tools become the {tool_calls} receipt, judged "
        "by the declared tools, streamed as fragments that assemble into it",
        declared_tools_check,
    ),
)
