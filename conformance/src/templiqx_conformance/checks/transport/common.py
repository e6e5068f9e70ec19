"""What the transport checks share: the rig, the receipt an answer must give, and how a stream
is judged against the kit's answer (whatever the split, the framing, the wire)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from templiqx_conformance.checks.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    output_problem,
    receipt_diff,
    show,
    streams_by_default,
    validity_problem,
)
from templiqx_conformance.checks.verdicts import (
    delta_content_problems,
    delta_sequence_problem,
    order_problems,
)
from templiqx_conformance.loopback import Chunk, Reply
from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig.wire_rig import StreamShape, WireRig, request_for
from templiqx_conformance.wires.answer import Answer, ExpectedDelta
from templiqx_contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionReceipt,
    ToolCallDelta,
)
from templiqx_ports import RuntimeAdapter

__all__ = [
    "SPLIT_WINDOW",
    "boundary_replies",
    "every_boundary",
    "expected_deltas",
    "in_parallel",
    "reference",
    "rig_of",
    "run_execute_on",
    "stream_answer",
    "stream_problems",
    "summarise",
]

_WORKERS: Final = 8
SPLIT_WINDOW: Final = 48
SPLIT_PAUSE_S: Final = 0.001
_EXAMPLES: Final = 3


def rig_of(ctx: CheckContext) -> WireRig:
    """The wire rig of a transport check."""
    rig = ctx.rig
    if not isinstance(rig, WireRig):  # pragma: no cover - the runner pairs them
        raise NotApplicableError("the transport checks run only with a transport")
    return rig


def expected_deltas(
    rig: WireRig, adapter: RuntimeAdapter, answer: Answer
) -> list[ExpectedDelta] | None:
    """The deltas ``adapter`` must emit for ``answer``: none with the default projection,
    ``None`` (not compared one by one) when the framing has no stream to count frames in."""
    if streams_by_default(adapter):
        return []
    if not rig.framing.streams:
        return None
    return answer.expected_deltas(whole_arguments=rig.wire.whole_tool_arguments)


def reference(
    ctx: CheckContext, answer: Answer, interaction: CompiledInteraction, output: Any
) -> ExecutionReceipt:
    """Execute ``answer`` served whole; its receipt must carry ``output`` and honest validity."""
    rig = rig_of(ctx)
    rig.serve_answer(answer)
    outcome = run_execute_on(ctx, interaction)
    receipt = ctx.receipt_of(outcome, f"execute({answer.name})")
    problems = []
    mismatch = output_problem(receipt.output, output, tool_call_ids=rig.wire.tool_call_ids)
    if mismatch is not None:
        problems.append(
            f"{answer.name}: execute produced output {show(receipt.output)}, "
            f"the model answered {show(output)} ({mismatch})"
        )
    invalid = validity_problem(interaction, receipt)
    if invalid is not None:
        problems.append(f"{answer.name}: {invalid}")
    fail_if("an answer served whole must become the receipt of that answer", problems)
    return receipt


def run_execute_on(ctx: CheckContext, interaction: CompiledInteraction) -> Outcome:
    """``execute`` of ``interaction`` on a fresh adapter."""
    return run_execute(ctx.new_adapter(), request_for(interaction), ctx.timeout)


def stream_problems(
    label: str,
    outcome: Outcome,
    expected: list[ExpectedDelta] | None,
    reference: ExecutionReceipt,
) -> list[str]:
    """Problems with a stream that had to succeed with ``expected`` deltas and ``reference``."""
    if outcome.timed_out:
        return [f"{label}: still running after the call deadline"]
    problems = order_problems(label, outcome)
    if outcome.error is not None:
        problems.append(f"{label}: execute_streaming raised {describe_error(outcome.error)}")
        return problems
    deltas = [event for event in outcome.events if isinstance(event, (Delta, ToolCallDelta))]
    if expected is not None:
        mismatch = delta_sequence_problem(deltas, expected)
        if mismatch is not None:
            problems.append(f"{label}: {mismatch}")
    elif outcome.receipt is not None:
        problems.extend(delta_content_problems(label, outcome.events, outcome.receipt.output))
    for event in [e for e in outcome.events if isinstance(e, Complete)][-1:]:
        diff = receipt_diff(reference, event.receipt, ("execute", "Complete"))
        if diff:
            problems.append(f"{label}: the Complete receipt differs from execute's:\n{diff}")
    return problems


def stream_answer(
    ctx: CheckContext,
    answer: Answer,
    interaction: CompiledInteraction,
    reference: ExecutionReceipt,
    *,
    label: str,
    line_end: str = "\n",
    shape: StreamShape | None = None,
) -> list[str]:
    """Stream ``answer`` served as ``shape`` says; the problems with what came out."""
    rig = rig_of(ctx)
    rig.serve_answer(answer, line_end=line_end, shape=shape)
    adapter = ctx.new_adapter()
    outcome = run_streaming(adapter, request_for(interaction), ctx.timeout)
    return stream_problems(label, outcome, expected_deltas(rig, adapter, answer), reference)


def boundary_replies(
    rig: WireRig, data: bytes, window: int = SPLIT_WINDOW
) -> list[tuple[str, Reply]]:
    """Replies that, together, put a write boundary at every byte boundary of ``data``.

    Reply ``r`` cuts ``data`` at offsets ``r, r + window, r + 2 * window, ...`` and pauses briefly
    before each piece, so the reader's receive ends there; ``window`` replies cover every offset.
    """
    replies = []
    for residue in range(1, min(window, len(data) - 1) + 1):
        cuts = list(range(residue, len(data), window))
        bounds = [0, *cuts, len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
        chunks: list[bytes | Chunk] = [pieces[0]]
        chunks.extend(Chunk(piece, SPLIT_PAUSE_S) for piece in pieces[1:])
        label = f"split at byte offsets {residue}, {residue + window}, ... of {len(data)}"
        replies.append((label, rig.stream_reply(chunks)))
    return replies


def in_parallel(ctx: CheckContext, count: int, one: Callable[[int], list[str]]) -> list[list[str]]:
    """``one(i)`` for every ``i`` below ``count``, on the kit's worker pool."""
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        return list(pool.map(one, range(count)))


def summarise(title: str, results: list[list[str]]) -> list[str]:
    """``title``: how many of the runs went wrong, with the first few problems as examples."""
    failing = [found for found in results if found]
    if not failing:
        return []
    examples = [found[0] for found in failing[:_EXAMPLES]]
    return [
        f"{title}: {len(failing)} of {len(results)} went wrong, e.g.",
        *(f"  {line}" for line in examples),
    ]


def every_boundary(
    ctx: CheckContext,
    answer: Answer,
    interaction: CompiledInteraction,
    reference: ExecutionReceipt,
    *,
    line_end: str = "\n",
) -> list[str]:
    """Stream ``answer`` with a read boundary at every byte offset (see boundary_replies)."""
    rig = rig_of(ctx)
    data = b"".join(rig.writes(answer, line_end))
    whole = rig.whole_reply(answer)
    request = request_for(interaction)
    cases = boundary_replies(rig, data)

    def one(index: int) -> list[str]:
        label, reply = cases[index]
        base_url = rig.at_prefix(f"/split-{index}", rig.split(reply, whole))
        adapter = ctx.require_adapter(rig.make_adapter_for(base_url), "the adapter factory")
        outcome = run_streaming(adapter, request, ctx.timeout)
        return stream_problems(label, outcome, expected_deltas(rig, adapter, answer), reference)

    crlf = " (CRLF)" if line_end != "\n" else ""
    return summarise(
        f"{answer.name}{crlf}: byte-boundary split patterns", in_parallel(ctx, len(cases), one)
    )
