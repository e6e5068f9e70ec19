"""The server side of P14: templiqx-http on uvicorn in this process, with a loop-lag probe.

``python p14_server.py ROOT BASE_URL OUT_JSON`` serves the bench package (OpenAI runtime
against ``BASE_URL``, warmed up as templiqx-http-server does) on 127.0.0.1, prints
``{"event":"listening","port":N}``, and on SIGTERM writes to ``OUT_JSON``: the event loop's
lateness while streams were open (a probe task sleeping 1 ms at a time), the most threads
alive then, and the resident set before the first stream and at its peak.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import uvicorn
from host_package import service_for

from templiqx_http import HttpSettings, create_app


def _rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0


async def main(root: Path, base_url: str, out: Path) -> None:
    service = service_for(root, base_url, worker_threads=int(sys.argv[4]))
    service._ctx.runtime.warm_up()  # type: ignore[attr-defined]
    app = create_app(service, HttpSettings(request_timeout_s=600, max_concurrent=1024))
    inflight = app.state.templiqx.inflight
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    rss_idle = _rss("VmRSS:")
    print(json.dumps({"event": "listening", "port": sock.getsockname()[1]}, separators=(",", ":")))
    sys.stdout.flush()
    lateness: list[float] = []
    most_threads = threading.active_count()
    most_streams = 0
    while not serving.done():
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        late = max(0.0, time.perf_counter() - before - 0.001)
        if inflight.count:
            lateness.append(late)
            most_threads = max(most_threads, threading.active_count())
            most_streams = max(most_streams, inflight.count)
    lateness.sort()
    p99 = lateness[min(len(lateness) - 1, int(len(lateness) * 0.99))] if lateness else 0.0
    out.write_text(
        json.dumps(
            {
                "lag_p99_s": p99,
                "lag_max_s": lateness[-1] if lateness else 0.0,
                "samples": len(lateness),
                "threads": most_threads,
                "most_streams": most_streams,
                "rss_idle": rss_idle,
                "rss_peak": _rss("VmHWM:"),
            }
        )
    )


if __name__ == "__main__":
    # uvicorn raises SIGTERM again once it has stopped: let that end main(), not the process
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])))
