"""The requests the kit sends: its own compiled interactions and the outputs it expects back.

The kit does not compile contracts; it builds small :class:`CompiledInteraction` values by hand
so that any adapter can be driven without a package on disk. Fixture-replaying adapters (the
deterministic fake, the scripted mock, an author's own replay adapter) receive the expected
output as ``fixture_output``; HTTP adapters receive it from the kit's loopback server, in their
provider's bytes (a :class:`~templiqx_conformance.wires.wire.Wire` encodes each probe's answer).

Every probe sends a *different* interaction, so that a server keyed on the request can answer
each with its own output (the schema-invalid probe is told apart from the valid one).

Adding a probe: build it below and append it to :data:`PROBES`. The kit sends a probe to an
adapter that declares ``probe.capability`` (the application's capability gate), and every check
that runs "for every probe" picks it up — receipts, fingerprints, validity, stream order and
content, streamed-versus-executed parity, cancellation, secrets. A probe answered with tool
calls sets ``tool_calls``; the wire rig then serves tool calls instead of content (wires that
cannot say tool calls skip such probes).

Beside them, :data:`NEGATIVE_PROBES` holds one probe per capability whose answer is *invalid*
(the structured one with ``ok: "yes"``, a text one breaking an enum, tool calls of an undeclared
tool): ``receipt.output_schema_valid`` sends each declared capability's, so it never passes
without seeing the adapter judge an invalid output.

The tool-call probe declares tools (:data:`DECLARED_TOOLS`), so — like the application, which
gives an interaction with tools only to a runtime offering ``tool_calling`` — the kit sends it
only to adapters declaring that capability. Its answer is judged by the declared tools, not the
output schema (:func:`templiqx_contracts.interaction_output_valid`, DECISIONS 8).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec

from templiqx_conformance.schema import satisfies
from templiqx_conformance.wires.answer import ToolCall
from templiqx_contracts import (
    TOOL_CALLING,
    CompiledInteraction,
    CompiledMessage,
    ExecutionRequest,
    NamedToolChoice,
    ToolChoice,
    ToolSpec,
    canonical_json,
    interaction_output_valid,
)

__all__ = [
    "DECLARED_TOOLS",
    "KIT_COMPILER",
    "NEGATIVE_PROBES",
    "ONE_TOOL_DECLARED",
    "PROBES",
    "STOCK",
    "STRUCTURED_INVALID",
    "STRUCTURED_OUTPUT",
    "STRUCTURED_SCHEMA",
    "STRUCTURED_VALID",
    "TEXT",
    "TEXT_CAPABILITY",
    "TEXT_INVALID",
    "TOOL_CALLING",
    "TOOL_CALLS",
    "TOOL_FORCED",
    "VARIANTS",
    "WEATHER",
    "Probe",
    "applicable_probes",
    "structured_interaction",
    "text_interaction",
    "tool_calls_probe",
    "tool_interaction",
    "without_fixture_output",
]

KIT_COMPILER = "templiqx-conformance/0.2.0"
"""The ``compiler`` of the kit's hand-built interactions (not compiled by templiqx-core)."""

STRUCTURED_OUTPUT = "structured_output"
TEXT_CAPABILITY = "text"

STRUCTURED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["ok", "note"],
    "additionalProperties": False,
}


def structured_interaction(question: str = "Is the adapter conformant?") -> CompiledInteraction:
    """A structured-output interaction whose schema is :data:`STRUCTURED_SCHEMA`."""
    return CompiledInteraction(
        compiler=KIT_COMPILER,
        contract_id="conformance-structured",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Answer with one JSON object."),
            CompiledMessage(role="user", content=f'{question} Reply {{"ok": true, "note": "…"}}.'),
        ],
        output_schema=copy.deepcopy(STRUCTURED_SCHEMA),
        required_capabilities=[STRUCTURED_OUTPUT],
        target_capabilities=[STRUCTURED_OUTPUT],
        runtime_policy={"temperature": 0},
        extensions={},
    )


def text_interaction(
    question: str = "Greet the conformance kit in two lines.",
    schema: dict[str, Any] | None = None,
) -> CompiledInteraction:
    """A text interaction: the output is a string (``schema`` may narrow it, e.g. an enum)."""
    return CompiledInteraction(
        compiler=KIT_COMPILER,
        contract_id="conformance-text",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Answer in plain text."),
            CompiledMessage(role="user", content=question),
        ],
        output_schema=copy.deepcopy(schema) if schema is not None else {"type": "string"},
        required_capabilities=[TEXT_CAPABILITY],
        target_capabilities=[TEXT_CAPABILITY],
        runtime_policy={"temperature": 0},
        extensions={},
    )


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
"""The tools the tool-call probe declares (the model calls both)."""


def tool_interaction(
    tools: tuple[ToolSpec, ...] = DECLARED_TOOLS,
    *,
    choice: ToolChoice = "auto",
    parallel: bool = True,
) -> CompiledInteraction:
    """An interaction that declares ``tools``: the model may answer in text or call them.

    Its plain answer would be text (output schema ``{"type": "string"}``), so an adapter that
    judges a tool-call answer by the output schema instead of the declared tools is caught.
    """
    return CompiledInteraction(
        compiler=KIT_COMPILER,
        contract_id="conformance-tools",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Use the tools to answer."),
            CompiledMessage(role="user", content="Weather in Edinburgh and the AAPL price?"),
        ],
        output_schema={"type": "string"},
        required_capabilities=[TOOL_CALLING],
        target_capabilities=[TOOL_CALLING],
        runtime_policy={"temperature": 0},
        extensions={},
        tools=[
            ToolSpec(
                name=tool.name,
                description=tool.description,
                arguments=copy.deepcopy(tool.arguments),
            )
            for tool in tools
        ],
        tool_choice=choice,
        parallel_tool_calls=parallel,
    )


class Probe(msgspec.Struct, kw_only=True, frozen=True):
    """One request the kit sends and the output it expects.

    ``content`` is the model text that yields ``output``: the JSON text of the output for a
    structured probe, the text itself for a text probe. ``schema_valid`` is whether ``output``
    is valid for the interaction: it satisfies the output schema or, for a tool-call answer to
    an interaction that declares tools, the declared tools. ``tool_calls``: the model answers
    with these calls instead of content (``output`` is then ``{"tool_calls": [...]}``).
    """

    name: str
    capability: str
    interaction: CompiledInteraction
    output: Any
    content: str
    schema_valid: bool
    tool_calls: tuple[ToolCall, ...] = ()

    def request(self, *, with_fixture: bool) -> ExecutionRequest:
        """The execution request, carrying ``output`` as ``fixture_output`` when asked."""
        return ExecutionRequest(
            interaction=self.interaction,
            fixture_output=self.output if with_fixture else None,
        )


def _structured(name: str, output: dict[str, Any], valid: bool, question: str) -> Probe:
    return Probe(
        name=name,
        capability=STRUCTURED_OUTPUT,
        interaction=structured_interaction(question),
        output=output,
        content=canonical_json(output).decode("utf-8"),
        schema_valid=valid,
    )


STRUCTURED_VALID = _structured(
    "structured-valid",
    {"note": "conformant ✓ — café", "ok": True},
    valid=True,
    question="Is the adapter conformant?",
)
"""A structured probe whose output satisfies the schema (with non-ASCII text)."""

STRUCTURED_INVALID = _structured(
    "structured-invalid",
    {"note": "ok has the wrong type", "ok": "yes"},
    valid=False,
    question="Does the adapter check the schema?",
)
"""A structured probe whose output violates the schema (``ok`` is a string).

Its interaction differs from :data:`STRUCTURED_VALID`'s (the question), so a live adapter's
server can answer it differently: an adapter that always claims validity is caught either way.
"""

_TEXT = "Hello from the templiqx conformance kit.\nSecond line ✓"
TEXT = Probe(
    name="text",
    capability=TEXT_CAPABILITY,
    interaction=text_interaction(),
    output=_TEXT,
    content=_TEXT,
    schema_valid=True,
)
"""A text probe: the output is a two-line string."""

TEXT_INVALID = Probe(
    name="text-invalid",
    capability=TEXT_CAPABILITY,
    interaction=text_interaction(
        "Is the kit strict? Answer yes or no.", {"type": "string", "enum": ["yes", "no"]}
    ),
    output="maybe",
    content="maybe",
    schema_valid=False,
)
"""A text probe whose answer breaks its schema (an enum of ``yes`` and ``no``): the negative
case of ``receipt.output_schema_valid`` for adapters that declare ``text``."""

WEATHER = ToolCall(
    id="call_kit_weather_01",
    name="get_weather",
    argument_fragments=('{"ci', 'ty": "Edi', "nburgh", '", "units', '": "c"}'),
)
STOCK = ToolCall(
    id="call_kit_stock_02",
    name="get_stock_price",
    argument_fragments=('{"tick', 'er": "AA', 'PL", "exchange": ', '"NASDAQ"}'),
)


def tool_calls_probe(
    name: str, interaction: CompiledInteraction, calls: tuple[ToolCall, ...]
) -> Probe:
    """A probe the model answers with ``calls``; valid as the declared tools judge them."""
    output = {
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": json.loads(call.arguments)}
            for call in calls
        ]
    }
    return Probe(
        name=name,
        capability=TOOL_CALLING,
        interaction=interaction,
        output=output,
        content=canonical_json(output).decode("utf-8"),
        schema_valid=interaction_output_valid(interaction, output, satisfies),
        tool_calls=calls,
    )


TOOL_CALLS = tool_calls_probe("tool-calls", tool_interaction(), (WEATHER, STOCK))
"""A probe the model answers with two parallel calls of the tools its interaction declares (a
fixture adapter replays the ``{"tool_calls": [...]}`` output; a wire adapter must assemble it
from the calls' fragments). Sent only to adapters declaring ``tool_calling``."""

PROBES: tuple[Probe, ...] = (STRUCTURED_VALID, STRUCTURED_INVALID, TEXT, TOOL_CALLS)
"""Every probe the "for every probe" checks send, in order (add new probes here)."""

ONE_TOOL_DECLARED = tool_calls_probe(
    "tool-calls (only get_weather declared)",
    tool_interaction(DECLARED_TOOLS[:1]),
    TOOL_CALLS.tool_calls,
)
"""The probe's answer to an interaction that does not declare ``get_stock_price``: invalid."""

TOOL_FORCED = tool_calls_probe(
    "tool-calls (get_weather forced, no parallel calls)",
    tool_interaction(choice=NamedToolChoice(tool="get_weather"), parallel=False),
    TOOL_CALLS.tool_calls,
)
"""The probe's answer to an interaction whose tool choice it breaks: invalid."""

VARIANTS: tuple[Probe, ...] = (ONE_TOOL_DECLARED, TOOL_FORCED)
"""The interactions only ``tools.declared_calls`` sends (each answered with the two calls)."""

NEGATIVE_PROBES: dict[str, Probe] = {
    STRUCTURED_OUTPUT: STRUCTURED_INVALID,
    TEXT_CAPABILITY: TEXT_INVALID,
    TOOL_CALLING: ONE_TOOL_DECLARED,
}
"""Per capability, a probe whose answer is *invalid*: ``receipt.output_schema_valid`` sends
the one of every declared capability, so it never passes without judging an invalid output."""


def applicable_probes(capabilities: list[str]) -> list[Probe]:
    """The probes an application would send to an adapter with these capabilities.

    The application refuses an interaction whose required capability the adapter lacks before
    the adapter is called, so the kit never sends such a probe.
    """
    declared = set(capabilities)
    return [probe for probe in PROBES if probe.capability in declared]


def without_fixture_output(request: ExecutionRequest) -> ExecutionRequest:
    """``request`` with ``fixture_output`` removed (e.g. to drive a fixture adapter to fail)."""
    return ExecutionRequest(interaction=request.interaction, fixture_output=None)
