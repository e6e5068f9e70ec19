"""The stdio wire: reading and writing newline-delimited JSON-RPC on stdin and stdout.

The SDK's ``stdio_server`` runs every ``readline``, ``write`` and ``flush`` on a worker thread:
three thread hand-offs per request, each costing more CPU than the JSON-RPC work around it. Its
line reader also buffers a line whole, however long, and drops a line that is not JSON without
a word. :func:`stdio_transport` replaces it with the files of this module:

* :class:`WireLines` waits until the descriptor is readable (a pipe, a socket or a terminal; a
  regular file is read on a worker thread) and then reads what is there, which never blocks. It
  splits lines exactly as a text file opened with ``encoding="utf-8", errors="replace"`` does
  (universal newlines: ``\\r\\n`` and a lone ``\\r`` end a line too). A line longer than
  ``max_line`` bytes is not buffered: its first bytes are kept, the rest is read and dropped up
  to the next line break, and it arrives as one :class:`OversizedLine`. Memory stays at about
  ``max_line`` whatever a client sends.
* :class:`WireWriter` keeps what is written until ``flush`` and then sends it UTF-8 encoded. To a
  pipe it writes only what the pipe takes at once, which guarantees the write does not block:
  the whole message in one write when the pipe is empty (the client has read every earlier
  message: the usual case, and one wake-up of the client per message), else at most
  ``PIPE_BUF`` bytes once the pipe is writable. A client that stops reading stalls this writer,
  never the event loop, so the server keeps reading (and seeing cancellations) as before.
* :func:`stdio_transport` parses each line into a JSON-RPC message for the SDK's server. A line
  longer than :data:`LARGE_LINE_BYTES` is parsed on a worker thread, never on the event loop, and
  is first counted: one holding more JSON values than its arguments may
  (:data:`MAX_LINE_NODES`, three arguments of ``MAX_ARGUMENT_NODES``) is refused with -32600
  before it is decoded (issue #29: 8 MB of ``[{}, {}, ...]`` took 6-8 s on the loop). A line
  that is not JSON is answered with the JSON-RPC parse error -32700 (``id: null``, as JSON-RPC
  2.0 prescribes when the id cannot be read); an oversized line or a JSON value that is not a
  valid message with the error -32600 (invalid request), carrying the request's ``id`` when it
  can be read; each gets one line on stderr. A client that closes its end of stdout ends the
  transport quietly (:class:`WireClosedError` is never raised out of it).

:func:`claim_stdio` does what the SDK does before serving its own files: the protocol moves to
private duplicates of descriptors 0 and 1, and while the server runs the standard descriptors
point at the null device and at stderr, so nothing a handler or a child process prints reaches
the wire.
"""

from __future__ import annotations

import codecs
import errno
import fcntl
import json
import os
import re
import select
import stat
import struct
import sys
import termios
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

from templiqx_application import MAX_ARGUMENT_BYTES, MAX_ARGUMENT_NODES
from templiqx_contracts import json_node_estimate
from templiqx_mcp.weight import is_small

__all__ = [
    "FRAMING_BYTES",
    "LARGE_LINE_BYTES",
    "MAX_LINE_BYTES",
    "MAX_LINE_NODES",
    "OversizedLine",
    "WireLines",
    "WireWriter",
    "claim_stdio",
    "stdio_transport",
]

READ_SIZE = 1 << 16
"""Bytes asked for per read."""

FRAMING_BYTES = 1 << 16
"""Room for the JSON-RPC envelope around the largest argument (method, id, names, escapes)."""

MAX_LINE_BYTES = MAX_ARGUMENT_BYTES + FRAMING_BYTES
"""The longest line read: the argument limit (8 MiB) plus framing. Longer lines are refused."""

LARGE_LINE_BYTES = 1 << 16
"""Lines longer than this are counted and parsed on a worker thread."""

MAX_LINE_NODES = 3 * MAX_ARGUMENT_NODES + 4096
"""Most JSON values and keys one line may hold: three arguments at their limit, and framing."""

HEAD_BYTES = 4096
"""How much of an oversized line is kept, to find its request id."""

_NEWLINE = re.compile(rb"\r\n|\r|\n")
_claim = threading.Lock()


def _mode(fd: int) -> int:
    return os.fstat(fd).st_mode


@dataclass
class OversizedLine:
    """A line longer than the reader's limit: how long it was and its first bytes."""

    size: int
    head: bytes

    def request_id(self) -> str | int | None:
        """The id of the request the line started, when its head shows one."""
        return _head_id(self.head)


class WireLines:
    """The lines of a descriptor (``async for line in WireLines(fd)``), read from the loop.

    Each line is a ``str`` ending in ``"\\n"`` (the last one possibly without), or an
    :class:`OversizedLine` for a line over ``max_line`` bytes.
    """

    def __init__(self, fd: int, *, max_line: int = MAX_LINE_BYTES) -> None:
        self._fd = fd
        self.max_line = max_line
        mode = _mode(fd)
        self._pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)

    async def _read(self) -> bytes:
        if self._pollable:
            try:
                await anyio.wait_readable(self._fd)
            except OSError:  # a character device the event loop cannot poll (/dev/null)
                self._pollable = False
            else:
                return os.read(self._fd, READ_SIZE)
        return await anyio.to_thread.run_sync(os.read, self._fd, READ_SIZE, abandon_on_cancel=True)

    async def __aiter__(self) -> AsyncIterator[str | OversizedLine]:
        limit = self.max_line
        pending: list[bytes] = []  # the start of a line whose end has not arrived
        size = 0
        skipping: OversizedLine | None = None
        after_cr = False  # the last read ended with \r: a \n right after it belongs to it
        while data := await self._read():
            if after_cr and data[:1] == b"\n":
                data = data[1:]
            after_cr = False
            start = 0
            for match in _NEWLINE.finditer(data):
                piece = data[start : match.start()]
                if skipping is not None:
                    skipping.size += len(piece)
                    yield skipping
                    skipping = None
                elif size + len(piece) > limit:
                    yield OversizedLine(size + len(piece), b"".join((*pending, piece))[:HEAD_BYTES])
                else:
                    yield _decode(b"".join((*pending, piece))) + "\n"
                pending.clear()
                size = 0
                start = match.end()
                after_cr = match.group() == b"\r" and start == len(data)
            rest = data[start:]
            if not rest:
                continue
            if skipping is not None:
                skipping.size += len(rest)
            elif size + len(rest) > limit:
                skipping = OversizedLine(size + len(rest), b"".join((*pending, rest))[:HEAD_BYTES])
                pending.clear()
                size = 0
            else:
                pending.append(rest)
                size += len(rest)
        if skipping is not None:
            yield skipping
        elif pending:
            yield _decode(b"".join(pending))


def _decode(data: bytes) -> str:
    return codecs.decode(data, "utf-8", "replace")


_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.){0,200}")')


def _head_id(head: bytes) -> str | int | None:
    """The top-level ``id`` of a JSON object whose first bytes are ``head``, when it is there.

    Only members of the outermost object count: the scan skips strings and tracks nesting, so
    an ``"id"`` inside ``params`` is never taken for the request's.
    """
    depth = 0
    index = 0
    in_string = False
    while index < len(head):
        char = head[index]
        if in_string:
            if char == 0x5C:  # backslash
                index += 1
            elif char == 0x22:
                in_string = False
        elif char == 0x22:  # a string starts: a key of the outer object?
            if depth == 1:
                match = _ID.match(head, index)
                if match is not None:
                    try:
                        value: str | int = json.loads(match.group(1))
                    except ValueError:
                        return None
                    return value
            in_string = True
        elif char in b"{[":
            depth += 1
        elif char in b"}]":
            depth -= 1
        index += 1
    return None


class WireWriter:
    """A descriptor written UTF-8 encoded: ``write`` keeps the text, ``flush`` sends it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: list[str] = []
        self._pipe = stat.S_ISFIFO(_mode(fd))
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)
        self._capacity = _pipe_capacity(fd) if self._pipe else 0

    async def write(self, text: str) -> int:
        """Keep ``text`` for the next :meth:`flush`."""
        self._pending.append(text)
        return len(text)

    async def flush(self) -> None:
        """Send everything written so far."""
        if not self._pending:
            return
        data = "".join(self._pending).encode("utf-8")
        self._pending.clear()
        if not self._pipe:
            await anyio.to_thread.run_sync(self._write_all, data)
            return
        view = memoryview(data)
        while view:
            room = self._room()
            if not room:
                await anyio.wait_writable(self._fd)
                continue
            view = view[os.write(self._fd, view[:room]) :]

    def _room(self) -> int:
        """Bytes one write to the pipe takes now without blocking (0: none yet)."""
        if self._capacity and _unread(self._fd) == 0:
            return self._capacity  # an empty pipe has all its buffer free
        # A writable pipe takes PIPE_BUF bytes (POSIX; on Linux it has a free page).
        return select.PIPE_BUF if self._poll.poll(0) else 0

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


def _pipe_capacity(fd: int) -> int:
    """The pipe's buffer size where the system tells it (Linux), else 0."""
    try:
        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (AttributeError, OSError):
        return 0


def _unread(fd: int) -> int:
    """Bytes in the pipe its reader has not read yet (-1 when unknown)."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except OSError:
        return -1


@contextmanager
def claim_stdio() -> Iterator[tuple[int, int]]:
    """Private duplicates of descriptors 0 and 1 for the protocol; the originals diverted.

    While the context is open descriptor 0 reads the null device and descriptor 1 writes to
    stderr; both point back at the wire afterwards. The duplicates are never closed (a worker
    thread may still be blocked reading one). A second claim while one is open raises
    ``RuntimeError``.
    """
    if not _claim.acquire(blocking=False):
        raise RuntimeError("stdin and stdout are already claimed by a running stdio server")
    try:
        wire = {fd: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)}
        for fd, diversion in ((0, os.open(os.devnull, os.O_RDONLY)), (1, os.dup(2))):
            os.dup2(diversion, fd)
            os.close(diversion)
        try:
            yield wire[0], wire[1]
        finally:
            with suppress(AttributeError, OSError, ValueError):
                sys.stdout.flush()  # what handlers printed belongs to stderr, not to the wire
            for fd, private in wire.items():
                os.dup2(private, fd)
    finally:
        _claim.release()


# --- the transport ---------------------------------------------------------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_CLOSED = (errno.EPIPE, errno.ECONNRESET, errno.EBADF)

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    with suppress(OSError, ValueError):
        sys.stderr.write(f"templiqx-mcp: {line}\n")
        sys.stderr.flush()


def _integer(text: str) -> int | None:
    """An integer token, or ``None`` past the interpreter's digit limit (an out-of-range number
    is the line's problem, not a reason to lose its id)."""
    return int(text) if len(text) <= 4300 else None


def _invalid(line: str, exc: Exception) -> tuple[int, str, str | int | None, str]:
    """(code, message, id, stderr note) for a line the SDK's message types refused."""
    try:
        value = json.loads(line, parse_int=_integer)
    except json.JSONDecodeError as bad:
        note = f"line {bad.lineno} column {bad.colno}: {bad.msg}"
        return PARSE_ERROR, f"Parse error: not JSON ({note})", None, f"not JSON ({note})"
    except (ValueError, RecursionError):
        note = "nested too deeply to read"
        return PARSE_ERROR, f"Parse error: {note}", None, f"not JSON ({note})"
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        request_id = None
    problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    message = "Invalid Request: not a JSON-RPC 2.0 message MCP accepts"
    return INVALID_REQUEST, message, request_id, f"invalid request ({problem})"


class _TooManyNodesError(Exception):
    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.count = count


def _parse_large(line: str) -> Any:
    """A long line as a JSON-RPC message, on a worker thread: counted first, then decoded by
    msgspec (several times faster than the SDK's parser, and the loop's thread waits on the GIL
    for less) and checked by the SDK's types; any line msgspec refuses goes to the SDK's own
    parser, so what is refused, and how, is unchanged."""
    import mcp.types as types

    count = json_node_estimate(line, MAX_LINE_NODES)
    if count > MAX_LINE_NODES:
        raise _TooManyNodesError(count)
    try:
        value = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return types.jsonrpc_message_adapter.validate_python(value, by_name=False)


def _dump(message: Any) -> str:
    return str(message.model_dump_json(by_alias=True, exclude_unset=True))


def _dump_large(message: Any) -> str:
    """The same JSON value as :func:`_dump`, written by msgspec: pydantic's serializer holds the
    interpreter for the whole message (200 ms for a 16 MB result, the event loop stopped
    meanwhile), msgspec takes a few milliseconds."""
    data = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return msgspec.json.encode(data).decode("utf-8")


async def _dumped(message: Any) -> str:
    """A message's JSON; a large result is written out on a worker thread, off the loop."""
    result = getattr(message, "result", None)
    if result is None or is_small(result):
        return _dump(message)
    return str(await anyio.to_thread.run_sync(_dump_large, message))


@asynccontextmanager
async def stdio_transport(
    lines: WireLines, writer: WireWriter, *, log: Log = _stderr
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK server's read and write streams over ``lines`` and ``writer``.

    Malformed lines are answered as the module docstring says, and noted through ``log``. When
    the client closes its end of the output, the transport stops and the body is cancelled;
    the context exits normally.
    """
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    incoming_send, incoming = anyio.create_memory_object_stream[Any](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](0)
    replies = outgoing.clone()

    def error(code: int, message: str, request_id: str | int | None) -> Any:
        data = types.ErrorData(code=code, message=message)
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=data))

    reading = anyio.CancelScope()

    async def read() -> None:
        with reading:
            async with incoming_send, replies:
                async for line in lines:
                    await take(line)

    async def take(line: str | OversizedLine) -> None:
        if isinstance(line, OversizedLine):
            request_id = line.request_id()
            log(
                f"refused a line of at least {line.size} bytes (the limit is {lines.max_line}); "
                f"answered {INVALID_REQUEST} with id {json.dumps(request_id)}"
            )
            message = (
                f"Invalid Request: message longer than {lines.max_line} bytes; send smaller "
                "arguments (MAX_ARGUMENT_BYTES is 8 MiB)"
            )
            await replies.send(error(INVALID_REQUEST, message, request_id))
            return
        if not line.strip():
            return  # blank lines are framing, not messages
        try:
            if len(line) > LARGE_LINE_BYTES:
                parsed = await anyio.to_thread.run_sync(_parse_large, line)
            else:
                parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except _TooManyNodesError as many:
            request_id = _head_id(line[:HEAD_BYTES].encode("utf-8", "replace"))
            log(
                f"refused a line holding about {many.count} JSON values (the limit is "
                f"{MAX_LINE_NODES}); answered {INVALID_REQUEST} with id {json.dumps(request_id)}"
            )
            message = (
                f"Invalid Request: message holds about {many.count} JSON values and keys, more "
                f"than the {MAX_LINE_NODES} a message may (MAX_ARGUMENT_NODES is "
                f"{MAX_ARGUMENT_NODES} per argument); send fewer, larger values"
            )
            await replies.send(error(INVALID_REQUEST, message, request_id))
            return
        except Exception as exc:
            code, message, request_id, note = _invalid(line, exc)
            answered = code == PARSE_ERROR or request_id is not None
            log(
                f"{note}; "
                + (f"answered {code} with id {json.dumps(request_id)}" if answered else "dropped")
            )
            if answered:
                await replies.send(error(code, message, request_id))
            return
        await incoming_send.send(SessionMessage(parsed))

    async def write(group: anyio.abc.TaskGroup) -> None:
        async with outgoing_receive:
            async for message in outgoing_receive:
                text = await _dumped(message.message)
                try:
                    await writer.write(text + "\n")
                    await writer.flush()
                except OSError as exc:
                    if exc.errno not in _CLOSED:
                        raise
                    group.cancel_scope.cancel()  # the client is gone: stop serving, quietly
                    return

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write, group)
        async with outgoing:
            yield incoming, outgoing
        reading.cancel()  # the server is done: what it wrote is still sent
