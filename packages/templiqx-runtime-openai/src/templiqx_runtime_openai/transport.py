"""HTTP for the runtime: ``requests`` with one whole-call deadline and prompt cancellation.

``requests`` only knows per-phase timeouts, and a thread blocked reading a silent socket cannot
be interrupted from Python. So every call is registered with the *watcher*: one thread per
process, shared by all calls in flight, that shuts a call's TCP socket down
(``shutdown(SHUT_RDWR)`` on the raw socket, which wakes the blocked read at once and lets the
server see the close) when its cancel token is set or its deadline passes. It sleeps until the
earliest deadline (looking at cancel tokens every :data:`_POLL_S` while a call has one), so a
call costs it no wake-up unless it must act sooner than planned; a thread started per call cost
~0.5 ms of every call on two cores.
The watcher finds the socket through connection classes that register themselves with the call
running on the current thread — before the request is written, so a server that never answers
a single byte can be cut off too — and through the response once headers have arrived.

Other properties: redirects are never followed; the ``Authorization`` header is set by an auth
object (so a ``.netrc`` entry can never replace or leak it); one ``requests.Session`` per thread
(keep-alive without sharing a session between threads); bodies are read with ``iter_content``
for chunked responses (whatever has arrived, the chunks' framing stripped by
:mod:`~templiqx_runtime_openai.chunked`; urllib3's one piece per chunk for a compressed body) and
with ``read1`` otherwise (whatever has arrived, never waiting for a full buffer).

Keep-alive: a connection goes back to the session's pool only when its response body was read
to the end (urllib3 releases it then). A stream that ended with ``[DONE]`` is finished with
:meth:`Call.finish`, which reads the few bytes left (the chunked terminator) within a short
bound; a cancelled, failed or partly read response is discarded (its socket shut down).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

import requests
import requests.adapters
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import ProxyManager

from templiqx_ports import CancelToken, RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai.chunked import dechunked
from templiqx_runtime_openai.failures import Detail, FailureSource

__all__ = ["Call", "Transport"]

_POLL_S: Final = 0.05
"""How often the watcher looks at cancel tokens (cancellation is noticed within this)."""
READ_SIZE: Final = 65536
DRAIN_BYTES: Final = 65536
"""At most this much is read after a stream's end marker to keep the connection."""
DRAIN_S: Final = 0.25
"""At most this long is waited after a stream's end marker to keep the connection."""

_local = threading.local()

AbortReason = Literal["cancelled", "deadline", "drain"]


def _shutdown(sock: Any) -> None:
    """Shut a socket down at the OS level (bypassing TLS wrappers), ignoring errors."""
    if sock is None:
        return
    with contextlib.suppress(OSError, TypeError, ValueError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _register(connection: Any) -> Call | None:
    call: Call | None = getattr(_local, "call", None)
    if call is not None:
        call.attach(connection)
    return call


class _TrackedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        call = _register(self)
        super().connect()
        if call is not None:
            call.attach(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _TrackedHTTPSConnection(_TrackedHTTPConnection, HTTPSConnection):
    """The same tracking over TLS (``super()`` reaches :class:`HTTPSConnection` first)."""


class _TrackedPool(HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


_TRACKED: Final[dict[str, type[HTTPConnectionPool]]] = {
    "http": _TrackedPool,
    "https": _TrackedHTTPSPool,
}


class _TrackingAdapter(requests.adapters.HTTPAdapter):
    """Installs the tracked connection classes (direct and through HTTP proxies)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_TRACKED)

    def proxy_manager_for(self, proxy: Any, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if isinstance(manager, ProxyManager):
            manager.pool_classes_by_scheme = dict(_TRACKED)
        return manager


class _HeaderAuth(requests.auth.AuthBase):
    """Sets ``Authorization`` verbatim; its repr never shows the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self._value
        return request

    def __repr__(self) -> str:
        return "_HeaderAuth(<redacted>)"


def _is_timeout(error: BaseException | None) -> bool:
    """Whether an exception chain is a socket timeout (not a refused or reset connection)."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, urllib3.exceptions.NewConnectionError):
            return False  # a subclass of ConnectTimeoutError, for refused connections too
        if isinstance(error, (TimeoutError, requests.Timeout, urllib3.exceptions.TimeoutError)):
            return True
        inner = getattr(error, "reason", None)
        if not isinstance(inner, BaseException):
            first = error.args[0] if error.args else None
            inner = first if isinstance(first, BaseException) else None
        error, seen = inner or error.__cause__ or error.__context__, seen + 1
    return False


class Call:
    """One HTTP exchange in flight: its response, its watcher and how to end it.

    Use :meth:`Transport.post` to get one, read :attr:`response`, and always :meth:`close` it
    (it is a context manager). :meth:`failure` turns any exception raised while reading into
    the right :class:`RuntimeFailureError`, taking a cancellation or deadline into account.
    """

    def __init__(
        self,
        source: FailureSource,
        timeout_ms: int,
        cancel: CancelToken | None,
    ) -> None:
        self.source = source
        self.timeout_ms = timeout_ms
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.cancel = cancel
        self.reason: AbortReason | None = None
        self.response: requests.Response | None = None
        self._connections: list[Any] = []
        self._sockets: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        self._drain_until: float | None = None
        self._body: Iterator[bytes] | None = None
        self._ended = False

    # -- watcher ---------------------------------------------------------------------------

    def _limit(self) -> float:
        """When the watcher must cut the call off (its deadline, or the drain bound if sooner)."""
        drain = self._drain_until
        return self.deadline if drain is None else min(self.deadline, drain)

    def _due(self, now: float) -> AbortReason | None:
        """Why the watcher must cut the call off at ``now``, if it must."""
        cancel = self.cancel
        if cancel is not None and cancel.is_set():
            return "cancelled"
        drain = self._drain_until
        if now >= self._limit():
            return "drain" if drain is not None and drain < self.deadline else "deadline"
        return None

    def attach(self, connection: Any) -> None:
        """Register a connection this call uses, and its socket once it has one.

        The socket is remembered separately because ``http.client`` drops the connection's
        reference to it when the response takes the socket over (``Connection: close``).
        """
        sock = getattr(connection, "sock", None)
        with self._lock:
            if all(existing is not connection for existing in self._connections):
                self._connections.append(connection)
            if sock is not None and all(existing is not sock for existing in self._sockets):
                self._sockets.append(sock)
            aborted = self.reason is not None
        if aborted:
            _shutdown(sock)

    def abort(self, reason: AbortReason) -> None:
        """Cut the exchange off now (from any thread); the first reason wins.

        The sockets are shut down while the lock is held: :meth:`close` takes the same lock, so
        once a call is closed no late abort can reach a socket its pooled connection has opened
        since for the next call (the watcher may decide to abort just as the call ends).
        """
        with self._lock:
            if self.reason is not None or self._closed:
                return
            self.reason = reason
            for sock in self._sockets:
                _shutdown(sock)
            for connection in self._connections:
                _shutdown(getattr(connection, "sock", None))
            if self.response is not None:
                connection = getattr(self.response.raw, "connection", None)
                _shutdown(getattr(connection, "sock", None))

    def check_cancel(self) -> None:
        """Raise the cancellation failure if the token is set (cheap; for hot loops)."""
        cancel = self.cancel
        if cancel is not None and cancel.is_set():
            self.abort("cancelled")
            raise self.source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)

    # -- reading -----------------------------------------------------------------------------

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives: one piece per HTTP chunk, or whatever one read returns.

        Always the same iterator: a reader may stop early and another (e.g. :meth:`finish`)
        continue where it stopped. A read that fails (a dropped connection, the deadline, a
        cancellation) raises the call's :meth:`failure`.
        """
        if self._body is None:
            self._body = self._pieces()
        return self._body

    def _pieces(self) -> Iterator[bytes]:
        response = self.response
        assert response is not None
        raw = response.raw
        if getattr(raw, "chunked", False) or not hasattr(raw, "read1"):
            pieces = dechunked(raw, READ_SIZE) or response.iter_content(READ_SIZE)
        else:
            pieces = self._read1(raw)
        while True:
            try:
                piece = next(pieces)
            except StopIteration:
                self._ended = True
                return
            except Exception as exc:
                raise self.failure(exc, reading=True) from None
            yield piece

    def read_prefix(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body (for error bodies: what arrived, even if cut).

        A cancellation still raises; a dropped connection or the deadline just ends the read.
        """
        parts: list[bytes] = []
        total = 0
        try:
            for piece in self.chunks():
                parts.append(piece)
                total += len(piece)
                if total >= limit:
                    break
        except RuntimeFailureError as error:
            if error.failure.code is RuntimeFailureCode.CANCELLED:
                raise
        return b"".join(parts)[:limit]

    def finish(self) -> bool:
        """Read what is left of the body after the stream's end marker, within a short bound.

        At most :data:`DRAIN_BYTES` within :data:`DRAIN_S` (and the deadline). ``True`` when the
        body ended cleanly — the connection is then back in the pool for the next call.
        """
        with self._lock:
            self._drain_until = time.monotonic() + DRAIN_S
        _WATCHER.replan(self)
        total = 0
        try:
            for piece in self.chunks():
                total += len(piece)
                if total > DRAIN_BYTES:
                    return False
        except RuntimeFailureError:
            return False
        return self._ended and self.reason is None

    @staticmethod
    def _read1(raw: Any) -> Iterator[bytes]:
        read1 = raw.read1
        while True:
            data = read1(READ_SIZE, decode_content=True)
            if not data:
                return
            yield data

    def failure(self, error: BaseException | None, *, reading: bool) -> RuntimeFailureError:
        """The failure for ``error`` raised while connecting (``reading=False``) or reading."""
        source = self.source
        if self.reason == "cancelled":
            return source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)
        if self.reason == "drain":
            return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.DROPPED)
        if self.reason == "deadline" or _is_timeout(error) or time.monotonic() >= self.deadline:
            return source.error(RuntimeFailureCode.TIMEOUT, Detail.deadline(self.timeout_ms))
        if isinstance(error, requests.exceptions.SSLError):
            return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.TLS)
        if isinstance(
            error, (requests.exceptions.ContentDecodingError, urllib3.exceptions.DecodeError)
        ):
            return source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.DECODING)
        if reading:
            return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.DROPPED)
        return source.error(RuntimeFailureCode.UNAVAILABLE, Detail.CONNECT)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the watcher and release the response.

        A body read cleanly to its end has already returned its connection to the pool; any
        other (unread, partly read, cancelled, failed) has its connection killed, so a
        connection is never reused half-read.
        """
        with self._lock:
            self._closed = True
            response = self.response
        _WATCHER.remove(self)
        if response is None:
            return
        if not self._ended or self.reason is not None:
            with self._lock:
                sockets = list(self._sockets)
            for sock in sockets:
                _shutdown(sock)
            connection = getattr(response.raw, "connection", None)
            _shutdown(getattr(connection, "sock", None))
            body, self._body = self._body, None
            if body is not None and hasattr(body, "close"):
                body.close()
        response.close()

    def __enter__(self) -> Call:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Watcher:
    """The one thread that cuts calls off at their deadline or cancellation (module docstring).

    ``_planned`` is when the thread will next look at the calls: ``None`` while it waits for a
    call to arrive, ``-inf`` while it is awake (it looks again before it sleeps). A call that must
    be looked at sooner wakes it; any other is seen at the planned time.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._calls: set[Call] = set()
        self._planned: float | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, call: Call) -> None:
        with self._condition:
            self._calls.add(call)
            thread = self._thread
            if thread is None or self._pid != os.getpid() or not thread.is_alive():
                self._start()
            self._wake_for(call)

    def replan(self, call: Call) -> None:
        """``call``'s limit moved closer (a drain began): make sure the thread sees it in time."""
        with self._condition:
            if call in self._calls:
                self._wake_for(call)

    def remove(self, call: Call) -> None:
        with self._condition:
            self._calls.discard(call)

    def _wake_for(self, call: Call) -> None:
        planned = self._planned
        look_by = call._limit()
        if call.cancel is not None:
            look_by = min(look_by, time.monotonic() + _POLL_S)
        if planned is None or look_by < planned:
            self._condition.notify()

    def forget_parent(self) -> None:
        """In a forked child: the parent's calls and thread are not this process's."""
        self._condition = threading.Condition(threading.Lock())
        self._calls = set()
        self._planned = None
        self._thread = None

    def _start(self) -> None:
        self._pid = os.getpid()
        self._planned = float("-inf")
        self._thread = threading.Thread(target=self._run, name="templiqx-http-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        condition = self._condition
        while True:
            with condition:
                now = time.monotonic()
                due: list[tuple[Call, AbortReason]] = []
                look_at: float | None = None
                for call in self._calls:
                    try:
                        reason = call._due(now)
                    except Exception:  # a cancel token that fails to answer: unwatchable
                        reason = "cancelled"
                    if reason is not None:
                        due.append((call, reason))
                        continue
                    limit = call._limit()
                    if call.cancel is not None:
                        limit = min(limit, now + _POLL_S)
                    look_at = limit if look_at is None else min(look_at, limit)
                for call, _ in due:
                    self._calls.discard(call)
                if not due:
                    self._planned = look_at
                    condition.wait(None if look_at is None else look_at - now)
                    self._planned = float("-inf")
                    continue
            for call, reason in due:  # outside the watcher's lock: abort takes the call's
                with contextlib.suppress(Exception):  # the watcher outlives any one call
                    call.abort(reason)


_WATCHER: Final = _Watcher()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHER.forget_parent)


class Transport:
    """Sends JSON POSTs; one ``requests.Session`` per thread; thread-safe."""

    def __init__(self, source: FailureSource) -> None:
        self.source = source
        self._local = threading.local()
        # Weak: a thread's session goes away with the thread; close() reaches the live ones.
        self._sessions: weakref.WeakSet[requests.Session] = weakref.WeakSet()
        self._lock = threading.Lock()

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = _TrackingAdapter()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._lock:
                self._sessions.add(session)
        return session

    def post(
        self,
        url: str,
        body: bytes,
        *,
        authorization: str,
        timeout_ms: int,
        cancel: CancelToken | None = None,
        accept: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> Call:
        """POST ``body`` (JSON) and return the call once response headers have arrived.

        ``headers``: more headers to send (the caller's trace context, for one).

        Raises :class:`RuntimeFailureError` for connection problems, the deadline or a
        cancellation before the headers. The caller must close the returned call.
        """
        call = Call(self.source, timeout_ms, cancel)
        if cancel is not None and cancel.is_set():
            raise self.source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)
        _WATCHER.add(call)
        remaining = max(call.deadline - time.monotonic(), 0.001)
        _local.call = call
        try:
            response = self._session().post(
                url,
                data=body,
                headers={**(headers or {}), "Content-Type": "application/json", "Accept": accept},
                auth=_HeaderAuth(authorization),
                stream=True,
                allow_redirects=False,
                timeout=(remaining, remaining),
            )
        except Exception as exc:
            call.close()
            raise call.failure(exc, reading=False) from None
        finally:
            _local.call = None
        with call._lock:
            call.response = response
            aborted = call.reason is not None
        if aborted:
            call.close()
            raise call.failure(None, reading=False)
        return call

    def close(self) -> None:
        """Close every session this transport opened (on any thread)."""
        with self._lock:
            sessions = list(self._sessions)
            self._sessions = weakref.WeakSet()
        for session in sessions:
            session.close()
        self._local = threading.local()
