"""What the envelope keeps of a stream: a bounded record of the events, and the consumer's fate.

A streamed execution's envelope carries its events (DECISIONS 19), but a runtime may stream a
million one-byte deltas: keeping every event costs about 400 bytes each. :class:`StreamRecord`
keeps a bounded *prefix* — at most :attr:`StreamLimits.events` events and
:attr:`StreamLimits.text_bytes` bytes of delta text — always keeps the first terminal event,
and counts what it dropped; the envelope then says so with a ``TQX_STREAM_EVENTS_TRUNCATED``
warning. The receipt is never affected: the runtime assembles the output itself.

:class:`ConsumerGuard` sits between the runtime and the caller's live sink: it records each
event, forwards it, and when the caller's code raises, stops forwarding and sets the cancel
token the runtime watches, so the model does not keep generating for nobody.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from templiqx_contracts import Complete, Delta, Diagnostic, Failed, StreamEvent, ToolCallDelta
from templiqx_ports import CancelToken, StreamSink

__all__ = [
    "DEFAULT_STREAM_LIMITS",
    "ConsumerGuard",
    "EitherCancel",
    "StreamLimits",
    "StreamRecord",
]


@dataclass(frozen=True)
class StreamLimits:
    """How much of a stream an envelope keeps (the live consumer always sees every event)."""

    events: int = 65_536
    """Events kept, terminal included (65,536 deltas is a long answer token by token)."""
    text_bytes: int = 4 * 1024 * 1024
    """UTF-8 bytes of delta text and tool-call fragments kept (twice the runtime output cap)."""

    def __post_init__(self) -> None:
        if self.events < 1 or self.text_bytes < 0:
            raise ValueError("stream limits keep at least one event and zero or more bytes")


DEFAULT_STREAM_LIMITS = StreamLimits()


def _size(event: StreamEvent) -> int:
    if isinstance(event, Delta):
        text = event.text
    elif isinstance(event, ToolCallDelta):
        text = event.arguments_fragment
    else:
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


class StreamRecord:
    """The events of one stream as the envelope keeps them (see the module docstring)."""

    def __init__(self, limits: StreamLimits = DEFAULT_STREAM_LIMITS) -> None:
        self._limits = limits
        self.events: list[StreamEvent] = []
        self._kept_bytes = 0
        self.dropped_events = 0
        self.dropped_bytes = 0
        self._terminal_seen = False
        self.first_chunk: float | None = None
        """When the first ``Delta`` or ``ToolCallDelta`` arrived (``time.perf_counter()``)."""

    def add(self, event: StreamEvent) -> None:
        """Keep ``event`` if it fits (a first terminal event always fits)."""
        size = _size(event)
        terminal = isinstance(event, (Complete, Failed))
        if self.first_chunk is None and not terminal:
            self.first_chunk = time.perf_counter()
        first_terminal = terminal and not self._terminal_seen
        fits = (
            len(self.events) < self._limits.events - 1
            and self._kept_bytes + size <= self._limits.text_bytes
        )
        if first_terminal or fits:
            self.events.append(event)
            self._kept_bytes += size
        else:
            self.dropped_events += 1
            self.dropped_bytes += size
        if first_terminal:
            self._terminal_seen = True

    def ending_in(self, terminal: Failed) -> list[StreamEvent]:
        """The deltas kept before any terminal event, then ``terminal``.

        The events of a failed stream: the runtime's own ``Failed`` when it carries the same
        code as ``terminal``, else ``terminal`` (the application's projection of the failure).
        """
        kept: list[StreamEvent] = []
        for event in self.events:
            if isinstance(event, Failed) and event.code == terminal.code:
                kept.append(event)
                return kept
            if isinstance(event, (Complete, Failed)):
                break
            kept.append(event)
        kept.append(terminal)
        return kept

    def truncation(self) -> list[Diagnostic]:
        """A ``TQX_STREAM_EVENTS_TRUNCATED`` warning when events were dropped, else nothing."""
        if not self.dropped_events:
            return []
        return [
            Diagnostic(
                code="TQX_STREAM_EVENTS_TRUNCATED",
                severity="warning",
                message=(
                    f"stream_events keeps the first {len(self.events) - 1} events and the "
                    f"terminal one; {self.dropped_events} later events "
                    f"({self.dropped_bytes} bytes of text) were delivered but not kept"
                ),
                json_pointer="/stream_events",
                help=(
                    "the receipt's output is complete; raise the service's stream_limits to "
                    f"keep more (now {self._limits.events} events, "
                    f"{self._limits.text_bytes} bytes)"
                ),
            )
        ]


class EitherCancel:
    """A cancel token set when either the caller's token or the application's own is set."""

    def __init__(self, caller: CancelToken | None) -> None:
        self._caller = caller
        self.own = threading.Event()

    def is_set(self) -> bool:
        """Whether either token is set."""
        return self.own.is_set() or (self._caller is not None and self._caller.is_set())


class ConsumerGuard:
    """The sink a runtime is given: records each event, then hands it to the caller's sink.

    A caller sink that raises is not called again, and the runtime is asked to stop through
    :attr:`cancel` (``failure`` names the exception type). Only ``Exception`` is caught: a
    ``KeyboardInterrupt`` still unwinds the call.
    """

    def __init__(self, record: StreamRecord, sink: StreamSink | None, cancel: EitherCancel) -> None:
        self.record = record
        self._sink = sink
        self.cancel = cancel
        self.failure: str | None = None

    def __call__(self, event: StreamEvent) -> None:
        self.record.add(event)
        if self._sink is None or self.failure is not None:
            return
        try:
            self._sink(event)
        except Exception as exc:  # the caller's code: it stops the call, not the service
            self.consumer_failed(exc)

    def consumer_failed(self, exc: BaseException) -> None:
        """The caller's consumer raised ``exc``: stop forwarding and cancel the runtime."""
        if self.failure is None:
            self.failure = type(exc).__name__
        self.cancel.own.set()

    def problems(self, *, cancelled: bool) -> list[Diagnostic]:
        """The ``TQX_STREAM_SINK_FAILED`` warning when the consumer raised, else nothing."""
        if self.failure is None:
            return []
        outcome = (
            "the runtime call was cancelled"
            if cancelled
            else "the runtime was asked to stop but finished first"
        )
        return [
            Diagnostic(
                code="TQX_STREAM_SINK_FAILED",
                severity="warning",
                message=(
                    f"the stream consumer raised {self.failure}; it got no further events and "
                    f"{outcome}"
                ),
                json_pointer="/stream_events",
                help="fix the code that handles stream events (the sink or the loop body)",
            )
        ]
