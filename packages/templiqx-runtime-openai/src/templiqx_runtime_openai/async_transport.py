"""Async HTTP for the runtime: httpx2's ``AsyncClient``, one whole-call deadline, prompt cancels.

The twin of :mod:`.transport` for code running on an event loop, built so that a call costs no
thread: every wait is an ``await`` on the loop.

* **Deadline and cancel token without a watcher thread.** An :class:`AsyncCall` arms one loop
  timer at its deadline and, when it has a cancel token, one that looks at the token every
  :data:`POLL_S`. When either fires while the call is waiting (connecting, waiting for headers,
  reading), it cancels the waiting task — the mechanism ``asyncio.timeout`` uses — and the wait
  ends in the call's failure (``TQX_RUNTIME_TIMEOUT`` / ``TQX_RUNTIME_CANCELLED``) instead of
  ``CancelledError``; the task's cancellation count is restored, so a cancellation that came
  from elsewhere at the same moment still propagates. httpx2 closes the connection it was
  reading, so the server sees the close at once.
* **Task cancellation and early exit.** A task cancelled by its owner, or a reader that stops
  (``aclose()``), leaves through :meth:`AsyncCall.aclose`, which closes the response: a body
  that was not read to its end has its connection closed, never reused.
* **Keep-alive** (the same rule as the sync transport): a connection goes back to the pool only
  when its body was read to the end; a stream that ended with ``[DONE]`` is finished with
  :meth:`AsyncCall.finish`, which reads what is left (the chunked terminator) within
  :data:`~.transport.DRAIN_BYTES` and :data:`~.transport.DRAIN_S`.
* **One connection pool per event loop.** Connections belong to the loop that opened them, so
  :class:`AsyncTransport` keeps one ``httpx2.AsyncClient`` per running loop. Its idle
  connections are closed when that loop shuts down its async generators (``asyncio.run`` and
  ``asyncio.Runner`` do, on exit), by :meth:`AsyncTransport.aclose`, or — after
  :meth:`AsyncTransport.close` from synchronous code — on the loop by asyncio's async-generator
  finaliser.

Secrets never reach a log line: httpcore2's DEBUG trace logs response headers as the server
sent them (a hostile server may echo the key there), so the httpx2 and httpcore2 loggers carry
a filter that redacts the secrets of every live client's :class:`~.server_errors.Redactor`.

Redirects are never followed; ``Authorization`` is a plain header (no ``.netrc`` lookup); proxy
variables from the environment are honoured (``trust_env``); compressed bodies are decoded (a
broken encoding is ``TQX_RUNTIME_INVALID_RESPONSE``). Connecting to a host name resolves it on
the loop's default executor (asyncio's bounded, shared pool); an IP address needs no lookup.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import ssl
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Final, TypeVar

import httpx2

from templiqx_ports import CancelToken, RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai.failures import Detail, FailureSource
from templiqx_runtime_openai.server_errors import Redactor
from templiqx_runtime_openai.transport import DRAIN_BYTES, DRAIN_S, AbortReason

__all__ = ["POLL_S", "AsyncCall", "AsyncTransport", "new_client", "transport_failure"]

T = TypeVar("T")

POLL_S: Final = 0.05
"""How often a call's cancel token is looked at (cancellation is noticed within this)."""
KEEP_ALIVE: Final = 20
"""Idle connections kept per event loop."""


_HTTP_LOGGERS: Final = (
    "httpx2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
)


class _SecretsFilter(logging.Filter):
    """Redacts the secrets of every registered redactor from httpx2/httpcore2 log records."""

    def __init__(self) -> None:
        super().__init__()
        self._redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()
        self._lock = threading.Lock()

    def register(self, redactor: Redactor) -> None:
        with self._lock:
            self._redactors.add(redactor)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            redactors = list(self._redactors)
        if redactors:
            message = record.getMessage()
            shown = message
            for redactor in redactors:
                shown = redactor.redact(shown)
            if shown != message:
                record.msg, record.args = shown, None
        return True


_secrets_filter: Final = _SecretsFilter()
for _name in _HTTP_LOGGERS:
    logging.getLogger(_name).addFilter(_secrets_filter)


def _in_chain(error: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether ``error`` or an exception it was raised from is a ``kind``."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, kind):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def transport_failure(
    source: FailureSource, error: BaseException | None, *, reading: bool, timeout_ms: int
) -> RuntimeFailureError:
    """The failure for an httpx2 (or OS) error raised while connecting or reading.

    Mirrors ``Call.failure`` of the sync transport: a timeout is ``TQX_RUNTIME_TIMEOUT``, a TLS
    problem and a refused or broken connection before the headers ``TQX_RUNTIME_UNAVAILABLE``
    (could not connect / TLS), a broken body ``TQX_RUNTIME_UNAVAILABLE`` (dropped), an
    undecodable content encoding ``TQX_RUNTIME_INVALID_RESPONSE``.
    """
    if isinstance(error, httpx2.TimeoutException) or _in_chain(error, TimeoutError):
        return source.error(RuntimeFailureCode.TIMEOUT, Detail.deadline(timeout_ms))
    if _in_chain(error, ssl.SSLError) or _in_chain(error, ssl.CertificateError):
        return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.TLS)
    if isinstance(error, httpx2.DecodingError):
        return source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.DECODING)
    if reading:
        return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.DROPPED)
    return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.CONNECT)


class AsyncCall:
    """One HTTP exchange in flight on an event loop: its response, its timers, how to end it.

    Get one from :meth:`AsyncTransport.post`, read :attr:`response`, read the body with
    :meth:`read`, and always :meth:`aclose` it. Use it from one task at a time.
    """

    def __init__(self, source: FailureSource, timeout_ms: int, cancel: CancelToken | None) -> None:
        loop = asyncio.get_running_loop()
        self.source = source
        self.timeout_ms = timeout_ms
        self.cancel = cancel
        self.reason: AbortReason | None = None
        self.response: httpx2.Response | None = None
        self._loop = loop
        self._deadline = loop.time() + timeout_ms / 1000.0
        self._waiter: asyncio.Task[object] | None = None
        self._fired = False
        self._timer: asyncio.TimerHandle | None = loop.call_at(
            self._deadline, self.abort, "deadline"
        )
        self._poller: asyncio.TimerHandle | None = None
        if cancel is not None:
            self._poller = loop.call_later(POLL_S, self._poll)
        self._body: AsyncGenerator[bytes] | None = None
        self._ended = False

    # -- the deadline and the token -----------------------------------------------------------

    def _poll(self) -> None:
        cancel = self.cancel
        if cancel is not None and cancel.is_set():
            self._poller = None
            self.abort("cancelled")
        elif self.reason is None:
            self._poller = self._loop.call_later(POLL_S, self._poll)

    def abort(self, reason: AbortReason) -> None:
        """Cut the exchange off (on the loop's thread); the first reason wins.

        A task waiting inside the call is cancelled; otherwise the next wait fails at once.
        """
        if self.reason is None:
            self.reason = reason
        waiter = self._waiter
        if waiter is not None and not self._fired:
            self._fired = True
            waiter.cancel()

    def check_cancel(self) -> None:
        """Raise the cancellation failure if the token is set (cheap; for hot loops)."""
        cancel = self.cancel
        if cancel is not None and cancel.is_set():
            self.abort("cancelled")
            raise self.source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)

    def failure(self, error: BaseException | None, *, reading: bool) -> RuntimeFailureError:
        """The failure for ``error`` (or for the abort reason, which wins)."""
        source = self.source
        if self.reason == "cancelled":
            return source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)
        if self.reason == "drain":
            return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.DROPPED)
        if self.reason == "deadline" or self._loop.time() >= self._deadline:
            return source.error(RuntimeFailureCode.TIMEOUT, Detail.deadline(self.timeout_ms))
        return transport_failure(source, error, reading=reading, timeout_ms=self.timeout_ms)

    async def wait(self, start: Callable[[], Awaitable[T]], *, reading: bool) -> T:
        """Await ``start()`` under the call's deadline and token; errors become failures.

        ``StopAsyncIteration`` passes through (the end of a body).
        """
        if self.reason is not None:
            raise self.failure(None, reading=reading)
        self.check_cancel()
        task = asyncio.current_task()
        assert task is not None, "AsyncCall is used inside a task"
        before = task.cancelling()
        self._waiter, self._fired = task, False
        try:
            result = await start()
        except (RuntimeFailureError, StopAsyncIteration):
            self._settle(task)
            raise
        except (asyncio.CancelledError, Exception) as exc:
            ours = self._settle(task) and task.cancelling() <= before
            if isinstance(exc, asyncio.CancelledError) and not ours:
                raise
            raise self.failure(None if ours else exc, reading=reading) from None
        finally:
            self._waiter = None
        if self._settle(task):  # cancelled by us, but the result won the race: still aborted
            raise self.failure(None, reading=reading)
        return result

    def _settle(self, task: asyncio.Task[object]) -> bool:
        """Undo our own cancellation of ``task`` (if we made one); whether we did."""
        if not self._fired:
            return False
        self._fired = False
        task.uncancel()
        return True

    # -- reading -----------------------------------------------------------------------------

    async def read(self) -> bytes | None:
        """The next piece of the (decoded) body as it arrives, or ``None`` at its end.

        A read that fails (a dropped connection, the deadline, a cancellation) raises the
        call's :meth:`failure`.
        """
        if self._ended:
            return None
        body = self._body
        if body is None:
            response = self.response
            assert response is not None
            body = self._body = response.aiter_bytes()
        try:
            return await self.wait(body.__anext__, reading=True)
        except StopAsyncIteration:
            self._ended = True
            return None

    async def read_prefix(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body (for error bodies: what arrived, even if cut).

        A cancellation still raises; a dropped connection or the deadline just ends the read.
        """
        parts: list[bytes] = []
        total = 0
        try:
            while total < limit and (piece := await self.read()) is not None:
                parts.append(piece)
                total += len(piece)
        except RuntimeFailureError as error:
            if error.failure.code is RuntimeFailureCode.CANCELLED:
                raise
        return b"".join(parts)[:limit]

    async def finish(self) -> bool:
        """Read what is left after the stream's end marker, within a short bound.

        ``True`` when the body ended cleanly: the connection then goes back to the pool.
        """
        drain = self._loop.call_later(DRAIN_S, self.abort, "drain")
        total = 0
        try:
            while (piece := await self.read()) is not None:
                total += len(piece)
                if total > DRAIN_BYTES:
                    return False
        except RuntimeFailureError:
            return False
        finally:
            drain.cancel()
        return self._ended and self.reason is None

    # -- lifecycle ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Disarm the timers (idempotent)."""
        for handle in (self._timer, self._poller):
            if handle is not None:
                handle.cancel()
        self._timer = self._poller = None

    async def aclose(self) -> None:
        """Disarm the timers and release the response.

        A body read to its end has its connection back in the pool; any other (unread, partly
        read, cancelled, failed) has its connection closed.
        """
        self.stop()
        body, self._body = self._body, None
        if body is not None:
            await body.aclose()
        response = self.response
        if response is not None:
            await response.aclose()


class _Pool:
    """One loop's client and the async generator that closes it when the loop shuts down."""

    __slots__ = ("client", "keeper")

    def __init__(self, client: httpx2.AsyncClient, keeper: AsyncGenerator[None]) -> None:
        self.client = client
        self.keeper = keeper


async def _keep(client: httpx2.AsyncClient) -> AsyncGenerator[None]:
    """Suspended for the loop's lifetime; closing it (shutdown, finaliser) closes ``client``."""
    try:
        yield
    finally:
        await client.aclose()


def new_client(ssl_context: ssl.SSLContext) -> httpx2.AsyncClient:
    """A client as every loop's pool uses: no client timeout (the call's own deadline covers
    every phase), no redirects, proxy variables honoured, the transport's shared SSL context.
    Blocking (imports): call it off the event loop."""
    client = httpx2.AsyncClient(
        timeout=None,
        follow_redirects=False,
        trust_env=True,
        verify=ssl_context,
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=KEEP_ALIVE),
    )
    with contextlib.suppress(ImportError):  # what the first request would import on the loop
        importlib.import_module("anyio._backends._asyncio")
    return client


class AsyncTransport:
    """Sends JSON POSTs from event loops; one httpx2 client (and pool) per loop; thread-safe."""

    def __init__(self, source: FailureSource) -> None:
        self.source = source
        if source.redactor is not None:
            _secrets_filter.register(source.redactor)
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = (
            weakref.WeakKeyDictionary()
        )
        self._making: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Future[_Pool]
        ] = weakref.WeakKeyDictionary()
        self._ssl_context: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AsyncTransport({self.source.adapter_id!r})"

    async def _client(self) -> httpx2.AsyncClient:
        """The running loop's client, made on the loop's first call.

        Making the first one builds the shared SSL context (the CA bundle is read and parsed:
        tenths of a second, even for ``http://``), and its first request imports the async I/O
        backend: both happen on a worker thread (:func:`new_client`), never on the loop, so a
        server's first model call does not stall every other request it is serving (a server
        may also do it at start-up: :meth:`warm`).
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.get(loop)
        if pool is not None:
            return pool.client
        making = self._making.get(loop)
        if making is None:  # the first call on this loop makes it; the others wait for it
            making = self._making[loop] = asyncio.ensure_future(self._make_pool(loop))
            making.add_done_callback(lambda _: self._making.pop(loop, None))
        pool = await asyncio.shield(making)
        return pool.client

    def ssl_context(self) -> ssl.SSLContext:
        """The SSL context every loop's client shares, made once (the CA bundle is read and
        parsed: tenths of a second; blocking)."""
        with self._lock:
            if self._ssl_context is None:
                self._ssl_context = httpx2.create_ssl_context(trust_env=True)
            return self._ssl_context

    def warm(self) -> None:
        """Do now, on this thread, the blocking work of the first call on any loop: the SSL
        context and the async I/O backend's import (for a server's start-up)."""
        new_client(self.ssl_context())

    async def _make_pool(self, loop: asyncio.AbstractEventLoop) -> _Pool:
        client = await asyncio.to_thread(lambda: new_client(self.ssl_context()))
        with self._lock:
            for stale in [other for other in self._pools if other.is_closed()]:
                del self._pools[stale]
            pool = self._pools[loop] = _Pool(client, _keep(client))
        # First iteration registers the keeper with the loop, which closes it (and so the
        # client's idle connections) when it shuts down its async generators.
        await anext(pool.keeper)
        return pool

    async def post(
        self,
        url: str,
        body: bytes,
        *,
        authorization: str,
        timeout_ms: int,
        cancel: CancelToken | None = None,
        accept: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> AsyncCall:
        """POST ``body`` (JSON) and return the call once response headers have arrived.

        ``headers``: more headers to send (the caller's trace context, for one).

        Raises :class:`RuntimeFailureError` for connection problems, the deadline or a
        cancellation before the headers (a token already set sends nothing). The caller must
        close the returned call.
        """
        if cancel is not None and cancel.is_set():
            raise self.source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)
        call = AsyncCall(self.source, timeout_ms, cancel)
        try:
            # the loop's first call makes its client on a worker: the token and the deadline
            # are honoured meanwhile, as while waiting for the headers
            client = await call.wait(self._client, reading=False)
        except BaseException:
            call.stop()
            raise
        sent = {
            **(headers or {}),
            "Content-Type": "application/json",
            "Accept": accept,
            "Authorization": authorization,
        }

        async def send() -> httpx2.Response:
            request = client.build_request("POST", url, content=body, headers=sent)
            return await client.send(request, stream=True)

        try:
            call.response = await call.wait(send, reading=False)
        except BaseException:
            call.stop()
            raise
        return call

    async def aclose(self) -> None:
        """Close the running loop's pooled connections."""
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
        if pool is not None:
            await pool.keeper.aclose()

    def close(self) -> None:
        """Close every loop's pooled connections, as far as can be done from here.

        The running loop's pool (when called from a coroutine) and those of loops running on
        other threads are closed on their loops, soon; a pool of a loop that is not running is
        closed when that loop shuts down its async generators (or by :meth:`aclose` on it).
        """
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        with self._lock:
            pools = list(self._pools.items())
            for loop, _ in pools:
                if loop.is_closed() or loop.is_running():
                    del self._pools[loop]
        for loop, pool in pools:
            if loop.is_closed() or not loop.is_running():
                continue
            if loop is here:
                task = loop.create_task(_shut(pool))
                _closing.add(task)
                task.add_done_callback(_closing.discard)
            else:
                asyncio.run_coroutine_threadsafe(_shut(pool), loop)


_closing: set[asyncio.Task[None]] = set()
"""Closing tasks started from synchronous code (kept referenced until they finish)."""


async def _shut(pool: _Pool) -> None:
    await pool.keeper.aclose()
