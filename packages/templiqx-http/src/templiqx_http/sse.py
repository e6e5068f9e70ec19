"""Server-Sent Events: the building blocks of a streamed ``execute_contract`` (DECISIONS 27).

A streamed execution is sent as one SSE event per :data:`~templiqx_contracts.StreamEvent` —
the event's name is its ``kind`` (``Delta``, ``ToolCallDelta``, ``Complete``, ``Failed``), its
data the event's wire JSON (:func:`~templiqx_contracts.encode_stream_event`) — then one
``envelope`` event whose data is the operation envelope without ``stream_events`` (the client
already has them)::

    event: Delta
    data: {"kind":"Delta","text":"{\\"summary\\":"}

    event: Complete
    data: {"kind":"Complete","adapter":{...},"request_fingerprint":"...",...}

    event: envelope
    data: {"api_version":"templiqx/v1alpha1","operation":"execute_contract","ok":true,...}

For a structured-output contract, an event that changed the answer so far is followed by a
``partial`` event whose data is what it changed, as incremental changes (DECISIONS 27:
:data:`~templiqx_contracts.PartialChange`, the array
:func:`~templiqx_contracts.encode_partial_changes` writes)::

    event: partial
    data: [{"op":"set","path":[],"value":{}},{"op":"set","path":["summary"],"value":"Anouk "}]

Each carries only what is new — a member added, a string grown by its new text — so a stream's
``partial`` events add up to a size linear in the answer; applying them all, in order, from
nothing (:func:`~templiqx_contracts.apply_partial_changes`, or :func:`partial_value`) gives the
answer so far, and after the last one the answer.

The stream events' data, in order, are the JSON-mode envelope's ``stream_events``; adding them
to the ``envelope`` event's data gives that envelope exactly (:func:`rebuild_envelope`).

``Complete`` is the runtime's terminal event: the model answered, and here is its receipt. It
is not the verdict on the call. The application checks the answer afterwards (the output
schema, the declared tools), so a ``Complete`` may be followed by an ``envelope`` whose ``ok``
is false (``TQX_OUTPUT_SCHEMA``). A host decides success on ``envelope.ok``, never on
``Complete``.

Every function here is public so that a host writing its own route can emit the same stream
(:func:`sse_event`, :func:`stream_event_sse`, :func:`envelope_sse`); :class:`SseDecoder` reads
it back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from templiqx_contracts import (
    MISSING,
    OperationEnvelope,
    PartialChange,
    StreamEvent,
    apply_partial_changes,
    decode_partial_changes,
    encode_partial_changes,
    encode_stream_event,
)

__all__ = [
    "ENVELOPE_EVENT",
    "PARTIAL_EVENT",
    "SSE_HEADERS",
    "SseDecoder",
    "SseMessage",
    "envelope_sse",
    "partial_sse",
    "partial_value",
    "rebuild_envelope",
    "sse_comment",
    "sse_event",
    "stream_event_sse",
]

ENVELOPE_EVENT: Final = "envelope"
"""The name of the last event of a streamed execution."""

PARTIAL_EVENT: Final = "partial"
"""The name of the events carrying what a stream event changed in the structured answer."""

SSE_HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-store",
    "x-accel-buffering": "no",  # nginx: pass each event through at once
}
"""The response headers of an event stream (buffering off for reverse proxies)."""

_encode = msgspec.json.encode


def sse_event(name: str, data: bytes | str) -> bytes:
    """One event: ``event: name``, one ``data:`` line per line of ``data``, a blank line."""
    text = data if isinstance(data, bytes) else data.encode("utf-8")
    if b"\n" in text or b"\r" in text:
        lines = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        payload = b"".join(b"data: " + line + b"\n" for line in lines)
    else:
        payload = b"data: " + text + b"\n"
    return b"event: " + name.encode("ascii") + b"\n" + payload + b"\n"


def sse_comment(text: str = "") -> bytes:
    """A comment line (``: text``), which clients ignore: a keep-alive through proxies."""
    return b": " + text.encode("utf-8") + b"\n\n"


def stream_event_sse(event: StreamEvent) -> bytes:
    """The SSE event of one stream event: named by its ``kind``, its wire JSON as data."""
    return sse_event(type(event).__name__, encode_stream_event(event))


def partial_sse(changes: Sequence[PartialChange]) -> bytes:
    """The ``partial`` event of one update's changes (``update.changes`` of
    ``run.partials()``), or nothing when the update changed nothing."""
    if not changes:
        return b""
    return sse_event(PARTIAL_EVENT, encode_partial_changes(changes))


def envelope_sse(envelope: OperationEnvelope) -> bytes:
    """The closing ``envelope`` event: the envelope without ``stream_events``."""
    lean = msgspec.structs.replace(envelope, stream_events=[])
    return sse_event(ENVELOPE_EVENT, _encode(lean))


@dataclass(frozen=True)
class SseMessage:
    """One decoded event: its name (``message`` when it had none) and its data."""

    event: str
    data: str

    def json(self) -> Any:
        """The data as JSON."""
        return msgspec.json.decode(self.data)


class SseDecoder:
    """Reads an event stream fed in chunks of any size (for clients and tests).

    ``feed`` returns the events completed by the chunk; comments, ``id`` and ``retry`` lines
    are skipped.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseMessage]:
        self._buffer += chunk
        done: list[SseMessage] = []
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                return done
            raw, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
            line = raw.rstrip(b"\r").decode("utf-8")
            if not line:
                if self._data:
                    done.append(SseMessage(self._event or "message", "\n".join(self._data)))
                self._event, self._data = "", []
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    self._event = value
                elif name == "data":
                    self._data.append(value)

    def events(self, chunks: Iterator[bytes]) -> Iterator[SseMessage]:
        """Every event of a stream given as chunks."""
        for chunk in chunks:
            yield from self.feed(chunk)


def partial_value(messages: list[SseMessage]) -> Any:
    """The structured answer the ``partial`` events of a stream add up to (``MISSING`` when
    there are none)."""
    value: Any = MISSING
    for message in messages:
        if message.event == PARTIAL_EVENT:
            value = apply_partial_changes(value, decode_partial_changes(message.data))
    return value


def rebuild_envelope(messages: list[SseMessage]) -> dict[str, Any]:
    """The JSON-mode envelope from a stream's events: the ``envelope`` event's data with the
    stream events (every other event whose name is an event ``kind``) as ``stream_events``.

    Raises ``ValueError`` when the stream has no ``envelope`` event.
    """
    kinds = {"Delta", "ToolCallDelta", "Complete", "Failed"}
    events = [message.json() for message in messages if message.event in kinds]
    closing = [message for message in messages if message.event == ENVELOPE_EVENT]
    if len(closing) != 1:
        raise ValueError(f"a stream ends with one envelope event; this one has {len(closing)}")
    envelope: dict[str, Any] = closing[0].json()
    if events:
        rebuilt: dict[str, Any] = {}
        for key, value in envelope.items():
            rebuilt[key] = value
            if key == "fingerprints":
                rebuilt["stream_events"] = events
        if "stream_events" not in rebuilt:
            rebuilt["stream_events"] = events
        envelope = rebuilt
    return envelope
