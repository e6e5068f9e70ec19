"""The runtime model: what the compiler produces and what a runtime adapter returns."""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from templiqx_contracts.contract import Role
from templiqx_contracts.tools import ToolChoice, ToolSpec

__all__ = [
    "COMPILER_ID",
    "AdapterDescriptor",
    "CompiledInteraction",
    "CompiledMessage",
    "Complete",
    "Delta",
    "ExecutionReceipt",
    "ExecutionRequest",
    "Failed",
    "StreamEvent",
    "ToolCallDelta",
    "Usage",
    "decode_stream_event",
    "encode_stream_event",
]

COMPILER_ID = "templiqx-core/0.2.0"
"""The ``compiler`` of every compiled interaction; it enters request fingerprints."""


class CompiledMessage(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One rendered role message."""

    role: Role
    content: str


class CompiledInteraction(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The provider-neutral request a contract compiles to.

    The reference's nine fields are always present. The tool fields are set only when the
    contract declares tools — then all three, with the defaults filled in (``tool_choice``
    ``"auto"``, ``parallel_tool_calls`` true) and every tool's arguments schema resolved — and
    are otherwise unset and never serialized, so a tool-free interaction fingerprints as before.
    """

    compiler: str
    contract_id: str
    contract_version: str
    messages: list[CompiledMessage]
    output_schema: Any
    required_capabilities: list[str]
    target_capabilities: list[str]
    runtime_policy: dict[str, Any]
    extensions: dict[str, Any]
    tools: list[ToolSpec] | UnsetType = UNSET
    tool_choice: ToolChoice | UnsetType = UNSET
    parallel_tool_calls: bool | UnsetType = UNSET


class AdapterDescriptor(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A runtime adapter's static identity, copied into every receipt."""

    id: str
    version: str
    capabilities: list[str]


class ExecutionRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What the application hands a runtime: the interaction and an optional fixture output.

    ``fixture_output`` is serialized as ``null`` when absent (it is part of fingerprints that
    hash the whole request).
    """

    interaction: CompiledInteraction
    fixture_output: Any = None


class ExecutionReceipt(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The outcome of one execution."""

    adapter: AdapterDescriptor
    request_fingerprint: str
    output_fingerprint: str
    output: Any
    output_schema_valid: bool


class Usage(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """What one execution cost in tokens, when the runtime knows it.

    Never part of a receipt or a fingerprint: the envelope carries it beside the result (see
    ``OperationEnvelope.usage``), so the same request costs the same fingerprint whatever the
    model charged. ``usage_a + usage_b`` adds the counts (several model calls behind one
    execution).
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


# --- stream events --------------------------------------------------------------------------


class _EventBase(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, tag_field="kind"):
    """Base of the stream-event union; tags are the PascalCase class names."""


class Delta(_EventBase, kw_only=True, tag=True):
    """A fragment of generated text."""

    text: str


class ToolCallDelta(_EventBase, kw_only=True, tag=True):
    """A fragment of a tool call's JSON arguments."""

    name: str
    arguments_fragment: str


class Complete(_EventBase, kw_only=True, tag=True):
    """The runtime's terminal event: the model answered, and this is the receipt (its fields
    flattened beside ``kind``). Not the verdict on the call: the application checks the output
    afterwards, and the envelope's ``ok`` says whether it passed."""

    adapter: AdapterDescriptor
    request_fingerprint: str
    output_fingerprint: str
    output: Any
    output_schema_valid: bool

    @classmethod
    def of(cls, receipt: ExecutionReceipt) -> Complete:
        """The ``Complete`` event carrying ``receipt``."""
        return cls(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=receipt.output_fingerprint,
            output=receipt.output,
            output_schema_valid=receipt.output_schema_valid,
        )

    @property
    def receipt(self) -> ExecutionReceipt:
        """The execution receipt this event carries."""
        return ExecutionReceipt(
            adapter=self.adapter,
            request_fingerprint=self.request_fingerprint,
            output_fingerprint=self.output_fingerprint,
            output=self.output,
            output_schema_valid=self.output_schema_valid,
        )


class Failed(_EventBase, kw_only=True, tag=True):
    """The terminal failure event: the projection of the error the adapter raises."""

    code: str
    message: str


StreamEvent: TypeAlias = Delta | ToolCallDelta | Complete | Failed

_event_decoder = msgspec.json.Decoder(StreamEvent)
_event_encoder = msgspec.json.Encoder()


def encode_stream_event(event: StreamEvent) -> bytes:
    """The wire form of one event, e.g. ``{"kind":"Delta","text":"Hi"}``."""
    return _event_encoder.encode(event)


def decode_stream_event(data: bytes | str) -> StreamEvent:
    """Decode one event from its wire form.

    Unknown kinds or fields raise ``msgspec.ValidationError``.
    """
    return _event_decoder.decode(data)
