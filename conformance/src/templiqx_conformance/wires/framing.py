"""How a provider frames a stream: the bytes between one event and the next.

A :class:`~templiqx_conformance.wires.Wire` produces *frames* — one per event its provider sends
— and names its :class:`Framing`, which turns frames into the writes of an HTTP body. The kit
then plays everything in that framing and nothing else: keep-alives only where the framing has
them, cuts at its frame boundaries, a line bound only where frames are lines, its own
``Content-Type``. No SSE comment, blank line or ``text/event-stream`` header ever reaches an
adapter whose provider does not speak SSE.

The framings the kit knows:

* :data:`SSE` — server-sent events (``text/event-stream``): frames are
  :class:`~templiqx_conformance.loopback.SSEEvent` values (``event:`` line for named-event
  protocols) or bare payloads; keep-alives are comment lines; a frame ends at a blank line.
* :data:`NDJSON` — one JSON value per line (``application/x-ndjson``, Ollama's ``/api/chat``):
  frames are JSON values; no keep-alives.
* :data:`JSON_ARRAY` — one JSON array streamed element by element (``application/json``): frames
  are the elements; whitespace between elements is the only filler.
* :data:`WHOLE_BODY` — no stream at all: a streaming request is answered with one whole JSON
  body (:meth:`~templiqx_conformance.wires.Wire.encode_whole`), as providers that cannot stream
  do.

Any frame may be a :class:`Raw` text, written verbatim (the kit uses it for malformed JSON).
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from templiqx_conformance.loopback import SSEEvent, sse_comment

__all__ = [
    "JSON_ARRAY",
    "NDJSON",
    "SSE",
    "WHOLE_BODY",
    "Framing",
    "JSONArrayFraming",
    "NDJSONFraming",
    "Raw",
    "SSEFraming",
    "WholeBodyFraming",
]


@dataclass(frozen=True)
class Raw:
    """A frame written verbatim, e.g. deliberately malformed JSON."""

    text: str


def _json_text(frame: Any) -> str:
    if isinstance(frame, Raw):
        return frame.text
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)


def _half(frame: Any) -> str:
    text = frame.data if isinstance(frame, SSEEvent) else frame
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    body = text if isinstance(text, str) else _json_text(text)
    return body[: max(len(body) // 2, 1)]


class Framing(abc.ABC):
    """How frames become the writes of an HTTP body (see the module docstring).

    Attributes: ``name`` (shown in messages), ``content_type`` (the one ``Content-Type`` of a
    streamed reply), ``lines`` (frames are lines, so DECISIONS 9's one-line bound applies) and
    ``streams`` (``False``: a streaming request is answered with one whole body).
    """

    name: str = "framing"
    content_type: str = "application/octet-stream"
    lines: bool = False
    streams: bool = True

    @abc.abstractmethod
    def writes(self, frames: Sequence[Any], line_end: str = "\n") -> list[bytes]:
        """One write per frame (plus any closing write); the last write ends the stream."""

    def keepalive(self, line_end: str = "\n", pad: int = 0) -> bytes | None:
        """A write that says nothing, sent while the provider thinks (``None``: there is none).

        ``pad`` asks for about that many more bytes of it (the kit floods streams with them).
        """
        return None

    @abc.abstractmethod
    def boundaries(self, data: bytes) -> list[int]:
        """The offsets just after each frame of a recorded body (where a cut is clean)."""

    def malformed(self, frame: Any) -> Any:
        """A frame carrying the first half of ``frame``'s JSON text (not valid JSON)."""
        return Raw(_half(frame))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SSEFraming(Framing):
    """Server-sent events, named or not; keep-alives are ``: keep-alive`` comment lines."""

    name = "SSE"
    content_type = "text/event-stream"
    lines = True

    _BLANK_LINE: Final = re.compile(rb"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))")

    def writes(self, frames: Sequence[Any], line_end: str = "\n") -> list[bytes]:
        out = []
        for frame in frames:
            if isinstance(frame, Raw):
                frame = SSEEvent(frame.text)
            event = frame if isinstance(frame, SSEEvent) else SSEEvent(frame)
            out.append(event.encode(line_end))
        return out

    def keepalive(self, line_end: str = "\n", pad: int = 0) -> bytes | None:
        return sse_comment("keep-alive" + "." * pad, line_end=line_end)

    def boundaries(self, data: bytes) -> list[int]:
        return [match.end() for match in self._BLANK_LINE.finditer(data)]

    def malformed(self, frame: Any) -> Any:
        event = frame.event if isinstance(frame, SSEEvent) else None
        return SSEEvent(_half(frame), event=event)


class NDJSONFraming(Framing):
    """Newline-delimited JSON: one compact JSON value per line, no keep-alives."""

    name = "NDJSON"
    content_type = "application/x-ndjson"
    lines = True

    def writes(self, frames: Sequence[Any], line_end: str = "\n") -> list[bytes]:
        return [(_json_text(frame) + line_end).encode("utf-8") for frame in frames]

    def boundaries(self, data: bytes) -> list[int]:
        return [index + 1 for index, byte in enumerate(data) if byte == 0x0A]


class JSONArrayFraming(Framing):
    """One JSON array sent element by element: ``[`` first, ``,`` between, ``]`` last.

    Whitespace between elements (``line_end``) is legal JSON and what such servers send; it is
    also this framing's only keep-alive.
    """

    name = "JSON array"
    content_type = "application/json"

    def writes(self, frames: Sequence[Any], line_end: str = "\n") -> list[bytes]:
        out = []
        for index, frame in enumerate(frames):
            glue = "[" if index == 0 else "," + line_end
            out.append((glue + _json_text(frame)).encode("utf-8"))
        out.append((line_end + "]" if frames else "[]").encode("utf-8"))
        return out

    def keepalive(self, line_end: str = "\n", pad: int = 0) -> bytes | None:
        return (" " * pad + line_end).encode("ascii")

    def boundaries(self, data: bytes) -> list[int]:
        found = []
        depth = 0
        in_string = escaped = False
        for index, byte in enumerate(data):
            char = chr(byte)
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
                continue
            if char == '"':
                in_string = True
            elif char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
                if depth in (0, 1):
                    found.append(index + 1)
        return found


class WholeBodyFraming(Framing):
    """No stream: one whole JSON body answers a streaming request too."""

    name = "whole body"
    content_type = "application/json"
    streams = False

    def writes(self, frames: Sequence[Any], line_end: str = "\n") -> list[bytes]:
        return [_json_text(frame).encode("utf-8") for frame in frames]

    def boundaries(self, data: bytes) -> list[int]:
        return []


SSE: Final = SSEFraming()
NDJSON: Final = NDJSONFraming()
JSON_ARRAY: Final = JSONArrayFraming()
WHOLE_BODY: Final = WholeBodyFraming()
