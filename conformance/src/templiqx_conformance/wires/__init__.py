"""The wire hook: how a provider's HTTP API writes answers, errors and streams.

* :mod:`~templiqx_conformance.wires.answer` — what the kit's model says (:class:`Answer`,
  :class:`ToolCall`) and the deltas an adapter must make of it;
* :mod:`~templiqx_conformance.wires.framing` — how a stream is framed: :data:`SSE` (with or
  without named events), :data:`NDJSON`, :data:`JSON_ARRAY`, :data:`WHOLE_BODY`;
* :mod:`~templiqx_conformance.wires.wire` — the :class:`Wire` an author writes (or picks),
  :class:`WireFault` and :class:`Recording`;
* the wires the kit ships: :class:`OpenAIWire` (``openai``), :class:`MessagesWire`
  (``anthropic-messages``, named-event SSE) and :class:`OllamaWire` (``ollama``, NDJSON);
* :mod:`~templiqx_conformance.wires.registry` — transports by name and entry point.
"""

from templiqx_conformance.wires.answer import Answer, ToolCall, WholeCall, fragments
from templiqx_conformance.wires.framing import (
    JSON_ARRAY,
    NDJSON,
    SSE,
    WHOLE_BODY,
    Framing,
    Raw,
)
from templiqx_conformance.wires.messages import MessagesWire
from templiqx_conformance.wires.ollama import OllamaWire
from templiqx_conformance.wires.openai import OpenAIWire
from templiqx_conformance.wires.registry import (
    TRANSPORTS,
    WIRE_ENTRY_POINTS,
    resolve_wire,
    transport_names,
)
from templiqx_conformance.wires.wire import (
    Recording,
    UnrepresentableError,
    Wire,
    WireFault,
    declared_tool_problems,
)

__all__ = [
    "JSON_ARRAY",
    "NDJSON",
    "SSE",
    "TRANSPORTS",
    "WHOLE_BODY",
    "WIRE_ENTRY_POINTS",
    "Answer",
    "Framing",
    "MessagesWire",
    "OllamaWire",
    "OpenAIWire",
    "Raw",
    "Recording",
    "ToolCall",
    "UnrepresentableError",
    "WholeCall",
    "Wire",
    "WireFault",
    "declared_tool_problems",
    "fragments",
    "resolve_wire",
    "transport_names",
]
