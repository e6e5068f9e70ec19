"""HTTP/1.1 chunked transfer decoding in whole socket reads, for long event streams.

urllib3 decodes a chunked body one chunk at a time — a size line read, the chunk read, its CRLF
read, each through several Python calls — and ``iter_content`` hands each chunk out as its own
piece. A model server writes one chunk per event, so a 50,000-event stream costs 50,000 rounds of
that machinery, more than the event parsing itself (issue #33's profile). :func:`dechunked`
reads whatever the socket holds (``read1``, up to ``read_size`` bytes), strips the framing of
every chunk in it with ``bytes.find`` and slices, and yields the data of all of them as one
piece, so the SSE decoder sees hundreds of events per call.

It is used only where it reads exactly what urllib3 would: a chunked response, no
``Content-Encoding`` (a compressed body keeps urllib3's decoder), nothing read yet, over the
``http.client`` response urllib3 wraps. Framing is checked as strictly as urllib3 checks it
(a size line of at most 64 KiB, hexadecimal, optional extensions after ``;``; CRLF after each
chunk's data; trailer lines until an empty one), and a body cut short raises urllib3's
``ProtocolError``, as urllib3 does, so failures map exactly as before.

Keep-alive: once the last chunk and its trailers are read, the ``http.client`` response is
closed and the connection goes back to the pool — the same two steps urllib3 takes — unless
bytes followed the body in the same read or the server closed the connection, in which case
the connection is closed instead (it is never reused with stray bytes in it).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any, Final

import requests
from urllib3.exceptions import ProtocolError

__all__ = ["MAX_CHUNK_LINE", "dechunked"]

MAX_CHUNK_LINE: Final = 65536
"""The longest chunk-size or trailer line accepted (urllib3's own limit)."""

_SIZE, _DATA, _CRLF, _TRAILER = 0, 1, 2, 3


def dechunked(raw: Any, read_size: int) -> Iterator[bytes] | None:
    """The decoded body of urllib3 response ``raw`` in whole reads, or ``None`` when it does not
    apply (not chunked, compressed, already partly read, or not over ``http.client``)."""
    original = getattr(raw, "_fp", None)
    fp = getattr(original, "fp", None)
    if (
        not getattr(raw, "chunked", False)
        or fp is None
        or not hasattr(fp, "read1")
        or getattr(raw, "chunk_left", None) is not None
        or raw.headers.get("content-encoding", "identity").strip().lower() != "identity"
    ):
        return None
    return _read(raw, original, fp.read1, read_size)


def _read(raw: Any, original: Any, read1: Any, read_size: int) -> Iterator[bytes]:
    state = _SIZE
    left = 0
    held = b""  # an incomplete size line, CRLF or trailer line from the previous read
    sizes: dict[bytes, int] = {}  # size lines already parsed (one per distinct chunk size)
    while True:
        try:
            block = read1(read_size)
        except ssl.SSLError as error:
            raise requests.exceptions.SSLError(error) from error
        if not block:
            if state == _TRAILER and not held:
                _end(raw, original, reuse=False)
                return
            raise ProtocolError("Response ended prematurely")
        data = held + block if held else block
        held = b""
        size = len(data)
        pos = 0
        parts: list[bytes] = []
        whole = True  # one attempt per read at taking whole chunks in C loops
        while pos < size:
            if state == _SIZE:
                if whole:
                    whole = False
                    pos = _whole_chunks(data, pos, sizes, parts)
                    continue
                newline = data.find(b"\n", pos, pos + MAX_CHUNK_LINE + 1)
                if newline < 0:
                    if size - pos > MAX_CHUNK_LINE:
                        raise ProtocolError("chunk size or trailer line too long")
                    held = data[pos:]
                    break
                line = data[pos:newline]
                pos = newline + 1
                try:
                    left = int(line, 16)
                except ValueError:
                    left = _chunk_size(line)
                if left <= 0:
                    if left < 0:
                        raise ProtocolError(f"invalid chunk size line {line[:40]!r}")
                    state = _TRAILER
                    continue
                if line[-1:] == b"\r" and len(line) <= 9 and len(sizes) < 1024:
                    sizes[line[:-1]] = left
                state = _DATA
            elif state == _DATA:
                end = pos + left
                if end <= size:
                    parts.append(data[pos:end])
                    pos = end
                    left = 0
                    state = _CRLF
                else:
                    parts.append(data[pos:])
                    left = end - size
                    pos = size
            elif state == _CRLF:
                if size - pos < 2:
                    held = data[pos:]
                    break
                if data[pos : pos + 2] != b"\r\n":
                    raise ProtocolError("chunk data not followed by CRLF")
                pos += 2
                state = _SIZE
            else:  # _TRAILER
                newline = data.find(b"\n", pos, pos + MAX_CHUNK_LINE + 1)
                if newline < 0:
                    if size - pos > MAX_CHUNK_LINE:
                        raise ProtocolError("chunk size or trailer line too long")
                    held = data[pos:]
                    break
                line = data[pos:newline]
                pos = newline + 1
                if line in (b"\r", b""):
                    _end(raw, original, reuse=pos == size)
                    if parts:
                        yield b"".join(parts)
                    return
        if parts:
            yield parts[0] if len(parts) == 1 else b"".join(parts)


def _whole_chunks(data: bytes, pos: int, sizes: dict[bytes, int], parts: list[bytes]) -> int:
    """Take the run of whole chunks at ``data[pos:]`` whose sizes were seen before; return
    where it ends (``pos`` itself when the first chunk is new, cut or holds a CRLF).

    Split at every CRLF, a run of chunks is ``size, data, size, data, ...``; a pair is taken
    only if its size line is a known one and its data is exactly that long. Every accepted pair
    therefore ends at a real chunk boundary, so the next piece is the next real size line: the
    first pair that fails (a new size, a chunk cut by the read, data holding a CRLF, the last
    chunk) ends the run, and the byte-by-byte rules above take over from there.
    """
    pieces = (data[pos:] if pos else data).split(b"\r\n")
    pairs = (len(pieces) - 1) // 2
    if not pairs:
        return pos
    lines = pieces[0 : 2 * pairs : 2]
    bodies = pieces[1 : 2 * pairs : 2]
    lengths = list(map(len, bodies))
    if list(map(sizes.get, lines)) != lengths:
        get = sizes.get
        pairs = next(
            i for i, (line, n) in enumerate(zip(lines, lengths, strict=False)) if get(line) != n
        )
        if not pairs:
            return pos
        del lines[pairs:], bodies[pairs:], lengths[pairs:]
    parts.append(b"".join(bodies))
    return pos + sum(map(len, lines)) + sum(lengths) + 4 * pairs


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    try:
        value = int(text, 16)
    except ValueError:
        raise ProtocolError(f"invalid chunk size line {line[:40]!r}") from None
    if value < 0:
        raise ProtocolError(f"invalid chunk size line {line[:40]!r}")
    return value


def _end(raw: Any, original: Any, *, reuse: bool) -> None:
    """The body was read to its end: hand the connection back (or close it)."""
    original.close()
    if reuse:
        raw.release_conn()
    else:
        raw.close()
