"""P14F: the event-loop stall of a process's first async call through the OpenAI runtime.

Each round starts three fresh processes (``first_call_child.py``): one makes its first
``aexecute_contract`` with the runtime as it is (its transport built on a worker thread); one
warms the runtime up first, as ``templiqx-http-server`` does at start-up (``warm_up()``); the
third first does on the loop what that call used to do there before issue #26 (import the
async transport with httpx2, build the client and its SSL context), then the same call. A probe
task sleeping 1 ms at a time measures the longest the loop was blocked meanwhile: what every
other request of a server waits on its first call.

Reported: the median stall of each; the target is that the first call of a warmed-up runtime
stalls the loop less than 20 ms. Without the warm-up, the import running on the worker thread
still competes with the loop for the GIL (its stall is reported, not targeted).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

from harness import Comparison, Settings, Timing, check
from sse_server import LoopbackServer

__all__ = ["run"]

TARGET_S = 0.020


def _stall(base_url: str, root: Path, mode: str) -> float:
    child = Path(__file__).with_name("first_call_child.py")
    done = subprocess.run(
        [sys.executable, str(child), base_url, str(root), mode],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parent,
        check=False,
    )
    check(done.returncode == 0, f"first-call child failed: {done.stderr[-2000:]}")
    stall, _seconds = (float(part) for part in done.stdout.split())
    return stall


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P14F",
        what="event-loop stall of the first async call, warmed-up OpenAI runtime (fresh process)",
        baseline="the same call with the transport built on the loop (before #26)",
        target=None,
        goal=f"stall < {TARGET_S * 1000:g} ms",
    )
    root = settings.scratch / "p14f"
    stalls: dict[str, list[float]] = {"warm": [], "now": [], "inline": []}
    modes = list(stalls)
    with LoopbackServer(200, keep_alive=True) as server:
        for index in range(settings.rounds(9, quick=3)):
            shift = index % len(modes)
            for mode in modes[shift:] + modes[:shift]:
                stalls[mode].append(_stall(server.base_url, root, mode))
    warm, now, inline = stalls["warm"], stalls["now"], stalls["inline"]
    ratios = [a / b if b else float("inf") for a, b in zip(warm, inline, strict=True)]
    row.record(Timing(warm), Timing(inline), ratios)
    row.metrics = {
        "stall_warmed_up_ms": round(statistics.median(warm) * 1000, 2),
        "stall_cold_ms": round(statistics.median(now) * 1000, 2),
        "stall_before_ms": round(statistics.median(inline) * 1000, 2),
        "stall_warmed_up_max_ms": round(max(warm) * 1000, 2),
        "target_stall_ms": TARGET_S * 1000,
    }
    row.goal_met = statistics.median(warm) < TARGET_S
    return [row]
