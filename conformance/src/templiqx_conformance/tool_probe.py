"""The tool-call probe: what an adapter that declares ``tool_calling`` must do with declared tools.

The kit sends an interaction that declares two tools (``get_weather`` and ``get_stock_price``)
and a model answer that calls both in parallel: the fixture rig hands the answer over as
``fixture_output``, the OpenAI rig serves it as a completion whose calls stream their arguments
in fragments. The adapter must

* return the answer as ``{"tool_calls": [{"id", "name", "arguments"}, …]}`` in call order;
* judge it by the declared tools: ``output_schema_valid`` is true when every call names a
  declared tool with arguments its schema accepts, and false when the same answer comes back
  for an interaction that declares only one of the tools (DECISIONS 8);
* stream one ``ToolCallDelta`` per non-empty arguments fragment, fragments that assemble into
  exactly the receipt's calls (an adapter keeping the port's default streaming sends none), and
  end the stream with a ``Complete`` equal to the ``execute`` receipt;
* over HTTP, send the declared tools in the request (on the OpenAI wire: ``tools`` as functions
  with each arguments schema as ``parameters``).

Adapters that do not declare ``tool_calling`` are not probed: the application refuses to run
a contract that declares tools on them.
"""

from __future__ import annotations

from typing import Any

from templiqx_conformance.context import (
    CheckContext,
    NotApplicableError,
    fail_if,
    receipt_diff,
    show,
)
from templiqx_conformance.openai_streams import ServedCompletion, ToolCallSpec, tool_call_completion
from templiqx_conformance.recording import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig import Rig
from templiqx_conformance.schema import satisfies
from templiqx_contracts import (
    TOOL_CALLING,
    CompiledInteraction,
    CompiledMessage,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    JSONDecodeError,
    ToolCallDelta,
    ToolCallSplitter,
    ToolSpec,
    canonical_json,
    decode_json,
    interaction_output_valid,
)
from templiqx_ports import EventOrderError, RuntimeAdapter, validate_event_order

__all__ = [
    "DECLARED_TOOLS",
    "TOOL_ANSWER",
    "TOOL_CALLS",
    "declared_tools_check",
    "declared_tools_interaction",
]

DECLARED_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_weather",
        description="The current weather in a city.",
        arguments={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "units": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city", "units"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="get_stock_price",
        description="The latest price of a stock on an exchange.",
        arguments={
            "type": "object",
            "properties": {"ticker": {"type": "string"}, "exchange": {"type": "string"}},
            "required": ["ticker", "exchange"],
            "additionalProperties": False,
        },
    ),
)
"""The tools the probe's interaction declares."""

TOOL_CALLS: tuple[ToolCallSpec, ...] = (
    ToolCallSpec(
        id="call_kit_tools_weather",
        name="get_weather",
        argument_fragments=('{"ci', 'ty": "Edi', 'nburgh", "un', 'its": "c"}'),
    ),
    ToolCallSpec(
        id="call_kit_tools_stock",
        name="get_stock_price",
        argument_fragments=('{"ticker": ', '"AAPL", "exch', 'ange": "NASDAQ"}'),
    ),
)
"""The calls the probe's model makes, with the fragments a wire streams them in."""

TOOL_ANSWER: dict[str, Any] = {
    "tool_calls": [
        {"id": call.id, "name": call.name, "arguments": decode_json(call.arguments)}
        for call in TOOL_CALLS
    ]
}
"""The receipt output the calls must become (DECISIONS 7)."""

_PLAIN_ANSWER_SCHEMA: dict[str, Any] = {"type": "string"}


def declared_tools_interaction(tools: tuple[ToolSpec, ...] = DECLARED_TOOLS) -> CompiledInteraction:
    """An interaction that declares ``tools`` (auto choice, parallel calls allowed)."""
    return CompiledInteraction(
        compiler="templiqx-conformance/0.2.0",
        contract_id=f"conformance-tools-{len(tools)}",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Use the tools to answer."),
            CompiledMessage(role="user", content="Weather in Edinburgh, and the AAPL price?"),
        ],
        output_schema=dict(_PLAIN_ANSWER_SCHEMA),
        required_capabilities=[],
        target_capabilities=[TOOL_CALLING],
        runtime_policy={"temperature": 0},
        extensions={},
        tools=list(tools),
        tool_choice="auto",
        parallel_tool_calls=True,
    )


def _served() -> ServedCompletion:
    return tool_call_completion("declared-tools", TOOL_CALLS)


def _arrange(rig: Rig) -> None:
    """Make the next executions answer with the probe's calls."""
    serve_completion = getattr(rig, "serve_completion", None)
    if not rig.with_fixture and serve_completion is not None:
        serve_completion(_served())


def _sent_tools(rig: Rig) -> list[str]:
    """Problems with the tools the adapter sent over the OpenAI wire (nothing for fixtures)."""
    server = getattr(rig, "server", None)
    if rig.transport != "openai" or server is None:
        return []
    problems = []
    expected = [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.arguments,
            },
        }
        for tool in DECLARED_TOOLS
    ]
    for recorded in server.requests:
        body = recorded.json
        sent = body.get("tools") if isinstance(body, dict) else None
        if sent != expected:
            problems.append(
                f"the request declared tools {show(sent)}; expected {show(expected)} (each "
                "declared tool as a function whose parameters are its arguments schema)"
            )
            break
    return problems


def _judged(interaction: CompiledInteraction, output: Any) -> bool:
    return interaction_output_valid(interaction, output, satisfies)


def _stream_problems(
    label: str, adapter: RuntimeAdapter, outcome: Outcome, plain: ExecutionReceipt, wire: bool
) -> list[str]:
    if outcome.timed_out:
        return [f"{label}: execute_streaming was still running after the call deadline"]
    if outcome.error is not None:
        return [f"{label}: execute_streaming raised {describe_error(outcome.error)}"]
    problems = []
    try:
        validate_event_order(outcome.events)
    except EventOrderError as exc:
        problems.append(f"{label}: {exc}")
    completes = [event for event in outcome.events if isinstance(event, Complete)]
    for event in completes[-1:]:
        diff = receipt_diff(plain, event.receipt, ("execute", "Complete"))
        if diff:
            problems.append(f"{label}: the streamed receipt differs from execute's:\n{diff}")
    fragments = [
        (event.name, event.arguments_fragment)
        for event in outcome.events
        if isinstance(event, ToolCallDelta)
    ]
    default = type(adapter).execute_streaming is RuntimeAdapter.execute_streaming
    if default:
        if fragments:
            problems.append(f"{label}: the port's default streaming sends no ToolCallDelta")
        return problems
    if wire:
        served = [
            (e.name, e.arguments_fragment) for e in _served().deltas if isinstance(e, ToolCallDelta)
        ]
        if fragments != served:
            problems.append(
                f"{label}: ToolCallDelta events {show(fragments)}; the server streamed "
                f"{show(served)} (one per non-empty fragment, in arrival order, name carried)"
            )
    if fragments:
        assembled = [(name, _parsed(text)) for name, text in ToolCallSplitter.split(fragments)]
        calls = [(call.name, _parsed(call.arguments)) for call in TOOL_CALLS]
        if assembled != calls:
            problems.append(
                f"{label}: the ToolCallDelta fragments assemble to {show(assembled)}, not to the "
                f"receipt's calls {show(calls)}"
            )
    return problems


def _parsed(text: str) -> Any:
    """The canonical JSON of ``text`` when it parses (to compare values), else the text."""
    try:
        return canonical_json(decode_json(text)).decode("utf-8")
    except JSONDecodeError:
        return text


def declared_tools_check(ctx: CheckContext) -> None:
    """The ``tools.declared_calls`` check (see the module docstring)."""
    descriptor = ctx.descriptor()
    if TOOL_CALLING not in descriptor.capabilities:
        raise NotApplicableError(
            f"the adapter does not declare '{TOOL_CALLING}', so no tools are ever sent to it"
        )
    rig = ctx.rig
    wire = not rig.with_fixture
    problems: list[str] = []
    for label, tools in (
        ("both tools declared", DECLARED_TOOLS),
        ("one tool declared", DECLARED_TOOLS[:1]),
    ):
        interaction = declared_tools_interaction(tools)
        request = ExecutionRequest(
            interaction=interaction, fixture_output=None if wire else TOOL_ANSWER
        )
        _arrange(rig)
        adapter = ctx.new_adapter()
        plain = ctx.receipt_of(run_execute(adapter, request, ctx.timeout), f"execute({label})")
        if canonical_json(plain.output) != canonical_json(TOOL_ANSWER):
            problems.append(
                f"{label}: the output is {show(plain.output)}; the calls must become "
                f"{show(TOOL_ANSWER)}"
            )
        truth = _judged(interaction, plain.output)
        if plain.output_schema_valid is not truth:
            problems.append(
                f"{label}: output_schema_valid={plain.output_schema_valid}, but the calls "
                f"{'satisfy' if truth else 'do not satisfy'} the declared tools"
            )
        if label == "both tools declared":
            problems.extend(_sent_tools(rig))
        _arrange(rig)
        streamed = run_streaming(ctx.new_adapter(), request, ctx.timeout)
        problems.extend(_stream_problems(label, adapter, streamed, plain, wire))
    fail_if(
        "an adapter that declares tool_calling must answer declared tools' calls as "
        '{"tool_calls": [...]}, judge them by the declared tools, and stream fragments that '
        "assemble into the same receipt",
        problems,
    )
