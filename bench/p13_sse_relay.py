"""P13: relaying a 50,000-delta stream as Server-Sent Events, against consuming it in-process.

The stream comes from ``sse_server.py`` (its own process, keep-alive), through the OpenAI
runtime in both cases:

* templiqx-http: ``templiqx-http-server`` (its own process) runs ``execute_contract`` with
  ``Accept: text/event-stream``, encodes every event as SSE and writes it to a client (a third
  process, ``sse_clients.py``) that reads to the ``envelope`` event;
* in-process: ``async with service.astream_contract(...) as run: async for event in run`` in
  this process, on the same runtime and the same upstream stream.

The ratio (relayed time over in-process time) must be at most 1.5. Before timing, each side is
checked: 50,000 deltas and an ok envelope. Also reported: how soon the model's connection is
closed after a client disconnects from a live stream (median of five, measured with the
conformance kit's loopback server, which records when its client — the runtime — closes).
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import Comparison, Settings, Side, check, interleave
from host_package import API_KEY, CONTRACT, MODEL, PACKAGE, service_for
from http_servers import TempliqxServer
from sse_server import LoopbackServer

from templiqx_contracts import Delta

__all__ = ["run"]

DELTAS = 50_000
TARGET = 1.5
EXECUTE = f"/operations/v1/packages/{PACKAGE}/contracts/{CONTRACT}/execute"
BODY = json.dumps({"render": {"inputs": {"topic": "the contract"}}}).encode()


def _relayed(port: int, body_file: Path) -> tuple[int, int]:
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("sse_clients.py")),
            str(port),
            EXECUTE,
            str(body_file),
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    check(done.returncode == 0, f"the SSE client failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return int(result["ok"]), int(result["deltas"])


def _disconnect_latency(root: Path, scratch: Path) -> list[float]:
    from templiqx_conformance.loopback import LoopbackServer as Recording
    from templiqx_conformance.loopback import Reply, sse_frame

    frame = sse_frame({"choices": [{"index": 0, "delta": {"content": "word "}}]})
    latencies: list[float] = []
    with Recording(Reply.ticking(frame, every_s=0.01)) as model:
        env = {
            "TEMPLIQX_RUNTIME_MODE": "openai",
            "MODEL_BASE_URL": model.base_url,
            "MODEL_API_KEY": API_KEY,
            "MODEL_ID": MODEL,
        }
        with TempliqxServer(root, scratch / "p13-disconnect.log", env=env) as server:
            for index in range(5):
                client = socket.create_connection(("127.0.0.1", server.port), timeout=30)
                client.sendall(
                    (
                        f"POST {EXECUTE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        f"Accept: text/event-stream\r\nContent-Length: {len(BODY)}\r\n\r\n"
                    ).encode()
                    + BODY
                )
                seen = b""
                while seen.count(b"event: Delta") < 3:
                    chunk = client.recv(65536)
                    check(bool(chunk), f"the stream ended early: {seen[-500:]!r}")
                    seen += chunk
                check(model.wait_for_requests(index + 1), "the model was not called")
                exchange = model.exchanges[index]
                client.close()
                closed = time.monotonic()
                check(exchange.wait(10), "the model's connection stayed open")
                assert exchange.client_closed_at is not None
                latencies.append(exchange.client_closed_at - closed)
    return latencies


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P13",
        what="relay a 50,000-delta stream as SSE (templiqx-http-server, separate client)",
        baseline="the same stream consumed in-process (astream_contract)",
        target=TARGET,
    )
    root = settings.scratch / "p13"
    body_file = settings.scratch / "p13-body.json"
    body_file.write_bytes(BODY)
    with LoopbackServer(DELTAS, keep_alive=True) as upstream:
        service = service_for(root, upstream.base_url)
        env = {
            "TEMPLIQX_RUNTIME_MODE": "openai",
            "MODEL_BASE_URL": upstream.base_url,
            "MODEL_API_KEY": API_KEY,
            "MODEL_ID": MODEL,
            "MODEL_TIMEOUT_MS": "600000",
        }
        with TempliqxServer(
            root, settings.scratch / "p13-server.log", env=env, args=["--request-timeout", "600"]
        ) as server:

            def relayed() -> None:
                ok, deltas = _relayed(server.port, body_file)
                check(ok == 1 and deltas == DELTAS, f"relayed: ok={ok} deltas={deltas}")

            async def consume() -> tuple[bool, int]:
                count = 0
                async with service.astream_contract(
                    PACKAGE, CONTRACT, inputs={"topic": "the contract"}
                ) as run:
                    async for event in run:
                        count += isinstance(event, Delta)
                return run.envelope.ok, count

            def in_process() -> None:
                ok, deltas = asyncio.run(consume())
                check(ok and deltas == DELTAS, f"in-process: ok={ok} deltas={deltas}")

            relayed()
            in_process()
            a, b, ratios = interleave(
                Side("templiqx-http SSE", relayed),
                Side("in-process", in_process),
                rounds=settings.rounds(7, quick=3),
                warmup=0,
            )
        row.record(a, b, ratios)
        service.close()
    latencies = _disconnect_latency(root, settings.scratch)
    row.metrics = {
        "deltas": DELTAS,
        "relayed_events_per_s": round(DELTAS / a.median),
        "in_process_events_per_s": round(DELTAS / b.median),
        "disconnect_to_upstream_close_ms": round(statistics.median(latencies) * 1000, 1),
        "disconnect_to_upstream_close_max_ms": round(max(latencies) * 1000, 1),
    }
    return [row]
