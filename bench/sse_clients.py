"""Clients for the SSE benchmarks: streamed executions read over raw sockets.

``python sse_clients.py PORT PATH BODY_FILE STREAMS [SPREAD_MS]`` opens ``STREAMS``
connections (at once, or their starts spread evenly over ``SPREAD_MS``, as independent users
arrive), each POSTing the body with ``Accept: text/event-stream``, reads every response to its
end and prints one JSON line: the seconds from the first request to the last byte, the streams that
ended with an ok ``envelope`` event, and the ``Delta`` events received in all. Being its own
process, it does not compete with a measured server for the GIL.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

__all__ = ["read_stream"]

_OK_ENVELOPE = (
    b'event: envelope\ndata: {"api_version":"templiqx/v1alpha1",'
    b'"operation":"execute_contract","ok":true'
)


async def read_stream(port: int, path: str, body: bytes, delay: float = 0.0) -> tuple[bool, int]:
    """One streamed execution: whether its envelope said ok, and the Delta events seen."""
    await asyncio.sleep(delay)
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    writer.write(head + body)
    await writer.drain()
    deltas = 0
    ok = False
    tail = b""
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        window = tail + chunk
        deltas += window.count(b"event: Delta\n") - tail.count(b"event: Delta\n")
        ok = ok or _OK_ENVELOPE in window
        tail = window[-256:]
    writer.close()
    return ok, deltas


async def main(port: int, path: str, body: bytes, streams: int, spread_s: float) -> None:
    started = time.perf_counter()
    results = await asyncio.gather(
        *(read_stream(port, path, body, spread_s * i / streams) for i in range(streams))
    )
    seconds = time.perf_counter() - started
    ok = sum(1 for good, _ in results if good)
    deltas = sum(count for _, count in results)
    print(json.dumps({"seconds": seconds, "ok": ok, "deltas": deltas}), flush=True)


if __name__ == "__main__":
    spread = float(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0.0
    asyncio.run(
        main(
            int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]).read_bytes(), int(sys.argv[4]), spread
        )
    )
