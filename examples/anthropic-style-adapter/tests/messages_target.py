"""The Messages runtime's conformance target: its factory, the kit's wire for its API, recordings.

The kit ships the wire for a Messages-style API (``MessagesWire``: named-event SSE). The one
thing it needs from this adapter is the name of the tool the adapter forces for structured
output, so that it answers a structured request through that tool as the real API would.

``target`` is the same setup for the command::

    templiqx-conformance run messages_target:target      (from this folder)
"""

from __future__ import annotations

from typing import Final

from acme_messages import OUTPUT_TOOL, MessagesRuntime, MessagesSettings
from messages_recordings import RECORDINGS

from templiqx_conformance import AdapterTarget, MessagesWire

__all__ = ["MODEL", "WIRE", "make_runtime", "target"]

MODEL: Final = "kit-messages-model"
WIRE: Final = MessagesWire(output_tool=OUTPUT_TOOL)


def make_runtime(base_url: str, api_key: str) -> MessagesRuntime:
    """The kit's factory: a runtime at the kit's server; ``api_key`` is the kit's marker."""
    return MessagesRuntime(
        MessagesSettings(base_url=base_url, api_key=api_key, model=MODEL, timeout_ms=10_000)
    )


target = AdapterTarget(factory=make_runtime, transport=WIRE, recordings=RECORDINGS)
