"""``POST …/execute`` with ``Accept: text/event-stream``: the execution, live, as SSE.

The call is opened first (``service.astream_contract(...).open()``: loaded, compiled and
checked on the service's workers). A call refused then — bad values, a contract that does not
compile, a missing capability — is an ordinary JSON answer with its 4xx status, before any model
call and before any byte of a stream. Otherwise the response is ``200 text/event-stream``: one
event per stream event as the runtime emits it, then the ``envelope`` event
(:mod:`templiqx_http.sse`).

Three tasks share the response: a producer reads the stream and encodes each event into a
bounded buffer (1 MiB; beyond, it waits: a slow client slows the runtime instead of filling
memory); the sender writes what the buffer holds whenever it holds something, so events that
arrive together go out in one write (and a comment line when the stream is silent for
``sse_keepalive_s``); a watcher waits for the client to go away. When it does, the producer is
cancelled, which closes the stream: the runtime's call is cancelled and its upstream
connection closed. The request's deadline and a draining server set the call's cancel token
instead, so the stream still ends properly: ``Failed`` (``TQX_RUNTIME_CANCELLED``), then the
``envelope``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from starlette.types import Receive, Scope, Send

from templiqx_application import AsyncContractStream
from templiqx_http.middleware import OK_KEY
from templiqx_http.sse import SSE_HEADERS, envelope_sse, sse_comment, stream_event_sse

if TYPE_CHECKING:
    from templiqx_http.operations import OperationEndpoint

__all__ = ["BUFFER_BYTES", "stream_execution"]

BUFFER_BYTES: Final = 1_048_576
"""Encoded events waiting for a slow client at most (then the producer waits)."""

_log = logging.getLogger("templiqx_http")
_HEADERS: Final = [(k.encode("ascii"), v.encode("ascii")) for k, v in SSE_HEADERS.items()]


class _Relay:
    """Encoded events between the producer and the sender."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.size = 0
        self.closed = False
        self.ready = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()

    async def put(self, data: bytes) -> None:
        self.pending.append(data)
        self.size += len(data)
        self.ready.set()
        if self.size > BUFFER_BYTES:
            self.room.clear()
            await self.room.wait()

    def close(self) -> None:
        self.closed = True
        self.ready.set()

    def take(self) -> bytes:
        data = b"".join(self.pending)
        self.pending.clear()
        self.size = 0
        self.ready.clear()
        self.room.set()
        return data


async def _produce(run: AsyncContractStream, relay: _Relay) -> None:
    try:
        async with run:
            async for event in run:
                await relay.put(stream_event_sse(event))
    finally:
        relay.close()


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
    """Serve one streamed execution (``bound``: ``execute_contract``'s bound arguments)."""
    loop = asyncio.get_running_loop()
    timer = loop.call_at(deadline, cancel.set)
    try:
        arguments = {name: value for name, value in bound.items() if name != "stream"}
        run = endpoint.service.astream_contract(**arguments, cancel=cancel)
        await run.open()
        if not run.ok:
            await endpoint.respond(scope, send, run.envelope)
            return
        await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
        if await _relay(run, receive, send, endpoint.settings.sse_keepalive_s):
            envelope = run.envelope
            scope[OK_KEY] = envelope.ok
            await send(
                {"type": "http.response.body", "body": envelope_sse(envelope), "more_body": False}
            )
    finally:
        timer.cancel()


async def _relay(run: AsyncContractStream, receive: Receive, send: Send, keepalive: float) -> bool:
    """Send the stream's events; ``False`` when the client went away first."""
    relay = _Relay()
    producer = asyncio.create_task(_produce(run, relay))
    watcher = asyncio.create_task(_watch(receive))
    gone = False
    try:
        while True:
            waiting = asyncio.ensure_future(relay.ready.wait())
            done, _ = await asyncio.wait(
                {waiting, watcher}, timeout=keepalive, return_when=asyncio.FIRST_COMPLETED
            )
            if watcher in done:
                waiting.cancel()
                gone = True
                producer.cancel()
                break
            if not done:
                waiting.cancel()
                await send({"type": "http.response.body", "body": sse_comment(), "more_body": True})
                continue
            chunk = relay.take()
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if relay.closed and not relay.pending:
                break
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        if not producer.done():
            producer.cancel()
        try:
            await producer
        except asyncio.CancelledError:
            if not gone:
                raise
        except Exception:  # a bug in encoding: the envelope still says how the call ended
            _log.exception("streaming an execution failed")
    return not gone and run.finished
