"""The chunked-transfer reader (issue #33): whole reads decoded exactly as urllib3 would.

A fake urllib3 response hands the reader an encoded body in reads of any size; the decoded
bytes must equal the body whatever the chunking, the read sizes, the chunk extensions and the
trailers, with CRLFs inside chunk data, and every framing error must raise urllib3's
``ProtocolError``. The connection goes back to the pool only after a clean end with nothing
after it. The real socket path is covered by the runtime's streaming and keep-alive tests.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urllib3.exceptions import ProtocolError

from templiqx_runtime_openai.chunked import MAX_CHUNK_LINE, dechunked


class _Original:
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = list(reads)
        self.fp = self
        self.closed = False

    def read1(self, size: int) -> bytes:
        if not self.reads:
            return b""
        head = self.reads[0]
        if len(head) > size:
            self.reads[0] = head[size:]
            return head[:size]
        return self.reads.pop(0)

    def close(self) -> None:
        self.closed = True


class _Raw:
    """What the reader uses of a urllib3 response."""

    def __init__(self, reads: list[bytes], headers: dict[str, str] | None = None) -> None:
        self._fp = _Original(reads)
        self.chunked = True
        self.chunk_left: int | None = None
        self.headers = headers or {}
        self.released = False
        self.killed = False

    def release_conn(self) -> None:
        self.released = True

    def close(self) -> None:
        self.killed = True


def encode(parts: list[bytes], *, extensions: bool = False, trailers: bytes = b"") -> bytes:
    out = []
    for part in parts:
        size = b"%x" % len(part)
        if extensions:
            size += b";name=value"
        out.append(size + b"\r\n" + part + b"\r\n")
    return b"".join(out) + b"0\r\n" + trailers + b"\r\n"


def reads_of(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(points) if b > a]


def decode(reads: list[bytes], read_size: int = 65536) -> tuple[bytes, _Raw]:
    raw = _Raw(reads)
    pieces = dechunked(raw, read_size)
    assert pieces is not None
    return b"".join(pieces), raw


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.binary(min_size=1, max_size=300)
        | st.sampled_from([b"data: {}\n\n", b"a\r\nb", b"\r\n", b"\r", b"\n\n"]),
        max_size=40,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=12),
    read_size=st.sampled_from([1, 2, 3, 7, 64, 65536]),
    extensions=st.booleans(),
    trailers=st.sampled_from([b"", b"X-Trailer: 1\r\n", b"A: b\r\nC: d\r\n"]),
)
def test_any_chunking_any_reads_decodes_the_body(
    parts: list[bytes], cuts: list[int], read_size: int, extensions: bool, trailers: bytes
) -> None:
    body = encode(parts, extensions=extensions, trailers=trailers)
    data, raw = decode(reads_of(body, cuts), read_size)
    assert data == b"".join(parts)
    assert raw._fp.closed
    assert raw.released
    assert not raw.killed


def test_a_long_stream_of_repeated_sizes_takes_the_whole_chunk_path() -> None:
    rng = random.Random(33)
    parts = [b"data: " + b"x" * rng.randrange(1, 60) + b"\n\n" for _ in range(5_000)]
    parts[2_500] = b"data: a\r\nb\n\n"  # a CRLF inside chunk data, once
    body = encode(parts)
    data, raw = decode([body[i : i + 65536] for i in range(0, len(body), 65536)])
    assert data == b"".join(parts)
    assert raw.released


def test_bare_lf_size_lines_and_uppercase_hex_are_accepted() -> None:
    body = b"A\n0123456789\r\n1;ext\r\nz\r\n0\n\n"
    data, raw = decode([body])
    assert data == b"0123456789z"
    assert raw.released


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nab\r\n0\r\n\r\n",  # not hexadecimal
        b"-2\r\nab\r\n0\r\n\r\n",  # negative
        b"2\r\nabc\r\n0\r\n\r\n",  # data longer than its size
        b"2\r\nab",  # cut inside the framing
        b"5\r\nab",  # cut inside the data
        b"\r\n",  # an empty size line
        b"",  # nothing at all
    ],
)
def test_broken_framing_raises_protocol_error(body: bytes) -> None:
    raw = _Raw([body])
    pieces = dechunked(raw, 65536)
    assert pieces is not None
    with pytest.raises(ProtocolError):
        b"".join(pieces)
    assert not raw.released


def test_a_size_line_longer_than_the_limit_raises_before_reading_on() -> None:
    raw = _Raw([b"1" * (MAX_CHUNK_LINE + 10)] * 4)
    pieces = dechunked(raw, 65536)
    assert pieces is not None
    with pytest.raises(ProtocolError, match="too long"):
        b"".join(pieces)


def test_bytes_after_the_body_or_a_close_in_the_trailers_never_reuse_the_connection() -> None:
    data, raw = decode([encode([b"abc"]) + b"HTTP/1.1 200 OK\r\n"])
    assert data == b"abc"
    assert raw.killed
    assert not raw.released
    data, raw = decode([b"3\r\nabc\r\n0\r\n"])  # the server closed before the last CRLF
    assert data == b"abc"
    assert raw.killed
    assert not raw.released


@pytest.mark.parametrize(
    ("change", "value"),
    [("chunked", False), ("chunk_left", 3), ("headers", {"content-encoding": "gzip"})],
)
def test_urllib3_keeps_what_the_reader_cannot_read_exactly(change: str, value: Any) -> None:
    raw = _Raw([encode([b"abc"])])
    setattr(raw, change, value)
    assert dechunked(raw, 65536) is None


def test_identity_encoding_is_read_by_the_reader() -> None:
    raw = _Raw([encode([b"abc"])], headers={"content-encoding": " Identity "})
    pieces = dechunked(raw, 65536)
    assert pieces is not None
    assert b"".join(pieces) == b"abc"
