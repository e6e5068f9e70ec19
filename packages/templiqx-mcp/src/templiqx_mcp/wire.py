"""The stdio wire: stdin and stdout as the line files the SDK's ``stdio_server`` reads and writes.

``mcp.server.stdio.stdio_server`` takes its two files as arguments. Left to itself it wraps the
process's standard streams in ``anyio.wrap_file``, which runs every ``readline``, ``write`` and
``flush`` on a worker thread: three thread hand-offs per request, each costing more CPU than the
JSON-RPC work around it and, on a busy machine, a wait for a core to wake the thread on. The
files here do the same I/O from the event loop when the descriptor is a pipe, and on a worker
thread otherwise:

* :class:`WireLines` waits until a pipe or socket is readable and then reads what is there
  (which never blocks), and decodes and splits lines exactly as a text file opened with
  ``encoding="utf-8", errors="replace"`` does: universal newlines (``\\r\\n`` and a lone ``\\r``
  end a line too), each line with its ``\\n``, the last one possibly without.
* :class:`WireWriter` keeps what is written until ``flush`` and then sends it UTF-8 encoded. To a
  pipe it writes only what the pipe takes at once, which guarantees the write does not block:
  the whole message in one write when the pipe is empty (the client has read every earlier
  message: the usual case, and one wake-up of the client per message), else at most
  ``PIPE_BUF`` bytes once the pipe is writable. A client that stops reading stalls this writer,
  never the event loop, so the server keeps reading (and seeing cancellations) as before.

:func:`claim_stdio` does what the SDK does before serving its own files: the protocol moves to
private duplicates of descriptors 0 and 1, and while the server runs the standard descriptors
point at the null device and at stderr, so nothing a handler or a child process prints reaches
the wire.
"""

from __future__ import annotations

import codecs
import fcntl
import io
import os
import select
import stat
import struct
import sys
import termios
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress

import anyio
import anyio.to_thread

__all__ = ["WireLines", "WireWriter", "claim_stdio"]

READ_SIZE = 1 << 16
"""Bytes asked for per read."""

_claim = threading.Lock()


def _mode(fd: int) -> int:
    return os.fstat(fd).st_mode


class WireLines(anyio.AsyncFile[str]):
    """The lines of a descriptor (``async for line in WireLines(fd)``), read from the loop."""

    def __init__(self, fd: int) -> None:
        binary = os.fdopen(fd, "rb", closefd=False)
        super().__init__(io.TextIOWrapper(binary, encoding="utf-8", errors="replace"))
        self._fd = fd

    async def _read(self, from_loop: bool) -> bytes:
        if from_loop:
            await anyio.wait_readable(self._fd)
            return os.read(self._fd, READ_SIZE)
        return await anyio.to_thread.run_sync(os.read, self._fd, READ_SIZE)

    async def __aiter__(self) -> AsyncIterator[str]:
        mode = _mode(self._fd)
        from_loop = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        decoder = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder("utf-8")(errors="replace"), translate=True
        )
        head: list[str] = []  # the start of a line whose end has not arrived
        while True:
            data = await self._read(from_loop)
            text = decoder.decode(data, final=not data)
            if text:
                lines = text.split("\n")
                if len(lines) > 1:
                    if head:
                        lines[0] = "".join((*head, lines[0]))
                        head.clear()
                    for line in lines[:-1]:
                        yield line + "\n"
                if lines[-1]:
                    head.append(lines[-1])
            if not data:
                if head:
                    yield "".join(head)
                return


class WireWriter(anyio.AsyncFile[str]):
    """A descriptor written UTF-8 encoded: ``write`` keeps the text, ``flush`` sends it."""

    def __init__(self, fd: int) -> None:
        binary = os.fdopen(fd, "wb", closefd=False)
        super().__init__(io.TextIOWrapper(binary, encoding="utf-8"))
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
