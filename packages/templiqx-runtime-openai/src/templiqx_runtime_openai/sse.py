"""An incremental server-sent-events decoder tuned for long token streams.

Feed it the body as it arrives (:meth:`SSEDecoder.feed`, any split) and it returns the ``data``
payload of every event completed by that piece, as bytes, in order. It follows the WHATWG
event-stream grammar where it matters for chat completions:

* lines end with CR, LF or CRLF — including a CRLF split across two reads;
* a leading UTF-8 byte order mark is skipped;
* ``:comment`` lines, ``event``/``id``/``retry`` and unknown fields are ignored;
* several ``data`` lines of one event are joined with ``\\n``; ``data`` without a colon is an
  empty data line; one optional space after the colon is dropped;
* an event is dispatched at a blank line, and only if it has a non-empty data buffer; a final
  event not followed by a blank line is never dispatched (the stream was cut).

Bytes are never decoded here: payloads are whole lines, so a multi-byte UTF-8 character split
across reads is reassembled before anyone decodes it. Lines longer than ``max_line`` bytes raise
:class:`LineTooLongError` as soon as the buffered part of the line exceeds it, so one endless line
cannot grow memory without bound.

Speed: a read is scanned with ``bytes.find``/``bytes.split`` (C loops); CR is normalized with
``bytes.replace`` only when the read contains one; the partial tail of a line is kept as a list
of pieces and joined once, so a long line spread over many reads is copied once, not per read.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DONE", "LineTooLongError", "SSEDecoder"]

DONE: Final = b"[DONE]"
"""The OpenAI end-of-stream sentinel payload."""

_BOM: Final = b"\xef\xbb\xbf"


class LineTooLongError(ValueError):
    """One line of the stream exceeded the decoder's ``max_line`` bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"event-stream line exceeded {limit} bytes")
        self.limit = limit


class SSEDecoder:
    """Turns event-stream bytes into event data payloads (see the module docstring)."""

    __slots__ = (
        "_cr_pending",
        "_data",
        "_idle",
        "_max_line",
        "_partial",
        "_partial_len",
        "_started",
    )

    def __init__(self, max_line: int = 1_048_576) -> None:
        self._max_line = max_line
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._data: bytes | None = None
        self._cr_pending = False
        self._started = False
        self._idle = False

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line (for memory checks)."""
        return self._partial_len + (len(self._data) if self._data is not None else 0)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Consume one read; return the data payloads of the events it completed."""
        if self._idle:
            end = len(chunk) - 2
            if (
                chunk.find(b"\n") == end
                and chunk.endswith(b"\n")
                and chunk.startswith(b"data: ")
                and b"\r" not in chunk
                and end <= self._max_line
            ):
                # The common case: exactly one complete single-line event, nothing buffered.
                return [chunk[6:end]] if end > 6 else []
        if not self._started:
            if not chunk:
                return []
            if self._partial:
                chunk = b"".join(self._partial) + chunk
                self._partial.clear()
                self._partial_len = 0
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                # Could be the start of a BOM split across reads: wait for more bytes.
                self._partial.append(chunk)
                self._partial_len = len(chunk)
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._cr_pending:
            self._cr_pending = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._cr_pending = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._idle = False
                self._hold(chunk)
            return []
        lines = chunk.split(b"\n")
        tail = lines.pop()
        limit = self._max_line
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial.clear()
            self._partial_len = 0
            if len(lines[0]) > limit:
                raise LineTooLongError(limit)
        if len(chunk) > limit:
            for line in lines:
                if len(line) > limit:
                    raise LineTooLongError(limit)
        if tail:
            self._hold(tail)
        events: list[bytes] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(data)
                data = None
            elif line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
                data = value if data is None else data + b"\n" + value
            elif line == b"data":
                data = b"" if data is None else data + b"\n"
            # Comments (":...") and every other field are ignored.
        self._data = data
        self._idle = data is None and not self._partial and not self._cr_pending
        return events

    def _hold(self, piece: bytes) -> None:
        self._partial.append(piece)
        self._partial_len += len(piece)
        if self._partial_len > self._max_line:
            raise LineTooLongError(self._max_line)
