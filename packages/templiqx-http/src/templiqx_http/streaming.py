"""``POST …/execute`` with ``Accept: text/event-stream``: the execution, live, as SSE.

The call is opened first (``service.astream_contract(...).open()``: loaded, compiled and
checked on the service's workers). A call refused then — bad values, a contract that does not
compile, a missing capability — is an ordinary JSON answer with its 4xx status, before any model
call and before any byte of a stream; so is a call whose runtime's settings are incomplete
(``create_app(runtime_check=...)``: ``TQX_RUNTIME_PERMANENT`` naming what to set), and a
preparation still running at the request's deadline (504, its work cancelled). Otherwise the
response is ``200 text/event-stream``: one event per stream event as the runtime emits it (for a
structured answer, each followed by a ``partial`` event with what it changed in the answer so
far), then the ``envelope`` event (:mod:`templiqx_http.sse`).

Three tasks share the response: the producer reads the stream and writes each event as it
comes — events written within 2 ms of each other go out in one send, and a write waits while
the client is slow to read (a slow client slows the runtime instead of filling memory); a
keep-alive task writes a comment line when the stream has been silent for
``sse_keepalive_s``; a watcher waits for the client to go away. When it does, the producer is
cancelled, which closes the stream: the runtime's call is cancelled and its
upstream connection closed. (An earlier design handed every event to a separate sender task;
waking it for each one cost more than relaying the event.) The request's deadline and a
draining server stop the producer the same way, but the stream still ends properly: ``Failed``
(``TQX_RUNTIME_CANCELLED``), then the ``envelope``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from starlette.types import Receive, Scope, Send

import templiqx_application.stream_runs  # noqa: F401  (imported with the app, not on a first call)
from templiqx_application import AsyncContractStream
from templiqx_contracts import Complete, Failed
from templiqx_http.middleware import OK_KEY
from templiqx_http.sse import (
    SSE_HEADERS,
    envelope_sse,
    partial_sse,
    sse_comment,
    stream_event_sse,
)

if TYPE_CHECKING:
    from templiqx_http.operations import OperationEndpoint

__all__ = ["GATHER_BYTES", "GATHER_S", "stream_execution"]

GATHER_S: Final = 0.002
"""How long a written event may wait for others to go out with it."""
GATHER_BYTES: Final = 65_536
"""Written bytes that go out at once, without waiting."""

_log = logging.getLogger("templiqx_http")
_HEADERS: Final = [(k.encode("ascii"), v.encode("ascii")) for k, v in SSE_HEADERS.items()]


class _Writer:
    """The response body's writes, gathered: what is written within :data:`GATHER_S` of the
    first unsent byte goes out in one send (a stream's deltas often arrive together: a network
    read holds many), at most :data:`GATHER_BYTES` waiting; one send at a time."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._lock = asyncio.Lock()
        self._pending: list[bytes] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Task[None]] = set()
        self.last = asyncio.get_running_loop().time()

    async def write(self, data: bytes) -> None:
        self._pending.append(data)
        self._size += len(data)
        self.last = asyncio.get_running_loop().time()
        if self._size >= GATHER_BYTES:
            await self.flush()  # a slow client makes this wait: the producer slows down
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(GATHER_S, self._flush_later)

    def _flush_later(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self.flush())
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def flush(self) -> None:
        """Send what is waiting (nothing when nothing is)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._lock:
            if not self._pending:
                return
            data = b"".join(self._pending)
            self._pending.clear()
            self._size = 0
            await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def close(self) -> None:
        """Stop gathering: send what waits, wait for sends in progress."""
        await self.flush()
        for task in list(self._flushing):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task


async def _keep_alive(writer: _Writer, every: float) -> None:
    loop = asyncio.get_running_loop()
    while True:
        silent = loop.time() - writer.last
        if silent >= every:
            await writer.write(sse_comment())
            await writer.flush()
            continue
        await asyncio.sleep(every - silent)


async def _watch(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def stream_execution(
    endpoint: OperationEndpoint,
    bound: Mapping[str, Any],
    scope: Scope,
    receive: Receive,
    send: Send,
    cancel: threading.Event,
    deadline: float,
) -> None:
    """Serve one streamed execution (``bound``: ``execute_contract``'s bound arguments).

    ``cancel`` is the call's token: set already (a draining server), the runtime is never
    called; set later (the deadline, a drain), the stream is stopped as a client leaving would
    stop it, and still ends with its ``Failed`` event and the envelope. (The token is not handed
    to the stream itself: a stream with a caller's token looks at it between every two
    events, which cost more than relaying the event.)
    """
    arguments = {name: value for name, value in bound.items() if name != "stream"}
    check = endpoint.runtime_check
    problems: Sequence[str] = () if check is None else await asyncio.to_thread(check)
    if problems:
        # the runtime's settings are incomplete: the call fails before any model call, so it
        # is answered as JSON (its envelope, as without the header), not as a 200 stream
        collected = {**arguments, "stream": True}
        envelope = await endpoint.service.ainvoke_bound(
            "execute_contract", collected, cancel=cancel
        )
        await endpoint.respond(scope, send, envelope)
        return
    run = endpoint.service.astream_contract(**arguments, cancel=cancel if cancel.is_set() else None)
    try:
        async with asyncio.timeout_at(deadline):  # cancelling it cancels the preparation's work
            await run.open()
    except TimeoutError:
        cancel.set()
        await endpoint.timed_out(scope, send)  # no byte of a stream yet: an ordinary 504
        return
    if not run.ok:
        await endpoint.respond(scope, send, run.envelope)
        return
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    relay = _Relay(run, send, endpoint.settings.sse_keepalive_s)
    loop = asyncio.get_running_loop()
    timer = loop.call_at(deadline, relay.stop)
    endpoint.inflight.on_cancel(cancel, lambda: loop.call_soon_threadsafe(relay.stop))
    try:
        if not await relay.run(receive):
            return  # the client went away: nobody to tell
        await relay.writer.close()
    finally:
        timer.cancel()
    envelope = run.envelope
    scope[OK_KEY] = envelope.ok
    body = b""
    owed = envelope.stream_events[-1:] if not relay.ended_with_terminal else []
    if owed and isinstance(owed[0], (Complete, Failed)):
        body = stream_event_sse(owed[0])  # stopped: the terminal event the stream did not send
    body += envelope_sse(envelope)
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _Relay:
    """The response's body while the stream runs: its events as they come, keep-alive
    comments, and the way to stop it (see :func:`stream_execution`)."""

    def __init__(self, run: AsyncContractStream, send: Send, keepalive: float) -> None:
        self.stream = run
        self.writer = _Writer(send)
        self.keepalive = keepalive
        self.producer: asyncio.Task[None] | None = None
        self.stopped = False
        self.ended_with_terminal = False

    def stop(self) -> None:
        """End the stream now (the runtime's call is cancelled), unless it has ended."""
        self.stopped = True
        if self.producer is not None and not self.producer.done():
            self.producer.cancel()

    async def _produce(self) -> None:
        stream = self.stream
        async with stream:  # leaving it (cancelled) cancels the runtime call
            if stream.partial is None:  # a text answer: its deltas are the answer
                async for event in stream:
                    self.ended_with_terminal = isinstance(event, (Complete, Failed))
                    await self.writer.write(stream_event_sse(event))
                return
            async for update in stream.partials():  # each event, and what it changed
                event = update.event
                self.ended_with_terminal = isinstance(event, (Complete, Failed))
                await self.writer.write(stream_event_sse(event) + partial_sse(update.changes))

    async def run(self, receive: Receive) -> bool:
        """Relay the stream; ``False`` when the client went away first."""
        self.producer = producer = asyncio.create_task(self._produce())
        if self.stopped:
            producer.cancel()
        watcher = asyncio.create_task(_watch(receive))
        pinger = asyncio.create_task(_keep_alive(self.writer, self.keepalive))
        gone = False
        try:
            done, _ = await asyncio.wait({producer, watcher}, return_when=asyncio.FIRST_COMPLETED)
            gone = producer not in done
        finally:
            for task in (pinger, watcher, producer):
                task.cancel()
            for task in (pinger, watcher):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            try:
                await producer
            except asyncio.CancelledError:
                if not (gone or self.stopped):
                    raise  # this request itself was cancelled (the server is going down)
            except Exception:  # a bug in encoding: the envelope still says how it ended
                _log.exception("streaming an execution failed")
        return not gone and self.stream.finished
