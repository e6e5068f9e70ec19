"""The streaming and cancellation checks every adapter must pass, whatever its transport.

They need no knowledge of any wire: they look at the events an adapter emits for the kit's
probes — their order, what the deltas say compared with the receipt, the receipt compared with
``execute``'s — and at what a set cancel token does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from templiqx_conformance.checks.context import (
    CheckContext,
    NotApplicableError,
    completes_of,
    fail_if,
    receipt_diff,
    show,
)
from templiqx_conformance.checks.verdicts import (
    CANCEL_DEADLINE,
    cancel_cutoff,
    check_cancelled,
    delta_content_problems,
    event_kinds,
    order_problems,
    short_note,
)
from templiqx_conformance.probes import Probe
from templiqx_conformance.rig.calls import Outcome, describe_error
from templiqx_contracts import Complete, Delta, ExecutionReceipt, ToolCallDelta

__all__ = [
    "cancellation_token",
    "complete_matches_execute",
    "default_projection",
    "deltas_match_output",
    "event_order",
]


def event_order(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        outcome = ctx.stream(probe, grace=0.05)
        problems.extend(order_problems(probe.name, outcome))
    fail_if(
        "every stream must be deltas then exactly one terminal event (Complete or Failed), "
        "which is last",
        problems,
    )


def _answers(ctx: CheckContext, probe: Probe, executed: ExecutionReceipt) -> list[str]:
    """Texts the probe's deltas should spell: the text output, or the JSON the model wrote."""
    texts = [executed.output] if isinstance(executed.output, str) else []
    if not ctx.rig.with_fixture:  # over a wire the kit wrote the model's text itself
        texts.append(probe.content)
    texts.append(show(executed.output, 10**9))
    return texts


def _joined(outcome: Outcome) -> str:
    return "".join(event.text for event in outcome.events if isinstance(event, Delta))


def complete_matches_execute(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        executed = ctx.execute(probe)
        outcome = ctx.stream(probe)
        if outcome.error is not None:
            problems.append(
                f"{probe.name}: execute succeeded but execute_streaming raised "
                f"{describe_error(outcome.error)}"
                + short_note(_joined(outcome), _answers(ctx, probe, executed))
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
                note = short_note(_joined(outcome), _answers(ctx, probe, executed))
                problems.append(f"{probe.name}: the returned receipt differs{note}:\n{diff}")
        completes = completes_of(outcome.events)
        if not completes:
            problems.append(f"{probe.name}: the stream carried no Complete event")
        for streamed in completes:
            diff = receipt_diff(executed, streamed, ("execute", "Complete"))
            if diff:
                problems.append(f"{probe.name}: the Complete receipt differs:\n{diff}")
    fail_if(
        "the streamed receipt (returned and in Complete) must equal the execute receipt, field "
        "by field: build both from the same answer the same way",
        problems,
    )


def deltas_match_output(ctx: CheckContext) -> None:
    adapter = ctx.new_adapter()
    if ctx.streams_by_default(adapter):
        raise NotApplicableError(
            "the adapter keeps the port's default execute_streaming, which emits no deltas"
        )
    problems = []
    judged = 0
    for probe in ctx.probes():
        outcome = ctx.stream(probe)
        receipt = ctx.receipt_of(outcome, f"execute_streaming({probe.name})")
        judged += any(isinstance(e, (Delta, ToolCallDelta)) for e in outcome.events)
        answers = [probe.content] if not ctx.rig.with_fixture else []
        problems.extend(delta_content_problems(probe.name, outcome.events, receipt.output, answers))
    fail_if(
        "the deltas must say what the receipt says: joined Delta texts equal the text output "
        "(or parse to the structured output), and each tool call's ToolCallDelta fragments "
        "assemble to its arguments",
        problems,
    )
    if not judged:
        raise NotApplicableError(
            "not exercised: the adapter overrides execute_streaming but emitted no delta for any "
            "of the kit's probes, so there was nothing to compare with the receipts"
        )


def default_projection(ctx: CheckContext) -> None:
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


def _cancel_at_first_delta(ctx: CheckContext) -> list[str]:
    """Set the token from inside the sink when the first delta arrives (the rest of the answer
    is held until then); the stream must still end in ``Failed{TQX_RUNTIME_CANCELLED}``."""
    label = "token set by the sink at the first delta"
    problems: list[str] = []
    for probe in ctx.probes():
        token = threading.Event()
        set_at: list[float] = []

        def on_event(
            event: Any, token: threading.Event = token, set_at: list[float] = set_at
        ) -> None:
            if isinstance(event, (Delta, ToolCallDelta)) and not token.is_set():
                set_at.append(time.monotonic())
                token.set()

        outcome = ctx.stream(
            probe,
            cancel=token,
            on_event=on_event,
            grace=0.05,
            hold=token,
            cutoff=cancel_cutoff(set_at),
        )
        if not set_at:
            continue  # this probe streamed no delta: nothing to cancel mid-way
        problems.extend(check_cancelled(f"{label} ({probe.name})", outcome, set_at[0]))
        return problems
    return problems


def cancellation_token(ctx: CheckContext) -> None:
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
    if ctx.rig.holds_streams:  # the rest of the answer waits for the token (not so for a
        problems.extend(_cancel_at_first_delta(ctx))  # provider that answers in one body)
    fail_if(
        f"a set cancel token must end the stream within {CANCEL_DEADLINE:g} s with one "
        "Failed{TQX_RUNTIME_CANCELLED} and the same error raised — before the call and once "
        "deltas went out",
        problems,
    )
