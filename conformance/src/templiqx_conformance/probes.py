"""The requests the kit sends: its own compiled interactions and the outputs it expects back.

The kit does not compile contracts; it builds two small :class:`CompiledInteraction` values by
hand (a structured-output one with a small object schema, and a text one) so that any adapter can
be driven without a package on disk. Fixture-replaying adapters (the deterministic fake, the
scripted mock, an author's own replay adapter) receive the expected output as ``fixture_output``;
HTTP adapters receive it from the kit's loopback server.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    ExecutionRequest,
    canonical_json,
)

__all__ = [
    "KIT_COMPILER",
    "STRUCTURED_INVALID",
    "STRUCTURED_OUTPUT",
    "STRUCTURED_SCHEMA",
    "STRUCTURED_VALID",
    "TEXT",
    "TEXT_CAPABILITY",
    "Probe",
    "applicable_probes",
    "structured_interaction",
    "text_interaction",
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


def structured_interaction() -> CompiledInteraction:
    """A structured-output interaction whose schema is :data:`STRUCTURED_SCHEMA`."""
    return CompiledInteraction(
        compiler=KIT_COMPILER,
        contract_id="conformance-structured",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Answer with one JSON object."),
            CompiledMessage(
                role="user",
                content='Is the adapter conformant? Reply {"ok": true, "note": "…"}.',
            ),
        ],
        output_schema=copy.deepcopy(STRUCTURED_SCHEMA),
        required_capabilities=[STRUCTURED_OUTPUT],
        target_capabilities=[STRUCTURED_OUTPUT],
        runtime_policy={"temperature": 0},
        extensions={},
    )


def text_interaction() -> CompiledInteraction:
    """A text interaction: the output is a string."""
    return CompiledInteraction(
        compiler=KIT_COMPILER,
        contract_id="conformance-text",
        contract_version="0.2.0",
        messages=[
            CompiledMessage(role="system", content="Answer in plain text."),
            CompiledMessage(role="user", content="Greet the conformance kit in two lines."),
        ],
        output_schema={"type": "string"},
        required_capabilities=[TEXT_CAPABILITY],
        target_capabilities=[TEXT_CAPABILITY],
        runtime_policy={"temperature": 0},
        extensions={},
    )


class Probe(msgspec.Struct, kw_only=True, frozen=True):
    """One request the kit sends and the output it expects.

    ``content`` is the model text that yields ``output``: the JSON text of the output for a
    structured probe, the text itself for a text probe. ``schema_valid`` is whether ``output``
    satisfies the interaction's schema.
    """

    name: str
    capability: str
    interaction: CompiledInteraction
    output: Any
    content: str
    schema_valid: bool

    def request(self, *, with_fixture: bool) -> ExecutionRequest:
        """The execution request, carrying ``output`` as ``fixture_output`` when asked."""
        return ExecutionRequest(
            interaction=self.interaction,
            fixture_output=self.output if with_fixture else None,
        )


def _structured(name: str, output: dict[str, Any], valid: bool) -> Probe:
    return Probe(
        name=name,
        capability=STRUCTURED_OUTPUT,
        interaction=structured_interaction(),
        output=output,
        content=canonical_json(output).decode("utf-8"),
        schema_valid=valid,
    )


STRUCTURED_VALID = _structured(
    "structured-valid", {"note": "conformant ✓ — café", "ok": True}, valid=True
)
"""A structured probe whose output satisfies the schema (with non-ASCII text)."""

STRUCTURED_INVALID = _structured(
    "structured-invalid", {"note": "ok has the wrong type", "ok": "yes"}, valid=False
)
"""A structured probe whose output violates the schema (``ok`` is a string)."""

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

ALL_PROBES = (STRUCTURED_VALID, STRUCTURED_INVALID, TEXT)


def applicable_probes(capabilities: list[str]) -> list[Probe]:
    """The probes an application would send to an adapter with these capabilities.

    The application refuses an interaction whose required capability the adapter lacks before
    the adapter is called, so the kit never sends such a probe.
    """
    declared = set(capabilities)
    return [probe for probe in ALL_PROBES if probe.capability in declared]


def without_fixture_output(request: ExecutionRequest) -> ExecutionRequest:
    """``request`` with ``fixture_output`` removed (e.g. to drive a fixture adapter to fail)."""
    return ExecutionRequest(interaction=request.interaction, fixture_output=None)
