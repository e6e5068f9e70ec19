"""R15: the MCP wedge — 64 heavy ``render_contract`` calls, cancelled, leave a server that
answers at once.

Issue #29: with only its own tools (17 x ``create_package``, ``put_contract``, 64
``render_contract`` calls of ~6 KB), then cancelling them, all 64 worker threads stayed busy and
ignored the cancel; ``ping`` took 29 s and ``discover_packages`` and ``compile_contract`` got no
answer in 30 s: the server was unusable for hours. Here one real ``templiqx-mcp`` process gets
the same calls (16 packages with the looping contract, four calls each so that the per-package
lanes admit all 64 at once), every call is cancelled with ``notifications/cancelled``, and then:

* the server answers ``ping`` in :data:`PING_S` (median of :data:`PINGS`; each one at most
  :data:`PING_MAX_S` on a loaded machine),
* every other call is answered normally (discover, compile, validate),
* its workers are free: the process uses at most :data:`IDLE_CPU_S` of CPU time over the
  :data:`IDLE_WINDOW_S` after the cancellations settled,
* no cancelled call is answered (MCP prescribes no response) and nothing is a traceback.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import pytest
import reliability_kit as kit
from mcp_pipe import McpPipe, line, start

SUITE = "R15"
CALLS = 64
PACKAGES = 16
PINGS = 20
PING_S = 0.1
PING_MAX_S = 1.0
IDLE_WINDOW_S = 2.0
IDLE_CPU_S = 0.5
SETTLE_S = 1.0

LOOPS = """\
api_version: templiqx/v1alpha1
id: loops
version: 1.0.0
inputs:
  xs: {required: true, schema: {type: array, items: {type: integer}}}
capabilities: [text]
messages:
  - role: user
    content:
      - kind: for_each
        collection: {kind: ref, path: inputs.xs}
        item: a
        body:
          - kind: for_each
            collection: {kind: ref, path: inputs.xs}
            item: b
            body:
              - kind: for_each
                collection: {kind: ref, path: inputs.xs}
                item: c
                body: []
output_schema: {type: string}
"""


@pytest.fixture(scope="module", autouse=True)
def _figures() -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "heavy render_contract calls cancelled", ">=", CALLS)
    figures.expect(SUITE, "median ping after the cancellations", "<=", PING_S, " s")
    figures.expect(SUITE, "slowest ping after the cancellations", "<=", PING_MAX_S, " s")
    figures.expect(SUITE, "other calls answered normally", ">=", 3)
    figures.expect(SUITE, "server CPU time in 2 s once settled", "<=", IDLE_CPU_S, " s")
    figures.expect(SUITE, "cancelled calls answered", "==", 0)
    figures.expect(SUITE, "server tracebacks", "==", 0)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _ping(pipe: McpPipe) -> float:
    sent = time.monotonic()
    answer = pipe.wait_for(pipe.request("ping"), 60)
    assert answer is not None
    assert answer.get("result") == {}
    return time.monotonic() - sent


def _ok(pipe: McpPipe, name: str, arguments: dict[str, object]) -> bool:
    answer = pipe.call(name, arguments, 60)
    assert answer is not None, f"{name}: no answer"
    return bool(answer["result"]["structuredContent"]["ok"])


def test_cancelled_heavy_calls_leave_a_responsive_server(tmp_path: Path) -> None:
    figures = kit.FIGURES
    root = tmp_path / "root"
    root.mkdir()
    pipe = start(root, {}, tmp_path)
    try:
        for index in range(PACKAGES + 1):
            assert _ok(pipe, "create_package", {"name": f"p{index:02d}", "version": "0.1.0"})
        for index in range(PACKAGES):
            arguments = {"package": f"p{index:02d}", "contract": "loops", "source": LOOPS}
            assert _ok(pipe, "put_contract", arguments)
        xs = list(range(1000))  # ~4 KB of arguments: a billion empty iterations each
        calls = [
            pipe.request(
                "tools/call",
                {
                    "name": "render_contract",
                    "arguments": {
                        "package": f"p{index % PACKAGES:02d}",
                        "contract": "loops",
                        "inputs": {"xs": xs},
                        "capabilities": ["text"],
                    },
                },
            )
            for index in range(CALLS)
        ]
        time.sleep(1.0)
        busy = [_ping(pipe) for _ in range(3)]
        figures.peak(
            SUITE, "slowest ping while the 64 calls run (context)", round(max(busy), 3), " s"
        )
        for request_id in calls:
            pipe.send(
                line(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": request_id},
                    }
                )
            )
            figures.add(SUITE, "heavy render_contract calls cancelled")
        time.sleep(SETTLE_S)
        latencies = []
        for _ in range(PINGS):
            latencies.append(_ping(pipe))
            time.sleep(0.02)
        figures.peak(
            SUITE, "median ping after the cancellations", round(statistics.median(latencies), 4)
        )
        figures.peak(SUITE, "slowest ping after the cancellations", round(max(latencies), 4))
        before = _cpu_seconds(pipe.process.pid)
        time.sleep(IDLE_WINDOW_S)
        idle = _cpu_seconds(pipe.process.pid) - before
        figures.peak(SUITE, "server CPU time in 2 s once settled", round(idle, 3))
        answered_normally = [
            _ok(pipe, "discover_packages", {}),
            _ok(
                pipe,
                "compile_contract",
                {
                    "package": "p00",
                    "contract": "loops",
                    "inputs": {"xs": [1, 2]},
                    "capabilities": ["text"],
                },
            ),
            _ok(pipe, "validate_contract", {"package": "p01", "contract": "loops"}),
        ]
        figures.add(SUITE, "other calls answered normally", sum(answered_normally))
        answered = sum(1 for request_id in calls if request_id in pipe.responses)
        figures.add(SUITE, "cancelled calls answered", answered)
    finally:
        pipe.close()
    tracebacks = pipe.stderr.read_text(errors="replace").count("Traceback")
    figures.add(SUITE, "server tracebacks", tracebacks)
    assert all(answered_normally)
    assert answered == 0
    assert tracebacks == 0
    assert statistics.median(latencies) <= PING_S, latencies
    assert max(latencies) <= PING_MAX_S, latencies
    assert idle <= IDLE_CPU_S, f"the server kept working: {idle:.2f} s of CPU in {IDLE_WINDOW_S} s"
