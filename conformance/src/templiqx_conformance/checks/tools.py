"""``tools.declared_calls``: a ``tool_calling`` adapter sends declared tools and is judged by them.

The kit's tool-call probe (:data:`~templiqx_conformance.probes.TOOL_CALLS`: an interaction that
declares ``get_weather`` and ``get_stock_price``, answered with a call of each) is one of
:data:`~templiqx_conformance.probes.PROBES`, so every port check runs it like any probe:
receipts and fingerprints, ``output_schema_valid`` judged by the declared tools
(``receipt.output_schema_valid``), each call's ``ToolCallDelta`` fragments assembling to its
arguments (``streaming.deltas_match_output``), the streamed receipt equal to ``execute``'s
(``streaming.complete_matches_execute``), cancellation and secrets; over a wire also every byte
split and interleaved calls (``transport.tool_calls``). This check adds what only declared
tools make necessary, for fixture and wire targets alike:

* **The declarations decide.** The same answer is sent to two variants of the interaction: one
  declaring only ``get_weather`` (so ``get_stock_price`` is an undeclared call) and one forcing
  ``get_weather`` with parallel calls off (so the answer breaks the tool choice). Both receipts
  must carry the calls in order with ``output_schema_valid`` false — on ``execute`` and on the
  stream, whose receipt must equal ``execute``'s and whose fragments must assemble to it. An
  adapter that judges calls by tool names only, or always claims validity, is caught here.
* **The tools reach the model.** Over a wire, every request of the probe and of both variants
  must carry the declared tools, as :meth:`Wire.tool_problems
  <templiqx_conformance.wires.wire.Wire.tool_problems>` says: by default each tool's name,
  description and arguments schema together in one object of the body (any provider's tool list
  does that); the ``openai`` wire checks ``tools``, ``tool_choice`` and ``parallel_tool_calls``
  exactly. A fixture target has no request to look at.

Not applicable to an adapter that does not declare ``tool_calling`` (the application never
sends it an interaction with tools), nor over a wire whose provider sends no tool calls.
"""

from __future__ import annotations

from templiqx_conformance.checks.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    output_problem,
    receipt_diff,
    show,
    validity_problem,
)
from templiqx_conformance.checks.verdicts import delta_content_problems, order_problems
from templiqx_conformance.probes import TOOL_CALLING, TOOL_CALLS, VARIANTS, Probe
from templiqx_conformance.rig.calls import Outcome, describe_error
from templiqx_conformance.rig.wire_rig import WireRig
from templiqx_contracts import ExecutionReceipt

__all__ = ["declared_tools_check"]


def _sent_tools(rig: WireRig, probe: Probe, before: int) -> list[str]:
    """The problems with the tools declared by each request since the ``before``-th."""
    problems: list[str] = []
    for recorded in rig.recorded_requests()[before:]:
        mode = "execute_streaming" if rig.wire.is_stream_request(recorded) else "execute"
        problems.extend(
            f"{probe.name} via {mode}: {line}"
            for line in rig.wire.tool_problems(recorded, probe.interaction)
        )
    return problems


def _stream_problems(label: str, outcome: Outcome, executed: ExecutionReceipt) -> list[str]:
    if outcome.error is not None:
        return [f"{label}: execute_streaming raised {describe_error(outcome.error)}"]
    problems = order_problems(label, outcome)
    streamed = outcome.receipt
    if streamed is None:
        return [*problems, f"{label}: execute_streaming must return the receipt"]
    diff = receipt_diff(executed, streamed, ("execute", "streamed"))
    if diff:
        problems.append(f"{label}: the streamed receipt differs from execute's:\n{diff}")
    problems.extend(delta_content_problems(label, outcome.events, streamed.output))
    return problems


def _judged(ctx: CheckContext, variant: Probe) -> list[str]:
    """Run ``variant`` through both calls; the problems with how its receipts judge the calls."""
    executed = ctx.execute(variant)
    problems = []
    ids = not isinstance(ctx.rig, WireRig) or ctx.rig.wire.tool_call_ids
    mismatch = output_problem(executed.output, variant.output, tool_call_ids=ids)
    if mismatch is not None:
        problems.append(
            f"{variant.name}: the output is {show(executed.output)}; the calls must become "
            f"{show(variant.output)} whatever the interaction declares ({mismatch})"
        )
    invalid = validity_problem(variant.interaction, executed)
    if invalid is not None:
        problems.append(f"{variant.name}: {invalid}")
    problems.extend(_stream_problems(variant.name, ctx.stream(variant), executed))
    return problems


def declared_tools_check(ctx: CheckContext) -> None:
    """The ``tools.declared_calls`` check (see the module docstring)."""
    if TOOL_CALLING not in ctx.descriptor().capabilities:
        raise NotApplicableError(
            f"the adapter does not declare {TOOL_CALLING!r}, so the application never sends it "
            "an interaction with tools"
        )
    rig = ctx.rig
    if not rig.accepts(TOOL_CALLS):
        raise NotApplicableError(
            "the adapter's wire says its provider sends no tool calls, so no tool is ever called"
        )
    wire = rig if isinstance(rig, WireRig) else None
    problems: list[str] = []
    for probe in (TOOL_CALLS, *VARIANTS):
        before = len(wire.recorded_requests()) if wire is not None else 0
        if probe is not TOOL_CALLS:
            problems.extend(_judged(ctx, probe))
        elif wire is not None:  # its receipts are the port checks' business: look at requests
            ctx.execute(probe)
            ctx.stream(probe)
        if wire is not None:
            problems.extend(_sent_tools(wire, probe, before))
    fail_if(
        "an adapter that declares tool_calling must send the declared tools (and the tool "
        "choice) with every request and judge its model's calls by them, on both paths",
        problems,
    )
