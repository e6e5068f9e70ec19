"""Newline-delimited JSON, decoded as bytes arrive, without I/O.

Feed it bytes; it returns the complete lines parsed as JSON. A line ends at LF (a CR before it
is dropped), split anywhere across reads. Blank lines are skipped. A line longer than the limit
raises :class:`LineTooLongError` before it is held in memory whole; a line that is not JSON
raises :class:`ValueError`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["LineTooLongError", "NDJSONDecoder"]


class LineTooLongError(ValueError):
    """One line exceeded the limit."""


class NDJSONDecoder:
    """Incremental decoder; one per stream."""

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._pending = b""

    def feed(self, chunk: bytes) -> list[Any]:
        """The JSON values of the lines ``chunk`` completes."""
        buffer = self._pending + chunk
        *lines, self._pending = buffer.split(b"\n")
        if len(self._pending) > self._max:
            raise LineTooLongError(self._max)
        values = []
        for line in lines:
            if len(line) > self._max:
                raise LineTooLongError(self._max)
            text = line.removesuffix(b"\r").strip()
            if text:
                values.append(json.loads(text))
        return values

    @property
    def pending(self) -> bool:
        """Whether an unfinished line is waiting for its end."""
        return bool(self._pending.strip())
