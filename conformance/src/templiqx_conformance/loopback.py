"""A scriptable HTTP/1.1 server on 127.0.0.1 for testing runtime adapters over real sockets.

Standard library only (``socketserver``, ``http.server``, ``socket``, ``select``, ``threading``):
the kit must not depend on any HTTP client. The server listens on an ephemeral port, serves each
request on its own thread, answers from a *script* of :class:`Reply` values, and records what it
received (:class:`RecordedRequest`) and how each exchange ended (:class:`Exchange`), including
whether and when the client closed its socket.

Typical use::

    with LoopbackServer([Reply.sse([{"choices": [...]}, ...])]) as server:
        runtime = SomeRuntime(base_url=server.base_url, ...)
        ...
        assert server.requests[0].json["stream"] is True

Scripts
    Each path has a script: a single :class:`Reply` (served for every request), a sequence of
    replies (served in order, one per request; when exhausted the server answers 500 and counts
    the request in :attr:`LoopbackServer.unexpected`), or a callable ``(RecordedRequest) ->
    Reply``. The first positional argument scripts :data:`CHAT_COMPLETIONS_PATH`; ``routes`` adds
    or replaces others (e.g. a Langfuse ingestion endpoint). Unknown paths answer 404.

Replies
    A reply is a status line and headers, then a body written either whole (``body``) or as a
    sequence of writes (``chunks``: ``bytes`` or :class:`Chunk` with a delay before the write;
    any iterable, including an endless generator). Framing is ``length`` (Content-Length),
    ``chunked`` (Transfer-Encoding: chunked, one HTTP chunk per write) or ``close``
    (close-delimited). ``split_bytes`` turns every byte into its own write (and, when chunked,
    its own HTTP chunk). ``after`` says how the exchange ends: ``finish`` (properly),
    ``drop`` (close the socket without completing the framing: no final ``0`` chunk) or
    ``hang`` (keep the socket open, sending nothing, until the client closes it or the server
    stops). :meth:`Reply.silence` accepts the request and never sends a single byte.

Event streams
    :func:`sse_frame` writes one server-sent event: ``data:`` lines, preceded by an ``event:``
    line for named-event protocols (``event: content_block_delta``). :class:`SSEEvent` is the
    same as a value, and :meth:`Reply.sse` takes either; ``done=False`` leaves out the
    OpenAI-style ``data: [DONE]`` sentinel.

Every response carries ``Connection: close``; one exchange is one TCP connection.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Final, Literal, cast

__all__ = [
    "CHAT_COMPLETIONS_PATH",
    "Chunk",
    "Exchange",
    "LoopbackServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "SSEEvent",
    "Script",
    "filler",
    "sse_comment",
    "sse_frame",
]

CHAT_COMPLETIONS_PATH: Final = "/chat/completions"
"""The path the first positional script of :class:`LoopbackServer` answers."""

_POLL_S: Final = 0.02
_MAX_REQUEST_BODY: Final = 64 * 1024 * 1024

Framing = Literal["auto", "length", "chunked", "close"]
Ending = Literal["finish", "drop", "hang"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One body write, optionally preceded by a pause of ``delay_s`` seconds.

    With ``until`` (anything with ``is_set()``, e.g. a :class:`threading.Event`) the pause ends
    as soon as it is set: the write is *held* until then, at most ``delay_s`` seconds.
    """

    data: bytes
    delay_s: float = 0.0
    until: Any = None


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One server-sent event: its ``data`` and, for named-event protocols, its ``event`` name.

    ``data`` is a JSON value (written as compact JSON) or ``str``/``bytes`` (written verbatim).
    """

    data: Any
    event: str | None = None

    def encode(self, line_end: str = "\n") -> bytes:
        """The event's bytes (see :func:`sse_frame`)."""
        return sse_frame(self.data, event=self.event, line_end=line_end)


def sse_frame(payload: Any, *, event: str | None = None, line_end: str = "\n") -> bytes:
    """One server-sent event ``[event: <name>] data: <payload>`` followed by a blank line.

    ``payload`` may be a ``dict``/``list`` (written as compact JSON), ``str`` or ``bytes``
    (written verbatim; a multi-line string becomes several ``data:`` lines). ``event`` adds an
    ``event:`` line first, as named-event protocols send.
    """
    end = line_end.encode("ascii")
    if isinstance(payload, (dict, list)):
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    elif isinstance(payload, str):
        text = payload.encode("utf-8")
    else:
        text = bytes(payload)
    lines = text.split(b"\n")
    head = b"event: " + event.encode("utf-8") + end if event is not None else b""
    return head + b"".join(b"data: " + line + end for line in lines) + end


def sse_comment(text: str = "keep-alive", *, line_end: str = "\n") -> bytes:
    """An event-stream comment line (``: keep-alive``) and a blank line: readers ignore it."""
    return f": {text}{line_end}{line_end}".encode()


def filler(
    total: int, *, prefix: bytes = b"", unit: bytes = b"x", size: int = 65536
) -> Iterator[bytes]:
    """Yield ``prefix`` then ``unit`` repeated to ``total`` bytes in writes of ``size`` bytes.

    Lazily generated, so a test can send hundreds of megabytes without holding them. With the
    defaults it is "one huge frame with no newline".
    """
    if prefix:
        yield prefix
    block = (unit * (size // max(len(unit), 1) + 1))[:size]
    remaining = total
    while remaining > 0:
        piece = block if remaining >= size else block[:remaining]
        remaining -= len(piece)
        yield piece


@dataclass(frozen=True)
class Reply:
    """One scripted response (see the module docstring for the meaning of each field)."""

    status: int = 200
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""
    chunks: Iterable[bytes | Chunk] | None = None
    framing: Framing = "auto"
    split_bytes: bool = False
    delay_s: float = 0.0
    after: Ending = "finish"
    silent: bool = False
    reason: str | None = None

    @classmethod
    def json(
        cls,
        value: Any,
        *,
        status: int = 200,
        headers: Sequence[tuple[str, str]] = (),
        **options: Any,
    ) -> Reply:
        """A JSON body with one ``Content-Type``: ``application/json``, or the one ``headers``
        carries."""
        body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        given = any(name.lower() == "content-type" for name, _value in headers)
        own = () if given else (("Content-Type", "application/json"),)
        return cls(
            status=status,
            headers=(*own, *headers),
            body=body,
            **options,
        )

    @classmethod
    def sse(
        cls,
        events: Iterable[Any],
        *,
        done: bool = True,
        line_end: str = "\n",
        delay_s: float = 0.0,
        headers: Sequence[tuple[str, str]] = (),
        **options: Any,
    ) -> Reply:
        """An event stream: one write per event (:func:`sse_frame`), then ``data: [DONE]``.

        Each event is a payload for :func:`sse_frame` or an :class:`SSEEvent` (named events).
        ``done=False`` leaves out the ``[DONE]`` sentinel. ``delay_s`` pauses before every
        event. Pass ``framing`` (default ``chunked``), ``split_bytes`` or ``after`` through
        ``options``.
        """
        frames = [
            Chunk(
                event.encode(line_end)
                if isinstance(event, SSEEvent)
                else sse_frame(event, line_end=line_end),
                delay_s,
            )
            for event in events
        ]
        if done:
            frames.append(Chunk(sse_frame("[DONE]", line_end=line_end), delay_s))
        return cls.stream(frames, headers=headers, **options)

    @classmethod
    def stream(
        cls,
        chunks: Iterable[bytes | Chunk],
        *,
        status: int = 200,
        headers: Sequence[tuple[str, str]] = (),
        framing: Framing = "chunked",
        content_type: str = "text/event-stream",
        **options: Any,
    ) -> Reply:
        """Raw body writes (chunked by default) with one ``Content-Type``: ``content_type``
        (``text/event-stream`` unless told otherwise), or the one ``headers`` carries."""
        given = any(name.lower() == "content-type" for name, _value in headers)
        own = () if given else (("Content-Type", content_type),)
        return cls(
            status=status,
            headers=(*own, ("Cache-Control", "no-cache"), *headers),
            chunks=chunks,
            framing=framing,
            **options,
        )

    @classmethod
    def error(
        cls, status: int, *, headers: Sequence[tuple[str, str]] = (), body: Any = None
    ) -> Reply:
        """An error status with a JSON body (``{"error": {...}}`` unless ``body`` is given)."""
        payload = body if body is not None else {"error": {"message": f"HTTP {status}"}}
        return cls.json(payload, status=status, headers=headers)

    @classmethod
    def silence(cls) -> Reply:
        """Read the request, then send nothing at all until the client gives up."""
        return cls(silent=True)

    @classmethod
    def ticking(cls, frame: bytes, *, every_s: float, **options: Any) -> Reply:
        """The same frame every ``every_s`` seconds, forever (until the client closes)."""
        return cls.stream(itertools.repeat(Chunk(frame, every_s)), **options)


Responder = Callable[["RecordedRequest"], Reply]
Script = Reply | Sequence[Reply] | Responder


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    received_at: float
    """``time.monotonic()`` when the request was fully read."""

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or ``None`` when it is empty or not JSON."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class Exchange:
    """One connection's request/response and how it ended.

    ``outcome`` is ``"pending"`` while running, then one of ``"completed"`` (the reply was sent
    as scripted), ``"client_closed"`` (the client closed or reset its socket first),
    ``"dropped"`` (the script dropped the connection on purpose) or ``"server_stopped"``.
    """

    request: RecordedRequest
    reply: Reply
    bytes_sent: int = 0
    outcome: str = "pending"
    client_closed_at: float | None = None
    ended_at: float | None = None
    _done: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def client_closed(self) -> bool:
        """Whether the server observed the client closing its socket before the reply ended."""
        return self.client_closed_at is not None

    def wait(self, timeout: float) -> bool:
        """Wait until the exchange has ended; ``True`` if it did within ``timeout`` seconds."""
        return self._done.wait(timeout)


class _ClientGoneError(Exception):
    """The client closed or reset its socket."""


class _StoppingError(Exception):
    """The server is shutting down."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        """Silence the default stderr access log."""

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _read_body(self) -> bytes:
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_REQUEST_BODY:
            raise _ClientGoneError("request body too large")
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        self.close_connection = True
        body = self._read_body()
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers=tuple((k, v) for k, v in self.headers.items()),
            body=body,
            received_at=time.monotonic(),
        )
        reply = self.server.owner._next_reply(request)
        exchange = Exchange(request=request, reply=reply)
        self.server.owner._record(exchange)
        try:
            self._play(reply, exchange)
            if exchange.outcome == "pending":
                exchange.outcome = "completed"
        except _ClientGoneError:
            exchange.outcome = "client_closed"
            exchange.client_closed_at = time.monotonic()
        except _StoppingError:
            exchange.outcome = "server_stopped"
        finally:
            exchange.ended_at = time.monotonic()
            self._close_socket()
            exchange._done.set()

    # -- low-level socket helpers ----------------------------------------------------------

    def _close_socket(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _client_gone(self) -> bool:
        """Non-blocking check: has the client closed (EOF) or reset its socket?"""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return bool(self.connection.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True

    def _pause(self, seconds: float, until: Any = None) -> None:
        """Sleep ``seconds`` while watching for the client closing and the server stopping.

        With ``until``, stop sleeping as soon as ``until.is_set()``.
        """
        deadline = time.monotonic() + seconds
        while True:
            if self._client_gone():
                raise _ClientGoneError
            if self.server.owner._stopping.is_set():
                raise _StoppingError
            if until is not None and until.is_set():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                select.select([self.connection], [], [], min(remaining, _POLL_S))
            except (OSError, ValueError) as exc:
                raise _ClientGoneError from exc

    def _write(self, data: bytes, exchange: Exchange) -> None:
        if self.server.owner._stopping.is_set():
            raise _StoppingError
        if self._client_gone():
            raise _ClientGoneError
        try:
            self.connection.sendall(data)
        except OSError as exc:
            raise _ClientGoneError from exc
        exchange.bytes_sent += len(data)

    # -- playing a reply ---------------------------------------------------------------------

    def _play(self, reply: Reply, exchange: Exchange) -> None:
        if reply.silent:
            self._pause(float("inf"))
            return
        if reply.delay_s:
            self._pause(reply.delay_s)
        framing = reply.framing
        if framing == "auto":
            framing = "length" if reply.chunks is None else "chunked"
        pieces: Iterable[bytes | Chunk] = (
            reply.chunks if reply.chunks is not None else ([reply.body] if reply.body else [])
        )
        if framing == "length" and reply.chunks is not None:
            pieces = list(pieces)
        head = [f"HTTP/1.1 {reply.status} {reply.reason or _reason(reply.status)}"]
        head.extend(f"{name}: {value}" for name, value in reply.headers)
        if framing == "length":
            total = sum(len(p.data if isinstance(p, Chunk) else p) for p in pieces)
            head.append(f"Content-Length: {total}")
        elif framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        head.append("Connection: close")
        self._write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"), exchange)
        chunked = framing == "chunked"
        for piece in pieces:
            data = piece.data if isinstance(piece, Chunk) else piece
            if isinstance(piece, Chunk) and piece.delay_s:
                self._pause(piece.delay_s, piece.until)
            if not data:
                continue
            writes = (data[i : i + 1] for i in range(len(data))) if reply.split_bytes else (data,)
            for part in writes:
                self._write(b"%x\r\n%b\r\n" % (len(part), part) if chunked else part, exchange)
        if reply.after == "drop":
            exchange.outcome = "dropped"
            return
        if reply.after == "hang":
            self._pause(float("inf"))
            return
        if chunked:
            self._write(b"0\r\n\r\n", exchange)


def _reason(status: int) -> str:
    return BaseHTTPRequestHandler.responses.get(status, ("Status",))[0]


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, owner: LoopbackServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class LoopbackServer:
    """A threaded HTTP/1.1 test server on ``127.0.0.1`` with an ephemeral port.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`). ``script`` answers
    :data:`CHAT_COMPLETIONS_PATH`; ``routes`` maps further paths (exact match, query string
    included) to their scripts. Scripts can be replaced or extended while running with
    :meth:`route`.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        routes: Mapping[str, Script] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, Script] = {}
        self._queues: dict[str, list[Reply]] = {}
        if script is not None:
            self.route(CHAT_COMPLETIONS_PATH, script)
        for path, path_script in (routes or {}).items():
            self.route(path, path_script)
        self._exchanges: list[Exchange] = []
        self._unexpected: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._arrived = threading.Condition(self._lock)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> LoopbackServer:
        """Bind and start serving (idempotent)."""
        if self._server is None:
            self._stopping.clear()
            self._server = _Server(self)
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"loopback-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, end hanging replies, close every connection and join the threads."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout)
        deadline = time.monotonic() + timeout
        for exchange in self.exchanges:
            exchange.wait(max(0.0, deadline - time.monotonic()))
        self._server = None
        self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (the server must be started)."""
        if self._server is None:
            raise RuntimeError("the loopback server is not running: call start() or use `with`")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """An absolute URL for ``path`` on this server."""
        return self.base_url + (path if path.startswith("/") else "/" + path)

    # -- scripting -----------------------------------------------------------------------------

    def route(self, path: str, script: Script) -> None:
        """Set the script for ``path`` (replacing any previous one)."""
        with self._lock:
            self._routes[path] = script
            if isinstance(script, Sequence) and not isinstance(script, Reply):
                self._queues[path] = list(script)
            else:
                self._queues.pop(path, None)

    def enqueue(self, path: str, *replies: Reply) -> None:
        """Append replies to the sequence script of ``path`` (creating it if needed)."""
        with self._lock:
            queue = self._queues.setdefault(path, [])
            queue.extend(replies)
            self._routes[path] = queue

    def _next_reply(self, request: RecordedRequest) -> Reply:
        path = request.path
        with self._lock:
            script = self._routes.get(path)
            queue = self._queues.get(path)
            if script is None:
                self._unexpected.append(request)
                return Reply.json({"error": {"message": f"no route for {path}"}}, status=404)
            if queue is not None:
                if queue:
                    return queue.pop(0)
                self._unexpected.append(request)
                return Reply.json({"error": {"message": "loopback script exhausted"}}, status=500)
        if isinstance(script, Reply):
            return script
        responder = cast(Responder, script)
        return responder(request)

    def _record(self, exchange: Exchange) -> None:
        with self._arrived:
            self._exchanges.append(exchange)
            self._arrived.notify_all()

    # -- observations --------------------------------------------------------------------------

    @property
    def exchanges(self) -> list[Exchange]:
        """Every exchange so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._exchanges)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        return [exchange.request for exchange in self.exchanges]

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The requests received on ``path``."""
        return [request for request in self.requests if request.path == path]

    @property
    def unexpected(self) -> list[RecordedRequest]:
        """Requests for unknown paths or beyond the end of a sequence script."""
        with self._lock:
            return list(self._unexpected)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Wait until at least ``count`` requests have arrived."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self._exchanges) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._arrived.wait(remaining)
            return True
