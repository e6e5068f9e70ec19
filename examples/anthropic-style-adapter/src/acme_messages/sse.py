"""A server-sent-events decoder for named events (``event:`` then ``data:``), without I/O.

Feed it bytes as they arrive; it returns the complete events. Lines may end in LF, CRLF or CR,
split anywhere across reads (a CR at the very end of a read waits: an LF may follow). Comment
lines (``: keep-alive``) and ``id:``/``retry:`` fields are ignored. A line longer than the
limit raises :class:`LineTooLongError` before it is held in memory whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LineTooLongError", "ServerEvent", "SSEDecoder"]

_EOL = re.compile(rb"\r\n|\r|\n")


class LineTooLongError(ValueError):
    """One event-stream line exceeded the limit."""


@dataclass(frozen=True)
class ServerEvent:
    """One dispatched event: its name (``message`` when unnamed) and its data lines joined."""

    name: str
    data: str


class SSEDecoder:
    """Incremental decoder; one per stream."""

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._pending = b""
        self._name = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        """The events completed by ``chunk``."""
        buffer = self._pending + chunk
        events: list[ServerEvent] = []
        start = 0
        for match in _EOL.finditer(buffer):
            if match.group() == b"\r" and match.end() == len(buffer):
                break  # a CR ending the read may be the first half of CRLF
            line = buffer[start : match.start()]
            start = match.end()
            if len(line) > self._max:
                raise LineTooLongError(self._max)
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        self._pending = buffer[start:]
        if len(self._pending) > self._max:
            raise LineTooLongError(self._max)
        return events

    def _line(self, line: str) -> ServerEvent | None:
        if not line:
            if not self._data:
                self._name = ""
                return None
            event = ServerEvent(self._name or "message", "\n".join(self._data))
            self._name, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None
