"""A streamed ``execute_contract`` with live progress, over the service's public async API.

The server keeps no bridge of its own between the event loop and the service: every call that
leaves the loop is ``await service.ainvoke_bound(...)`` (the service's bounded worker pool, or
a natively async runtime awaited on the loop), and a streamed execution is read with
``service.astream_contract(...)`` here.

:func:`stream_with_progress` reads the stream as fast as the runtime produces it and reports
to the client in **coalesced** ``notifications/progress``: at most one every
:data:`INTERVAL_SECONDS` (sooner only when :data:`FLUSH_BYTES` of event text are waiting, so no
notification grows without bound), each carrying every event since the previous one, plus a
final one when the stream ends. A fast stream is never slowed to the pace of notifications, and
a slow one is still seen live: an event waits at most one interval.

Each notification (a :class:`ProgressNote`) has

* ``message``: a line for people (``Receiving the answer: 1,234 characters so far``, then
  ``Answer complete: ...`` or ``Failed (TQX_...): ...``);
* ``progress``: the number of stream events so far (it grows with every notification); the
  final notification counts the end as one more step and has ``total`` equal to its
  ``progress`` (the stream is done: 100 %);
* ``_meta``, the structured data beside the message (MCP keeps ``_meta`` for exactly this):
  ``templiqx/events``, the ``Delta`` and ``ToolCallDelta`` events since the previous
  notification in their wire form (the final one also holds a ``Failed`` terminal event; a
  ``Complete`` is never sent — the tool result carries it, with the output); and for a
  structured-output contract ``templiqx/partial``, the answer so far (``run.partial``'s
  value, unfinished strings as they grow), whenever it changed since the last notification that
  carried it (DECISIONS 17, 22). A value whose JSON would exceed :data:`PARTIAL_LIMIT` bytes is
  not sent; the first notification where that happens carries
  ``templiqx/partial_omitted: true`` instead, and later ones neither (the value only grows).

When the client cancels the call (``notifications/cancelled``), the SDK cancels the handler, the
stream cancels the runtime, and the final notification (with the ``Failed`` event) is the last
thing sent, since a cancelled call gets no result. A notification that cannot be sent (the
client went away) stops the runtime, and the envelope says so (``TQX_STREAM_SINK_FAILED``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import msgspec

from templiqx_application import PartialView, TempliqxService
from templiqx_contracts import (
    MISSING,
    Complete,
    Delta,
    Failed,
    OperationEnvelope,
    StreamEvent,
    ToolCallDelta,
    quote_input,
)

__all__ = [
    "EVENTS_KEY",
    "FLUSH_BYTES",
    "INTERVAL_SECONDS",
    "PARTIAL_KEY",
    "PARTIAL_LIMIT",
    "PARTIAL_OMITTED_KEY",
    "ProgressNote",
    "SendProgress",
    "stream_with_progress",
]

INTERVAL_SECONDS: Final = 0.05
"""The shortest time between two progress notifications (the final one excepted)."""

FLUSH_BYTES: Final = 256 * 1024
"""Event text waiting that is sent at once, interval or not: no notification grows unbounded."""

PENDING_BYTES: Final = 4 * FLUSH_BYTES
"""Event text waiting beyond which reading the stream pauses until a notification is out."""

PARTIAL_LIMIT: Final = 16_384
"""The largest ``partial`` value a progress notification carries: UTF-8 bytes of its JSON."""

EVENTS_KEY: Final = "templiqx/events"
PARTIAL_KEY: Final = "templiqx/partial"
PARTIAL_OMITTED_KEY: Final = "templiqx/partial_omitted"

_encode = msgspec.json.encode


@dataclass(frozen=True)
class ProgressNote:
    """One ``notifications/progress``: what it says to people and the data beside it."""

    progress: float
    total: float | None
    message: str
    meta: dict[str, Any]


SendProgress = Callable[[ProgressNote], Awaitable[None]]


class _PartialMembers:
    """The partial-answer members of each notification (see the module docstring)."""

    def __init__(self, view: PartialView | None) -> None:
        self._view = view
        self._sent: bytes | None = None
        self._omitted = view is None

    def add_to(self, meta: dict[str, Any]) -> None:
        if self._omitted:
            return
        assert self._view is not None
        value = self._view.value
        if value is MISSING:
            return
        encoded = _encode(value)
        if len(encoded) > PARTIAL_LIMIT:
            self._omitted = True
            meta[PARTIAL_OMITTED_KEY] = True
            return
        if encoded == self._sent:
            return
        self._sent = encoded
        meta[PARTIAL_KEY] = msgspec.json.decode(encoded)


@dataclass
class _Tally:
    """What the stream brought so far, for the people-facing message."""

    events: int = 0
    characters: int = 0
    tool_characters: int = 0
    tools: dict[str, None] = field(default_factory=dict)
    """The names of the tools called so far, in order (a set that keeps order)."""

    def count(self, event: StreamEvent) -> int:
        """Count ``event``; about the bytes its wire form takes."""
        self.events += 1
        if type(event) is Delta:
            self.characters += len(event.text)
            return len(event.text) + 24
        assert isinstance(event, ToolCallDelta)
        self.tool_characters += len(event.arguments_fragment)
        if event.name not in self.tools:
            self.tools[event.name] = None
        return len(event.arguments_fragment) + len(event.name) + 48

    def _names(self) -> str:
        names = [quote_input(name) for name in list(self.tools)[:5]]
        more = len(self.tools) - len(names)
        return ", ".join(names) + (f" and {more} more" if more else "")

    def so_far(self) -> str:
        if self.tools:
            return (
                f"Receiving tool calls ({self._names()}): {self.tool_characters:,} characters "
                "of arguments so far"
            )
        return f"Receiving the answer: {self.characters:,} characters so far"

    def done(self, terminal: StreamEvent | None) -> str:
        if isinstance(terminal, Failed):
            message = (
                terminal.message if len(terminal.message) <= 200 else (terminal.message[:199] + "…")
            )
            state = "Cancelled" if terminal.code == "TQX_RUNTIME_CANCELLED" else "Failed"
            return f"{state} ({terminal.code}) after {self.events:,} events: {message}"
        if self.tools:
            return f"Tool calls complete ({self._names()}) in {self.events:,} events"
        return f"Answer complete: {self.characters:,} characters in {self.events:,} events"


class _Relay:
    """Events waiting for the next notification, and the notifications that carry them."""

    def __init__(self, send: SendProgress, partial: _PartialMembers, interval: float) -> None:
        self._send = send
        self._partial = partial
        self._interval = interval
        self._pending: list[StreamEvent] = []
        self._pending_bytes = 0
        self._tally = _Tally()
        self._last_sent = -float("inf")
        self._arrived = anyio.Event()  # something is pending (or the stream ended)
        self._urgent = anyio.Event()  # FLUSH_BYTES are pending (or the stream ended)
        self._drained = anyio.Event()  # a notification went out (or sending failed)
        self.ended = False
        self.failure: Exception | None = None

    def add(self, event: StreamEvent) -> bool:
        """Keep ``event`` for the next notification; whether too much is pending now (the
        caller then waits for :meth:`room`)."""
        self._pending.append(event)
        self._pending_bytes += self._tally.count(event)
        if len(self._pending) == 1:
            self._arrived.set()
        if self._pending_bytes >= FLUSH_BYTES:
            self._urgent.set()
        return self._pending_bytes >= PENDING_BYTES

    async def room(self) -> None:
        """Wait while too much is pending: the client reads slower than the model writes."""
        while self._pending_bytes >= PENDING_BYTES and self.failure is None:
            await self._drained.wait()

    def end(self) -> None:
        self.ended = True
        self._arrived.set()
        self._urgent.set()

    def _over(self) -> bool:
        return self.ended

    async def pace(self) -> None:
        """Send what is pending, at most once an interval, until the stream ends."""
        while True:
            await self._arrived.wait()
            if self._over():
                return  # the final notification is the caller's
            wait = self._last_sent + self._interval - anyio.current_time()
            if wait > 0:
                with anyio.move_on_after(wait):
                    await self._urgent.wait()
            if self._over():
                return
            try:
                await self._notify(None, final=False)
            except Exception as exc:  # the client went away: the reader stops the runtime
                self.failure = exc
                self._drained.set()
                return

    async def _notify(self, terminal: StreamEvent | None, *, final: bool) -> None:
        events: list[Any] = msgspec.to_builtins(self._pending)
        if isinstance(terminal, Failed):
            events.append(msgspec.to_builtins(terminal))
        self._pending = []
        self._pending_bytes = 0
        self._arrived = anyio.Event()
        self._urgent = anyio.Event()
        meta: dict[str, Any] = {EVENTS_KEY: events}
        self._partial.add_to(meta)
        count = self._tally.events + (1 if final else 0)  # the end is one more step
        message = self._tally.done(terminal) if final else self._tally.so_far()
        self._last_sent = anyio.current_time()
        note = ProgressNote(
            progress=float(count), total=float(count) if final else None, message=message, meta=meta
        )
        drained, self._drained = self._drained, anyio.Event()
        try:
            await self._send(note)
        finally:
            drained.set()

    async def finish(self, terminal: StreamEvent | None) -> None:
        """The final notification: what is pending, and how the stream ended."""
        if self.failure is None:
            await self._notify(terminal, final=True)


async def stream_with_progress(
    service: TempliqxService,
    bound: Mapping[str, Any],
    send: SendProgress,
    *,
    interval: float = INTERVAL_SECONDS,
) -> OperationEnvelope:
    """Run a streamed ``execute_contract`` (``bound``: its bound arguments), reporting its
    events through ``send`` in coalesced notifications (see the module docstring)."""
    arguments = {name: value for name, value in bound.items() if name != "stream"}
    run = service.astream_contract(**arguments)
    relay: _Relay | None = None
    try:
        await run.open()
        if not run.ok:  # refused before the model: no stream, nothing to report
            return run.envelope
        relay = _Relay(send, _PartialMembers(run.partial), interval)
        terminal: StreamEvent | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(relay.pace)
            async for event in run:
                if isinstance(event, (Delta, ToolCallDelta)):
                    if relay.add(event):
                        await relay.room()
                elif isinstance(event, (Complete, Failed)):
                    terminal = event
                if relay.failure is not None:
                    break
            relay.end()
        if relay.failure is not None:
            with anyio.CancelScope(shield=True):
                await run.aclose(relay.failure)
            return run.envelope
        with contextlib.suppress(Exception):  # the stream is over: the result is sent anyway
            await relay.finish(terminal)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await run.aclose()
            if relay is not None and relay.failure is None:
                ended = run.envelope.stream_events[-1:] if run.finished else []
                final = ended[0] if ended and isinstance(ended[0], Failed) else None
                with contextlib.suppress(Exception):  # the client is gone: nothing to tell
                    await relay.finish(final)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await run.aclose()
    return run.envelope
