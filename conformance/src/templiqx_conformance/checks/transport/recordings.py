"""``transport.recordings``: provider responses the author recorded, replayed by the kit's server.

Each :class:`~templiqx_conformance.wires.Recording` is served with one ``Content-Type`` (its
own, or the wire framing's): the stream whole and one byte per write, the whole body through
``execute``, and the stream cut after every frame boundary of the wire's framing (each cut must
fail). A recording gives an output (and optionally the exact deltas), or declares the failure
it must produce. A tool-use recording is replayed to every adapter: parsing tool calls is worth
proving even for one that does not declare ``tool_calling``.
"""

from __future__ import annotations

from templiqx_conformance.checks.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    receipt_diff,
    show,
)
from templiqx_conformance.checks.transport.common import in_parallel, rig_of, summarise
from templiqx_conformance.checks.verdicts import (
    check_failed_stream,
    delta_content_problems,
    delta_sequence_problem,
    order_problems,
)
from templiqx_conformance.loopback import Reply
from templiqx_conformance.probes import PROBES, TEXT, Probe
from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig.wire_rig import RUNTIME_CODES, request_for
from templiqx_conformance.wires.wire import Recording
from templiqx_contracts import Delta, ExecutionReceipt, ToolCallDelta

__all__ = ["recordings"]


def _probe_for(recording: Recording) -> Probe:
    """The kit probe whose request a recording answers (by capability; text otherwise)."""
    return next(
        (p for p in PROBES if p.capability == recording.capability and p.schema_valid), TEXT
    )


def _failure_problems(
    label: str, recording: Recording, outcome: Outcome, stream: bool
) -> list[str]:
    """A recording that declares a failure: the call must raise exactly that code."""
    if stream:
        found, _ = check_failed_stream(label, outcome, recording.failure)
        return found
    if outcome.error is None:
        return [
            f"{label}: execute must fail with {recording.failure}, it returned "
            f"{show(outcome.receipt.output if outcome.receipt else outcome.result)}"
        ]
    code = getattr(outcome.error, "code", None)
    if code != recording.failure:
        return [f"{label}: raised {describe_error(outcome.error)}, expected {recording.failure}"]
    return []


def _replay_stream(
    ctx: CheckContext, recording: Recording, reply: Reply, label: str
) -> tuple[list[str], ExecutionReceipt | None]:
    rig = rig_of(ctx)
    rig.reply_always(reply)
    probe = _probe_for(recording)
    outcome = run_streaming(ctx.new_adapter(), request_for(probe.interaction), ctx.timeout)
    if recording.failure is not None:
        return _failure_problems(label, recording, outcome, stream=True), None
    problems = order_problems(label, outcome)
    receipt = outcome.receipt
    if outcome.error is not None or receipt is None:
        error = describe_error(outcome.error) if outcome.error else type(outcome.result).__name__
        return [*problems, f"{label}: execute_streaming must succeed, got {error}"], None
    if show(receipt.output, 10**9) != show(recording.output, 10**9):
        problems.append(
            f"{label}: the output is {show(receipt.output)}, the recording means "
            f"{show(recording.output)}"
        )
    deltas = [event for event in outcome.events if isinstance(event, (Delta, ToolCallDelta))]
    if recording.deltas is not None:
        mismatch = delta_sequence_problem(deltas, list(recording.deltas))
        if mismatch is not None:
            problems.append(f"{label}: {mismatch}")
    problems.extend(delta_content_problems(label, outcome.events, receipt.output))
    return problems, receipt


def _replay_whole(
    ctx: CheckContext, recording: Recording
) -> tuple[list[str], ExecutionReceipt | None]:
    rig = rig_of(ctx)
    label = f"{recording.name} (whole)"
    rig.reply_always(
        Reply(
            status=200,
            headers=(("Content-Type", "application/json"),),
            body=recording.whole or b"",
        )
    )
    probe = _probe_for(recording)
    outcome = run_execute(ctx.new_adapter(), request_for(probe.interaction), ctx.timeout)
    if recording.failure is not None:
        return _failure_problems(label, recording, outcome, stream=False), None
    if outcome.receipt is None:
        got = describe_error(outcome.error) if outcome.error else repr(outcome.result)
        return [f"{label}: execute must succeed, got {got}"], None
    if show(outcome.receipt.output, 10**9) != show(recording.output, 10**9):
        return [
            f"{label}: the output is {show(outcome.receipt.output)}, the recording means "
            f"{show(recording.output)}"
        ], outcome.receipt
    return [], outcome.receipt


def _replay_recording(ctx: CheckContext, recording: Recording) -> list[str]:
    rig = rig_of(ctx)
    name = recording.name
    problems: list[str] = []
    executed: ExecutionReceipt | None = None
    if recording.whole is not None:
        found, executed = _replay_whole(ctx, recording)
        problems.extend(found)
    stream = recording.stream
    if stream is None:
        return problems
    content_type = recording.content_type or rig.framing.content_type
    for label, split in ((f"{name} (stream)", False), (f"{name} (one byte per write)", True)):
        reply = Reply.stream([stream], content_type=content_type, split_bytes=split)
        found, streamed = _replay_stream(ctx, recording, reply, label)
        problems.extend(found)
        if executed is not None and streamed is not None:
            diff = receipt_diff(executed, streamed, ("whole", "stream"))
            if diff:
                problems.append(
                    f"{label}: the streamed receipt differs from the whole one:\n{diff}"
                )
    cuts = [0, *rig.framing.boundaries(stream)[:-1]]
    request = request_for(_probe_for(recording).interaction)

    def one(index: int) -> list[str]:
        cut = cuts[index]
        label = f"{name} cut after byte {cut} of {len(stream)}"
        reply = Reply.stream([stream[:cut]], content_type=content_type)
        base_url = rig.at_prefix(f"/recording-{index}", lambda _request: reply)
        adapter = ctx.require_adapter(rig.make_adapter_for(base_url), "the adapter factory")
        outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
        found, error = check_failed_stream(label, outcome, None)
        if error is not None and error.code not in RUNTIME_CODES:
            found.append(f"{label}: {error.code!r} is not a runtime failure code")
        return found

    problems.extend(
        summarise(
            f"{name}: cuts at {rig.framing.name} frame boundaries",
            in_parallel(ctx, len(cuts), one),
        )
    )
    return problems


def recordings(ctx: CheckContext) -> None:
    target = ctx.rig.target
    if not target.recordings:
        raise NotApplicableError(
            "no recordings were supplied: give Recording values (AdapterTarget(recordings=...) "
            "or the templiqx_recordings fixture) with the output and deltas each must give"
        )
    problems: list[str] = []
    for recording in target.recordings:
        problems.extend(_replay_recording(ctx, recording))
    fail_if(
        "a recorded provider response must give its output and deltas (or its declared "
        "failure), whole and one byte per write, and fail when cut at any frame boundary",
        problems,
    )
