"""P14: 200 concurrent SSE streams on one worker; throughput with two workers.

``p14_server.py`` runs templiqx-http on uvicorn in a process of its own, its event loop watched
by a probe task; ``sse_clients.py`` (another process) opens 200 streamed executions at once
(each 200 deltas from ``sse_server.py`` through the OpenAI runtime, natively async: no thread
per stream) and reads them all to their ``envelope``. Every round checks that all 200
envelopes are ok and every delta arrived.

Two upstreams. **Paced**: each stream's deltas arrive 100 ms apart, as a model writes (a delta
often carries several tokens; 2,000 events a second over the 200 streams): the target is the
server's event-loop lag p99 under 50 ms while they are open — what any other request waits.
The streams start spread over one pace period, as independent users do (started in the same
millisecond, their deltas would all arrive together, every 100 ms, and the loop would handle
200 of them in one pass). (At
50 ms apart, 4,000 events a second, one process on this machine is saturated: about 0.25 ms of
CPU per event, mostly the runtime's parsing and the application's per-event work.) **Flood**:
every stream's 200 deltas at once, as fast as loopback carries them: the server is saturated,
so the lag is reported (it is the time one pass over every ready stream takes) with the streams
per second, for one worker and for ``templiqx-http-server --workers 2``. Also reported: the most
threads the server had while streams were open, its resident set idle and at its peak.
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import BenchmarkError, Comparison, Settings, Timing, check
from host_package import API_KEY, CONTRACT, MODEL, PACKAGE, service_for
from http_servers import TempliqxServer
from sse_server import LoopbackServer

__all__ = ["run"]

STREAMS = 200
WORKER_THREADS = 16  # templiqx-http-server's default
DELTAS = 200
PACE_MS = 100
TARGET_LAG_S = 0.050
EXECUTE = f"/operations/v1/packages/{PACKAGE}/contracts/{CONTRACT}/execute"
BODY = json.dumps({"render": {"inputs": {"topic": "the contract"}}}).encode()
HERE = Path(__file__).resolve().parent


def _clients(port: int, body_file: Path, spread_ms: float = 0) -> float:
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "sse_clients.py"),
            str(port),
            EXECUTE,
            str(body_file),
            str(STREAMS),
            str(spread_ms),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    check(done.returncode == 0, f"the SSE clients failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    check(
        result["ok"] == STREAMS and result["deltas"] == STREAMS * DELTAS,
        f"{result['ok']}/{STREAMS} streams ok, {result['deltas']} deltas",
    )
    return float(result["seconds"])


def _one_worker(
    root: Path, base_url: str, scratch: Path, body: Path, rounds: int, spread_ms: float = 0
) -> dict:
    out = scratch / "p14-server.json"
    log = scratch / "p14-server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "p14_server.py"),
                str(root),
                base_url,
                str(out),
                str(WORKER_THREADS),
            ],
            stdout=subprocess.PIPE,
            stderr=sink,
            cwd=HERE,
        )
        try:
            assert process.stdout is not None
            line = json.loads(process.stdout.readline() or b"{}")
            if line.get("event") != "listening":
                raise BenchmarkError(f"p14_server did not start: {log.read_text()[-2000:]}")
            seconds = [_clients(line["port"], body, spread_ms) for _ in range(rounds)]
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(120)
    metrics: dict = json.loads(out.read_text())
    metrics["seconds"] = seconds
    return metrics


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P14",
        what=f"{STREAMS} concurrent SSE streams at model pace, one worker: event-loop lag p99",
        baseline="-",
        target=None,
        goal=f"lag p99 < {TARGET_LAG_S * 1000:g} ms",
    )
    root = settings.scratch / "p14"
    body = settings.scratch / "p14-body.json"
    body.write_bytes(BODY)
    rounds = settings.rounds(3, quick=1)
    with LoopbackServer(DELTAS, keep_alive=True, pace_ms=PACE_MS) as paced_upstream:
        service_for(root, paced_upstream.base_url).close()  # writes the package
        paced = _one_worker(
            root, paced_upstream.base_url, settings.scratch, body, rounds, spread_ms=PACE_MS
        )
    with LoopbackServer(DELTAS, keep_alive=True) as upstream:
        flood = _one_worker(root, upstream.base_url, settings.scratch, body, rounds + 1)
        env = {
            "TEMPLIQX_RUNTIME_MODE": "openai",
            "MODEL_BASE_URL": upstream.base_url,
            "MODEL_API_KEY": API_KEY,
            "MODEL_ID": MODEL,
            "MODEL_TIMEOUT_MS": "600000",
        }
        args = ["--workers", "2", "--max-concurrent", "1024", "--request-timeout", "600"]
        with TempliqxServer(root, settings.scratch / "p14-workers.log", env=env, args=args) as two:
            time.sleep(2.0)  # both workers up
            _clients(two.port, body)  # warms both workers
            two_seconds = [_clients(two.port, body) for _ in range(rounds)]
    flood_seconds = flood["seconds"][1:]  # the first round warmed up
    row.record(Timing([paced["lag_p99_s"]]), Timing([paced["lag_p99_s"]]), [1.0])
    row.ratio = row.ratio_iqr = row.baseline_median = row.baseline_iqr = None
    row.metrics = {
        "lag_p99_ms": round(paced["lag_p99_s"] * 1000, 2),
        "lag_max_ms": round(paced["lag_max_s"] * 1000, 2),
        "target_lag_p99_ms": TARGET_LAG_S * 1000,
        "pace_ms": PACE_MS,
        "most_streams_open": paced["most_streams"],
        "threads_during_streams": max(paced["threads"], flood["threads"]),
        "rss_idle_mib": round(paced["rss_idle"] / 2**20, 1),
        "rss_peak_mib": round(max(paced["rss_peak"], flood["rss_peak"]) / 2**20, 1),
        "flood_lag_p99_ms": round(flood["lag_p99_s"] * 1000, 2),
        "flood_streams_per_s_one_worker": round(STREAMS / statistics.median(flood_seconds), 1),
        "flood_streams_per_s_two_workers": round(STREAMS / statistics.median(two_seconds), 1),
        "deltas_per_stream": DELTAS,
    }
    row.goal_met = paced["lag_p99_s"] < TARGET_LAG_S
    return [row]
