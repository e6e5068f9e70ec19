"""The stdio wire's files: the same lines as a UTF-8 text file, writes that never block the loop.

A text file opened as the SDK opens stdin (``encoding="utf-8", errors="replace"``, universal
newlines) is the oracle for :class:`WireLines`, fed through a pipe in arbitrary pieces and from
a regular file. :class:`WireWriter` must deliver every byte in order and keep the event loop
running while the pipe is full. :func:`claim_stdio` runs in a child process, whose descriptors
0 and 1 it moves.
"""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from templiqx_mcp import wire
from templiqx_mcp.wire import WireLines, WireWriter

PIECES = st.lists(
    st.binary(max_size=40)
    | st.sampled_from([b"\r", b"\n", b"\r\n", b"\xc3", b"\xa9", b"\xe2\x82", b"\xac", b"\xff"]),
    max_size=40,
)


def _oracle(data: bytes) -> list[str]:
    return list(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"))


async def _lines(fd: int) -> list[str]:
    return [line async for line in WireLines(fd)]


def _through_pipe(pieces: list[bytes]) -> list[str]:
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        for piece in pieces:
            os.write(write_fd, piece)
            time.sleep(0)
        os.close(write_fd)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        return anyio.run(_lines, read_fd)
    finally:
        feeder.join()
        os.close(read_fd)


@settings(max_examples=150, deadline=None)
@given(PIECES)
def test_lines_from_a_pipe_equal_a_text_files_lines(pieces: list[bytes]) -> None:
    assert _through_pipe(pieces) == _oracle(b"".join(pieces))


def test_lines_split_anywhere_and_a_huge_line() -> None:
    line = '{"jsonrpc":"2.0","method":"x","params":{"s":"é€𝄞"}}\n'.encode()
    data = line * 3 + b"a\r\nb\rc\n\n" + b"x" * (3 << 20) + b"\ntail"
    pieces = [data[i : i + 7] for i in range(0, 210, 7)] + [data[210:]]
    assert _through_pipe(pieces) == _oracle(data)
    # Every split point of a short line, including inside a multi-byte character and a \r\n.
    short = "é\r\n€\r𝄞\n".encode()
    for cut in range(len(short) + 1):
        assert _through_pipe([short[:cut], short[cut:]]) == _oracle(short), cut


def test_lines_from_a_regular_file(tmp_path: Path) -> None:
    data = b'{"a":1}\r\n{"b":"\xff"}\nlast'
    path = tmp_path / "input.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert anyio.run(_lines, fd) == _oracle(data)
    finally:
        os.close(fd)


def test_writes_to_a_full_pipe_wait_without_blocking_the_loop() -> None:
    read_fd, write_fd = os.pipe()
    message = "".join(f'{{"n":{n},"text":"€ {"x" * (n % 97)}"}}\n' for n in range(20_000))
    received = bytearray()

    def drain() -> None:
        time.sleep(0.3)  # let the pipe fill first
        while chunk := os.read(read_fd, 1 << 14):
            received.extend(chunk)
            time.sleep(0.001)

    ticks = 0

    async def write() -> None:
        nonlocal ticks
        writer = WireWriter(write_fd)
        done = anyio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            half = len(message) // 2
            await writer.write(message[:half])
            await writer.write(message[half:])
            await writer.flush()
            await writer.flush()  # nothing pending: a no-op
            done.set()

    drainer = threading.Thread(target=drain)
    drainer.start()
    started = time.monotonic()
    anyio.run(write)
    elapsed = time.monotonic() - started
    os.close(write_fd)
    drainer.join()
    os.close(read_fd)
    assert received.decode("utf-8") == message
    assert elapsed > 0.3, "the message is larger than the pipe, so the writer had to wait"
    assert ticks >= 10, "the event loop kept running while the pipe was full"


def test_a_message_to_an_empty_pipe_is_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    read_fd, write_fd = os.pipe()
    sizes: list[int] = []
    real_write = os.write

    def counting(fd: int, data: Any) -> int:
        sizes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(wire.os, "write", counting)
    message = "€" * 7000 + "\n"  # 21 KB, more than PIPE_BUF

    async def write(text: str) -> None:
        writer = WireWriter(write_fd)
        await writer.write(text)
        await writer.flush()

    try:
        anyio.run(write, message)
        assert os.read(read_fd, 1 << 16) == message.encode()
        if sys.platform == "linux":
            assert sizes == [len(message.encode())], "one write, so one wake-up of the reader"
        sizes.clear()
        real_write(write_fd, b"unread")
        anyio.run(write, message)
        assert max(sizes) <= select.PIPE_BUF, "a pipe holding data takes PIPE_BUF at a time"
        assert os.read(read_fd, 1 << 16) == b"unread" + message.encode()
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_writes_to_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)

    async def write() -> None:
        writer = WireWriter(fd)
        assert await writer.write("é\n") == 2
        await writer.write('{"ok":true}\n')
        await writer.flush()

    try:
        anyio.run(write)
    finally:
        os.close(fd)
    assert path.read_bytes() == 'é\n{"ok":true}\n'.encode()


CLAIM = """
import os, sys
from templiqx_mcp.wire import claim_stdio
with claim_stdio() as (wire_in, wire_out):
    print("stray print", flush=True)
    os.write(1, b"stray write\\n")
    assert os.read(0, 10) == b"", "descriptor 0 reads the null device"
    os.write(wire_out, os.read(wire_in, 100).upper())
    try:
        with claim_stdio():
            pass
    except RuntimeError as exc:
        os.write(2, f"second claim: {exc}\\n".encode())
    print("buffered", end="")
print(" after", flush=True)
"""


def test_claim_moves_the_protocol_off_the_standard_descriptors() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLAIM],
        input=b"hello wire\n",
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == b"HELLO WIRE\n after\n"
    stderr = done.stderr.decode()
    assert "stray print\nstray write\n" in stderr
    assert "second claim: stdin and stdout are already claimed" in stderr
    assert stderr.endswith("buffered"), "printed while claimed: flushed to stderr, not the wire"
