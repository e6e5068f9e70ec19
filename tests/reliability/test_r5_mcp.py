"""R5: the MCP server survives hostile input on stdin and keeps answering.

``python -m templiqx_mcp ROOT`` runs as a subprocess driven over raw pipes (no client library,
so anything can be sent). After the ``initialize`` handshake it receives ``MESSAGES`` lines from
a seeded generator: malformed JSON, invalid UTF-8, JSON that is not JSON-RPC, wrong ids and
params, batches, stray responses, unknown methods and notifications, known methods with
wrong params, huge lines (up to 16 MB), valid tool calls with hostile arguments, and streamed
executions interleaved with ``notifications/cancelled`` (for in-flight, finished, unknown and
duplicate ids). Every ``PING_EVERY`` messages a ``ping`` must be answered within
:data:`ANSWER_S`; every valid request that was not cancelled must be answered; every line the
server writes must be a JSON-RPC message; its open file descriptors must not grow; it must
write no traceback and exit 0 when stdin closes.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit
from mcp_pipe import McpPipe, line, start

SUITE = "R5"
MESSAGES = kit.scaled(1_000, 10_000)
PING_EVERY = 40
ANSWER_S = 10.0
HUGE_SIZES = [1 << 20, 4 << 20] if not kit.FULL else [1 << 20, 4 << 20, 8 << 20, 16 << 20]
FD_SLACK = 2
SCENARIO = "scenarios/stream-vip/manifest.json"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[McpPipe]:
    root = tmp_path / "root"
    kit.fresh_welcome(root)
    env = {
        "TEMPLIQX_RUNTIME": "mock",
        "TEMPLIQX_MOCK_SCENARIO": str(root / "welcome" / SCENARIO),
        "TEMPLIQX_MOCK_PACE_MS": "15",
    }
    running = start(root, env, tmp_path)
    try:
        yield running
    finally:
        running.close(2.0)


# --- the hostile generator --------------------------------------------------------------------

MALFORMED = [
    b"{",
    b"}",
    b"[1, 2",
    b"not json",
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
    b"\x00\x00\x00",
    b"\xff\xfe\xfd",
    b"\xef\xbb\xbf{}",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}}',
    b"\r",
    b"",
    b"   ",
    b"NaN",
    b'{"a": NaN}',
    b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    b'"\\ud800"',
    b"\x1b[2J",
]
NOT_RPC: list[Any] = [
    [],
    1,
    "x",
    None,
    True,
    {},
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0"},
    {"jsonrpc": "2.0", "id": 1},
    {"jsonrpc": "2.0", "id": {"nested": [1]}, "method": "ping"},
    {"jsonrpc": "2.0", "id": [1], "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": 7},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"},
    [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}],
    {"jsonrpc": "2.0", "id": 424242, "result": {}},
    {"jsonrpc": "2.0", "id": 424243, "error": {"code": 1, "message": "x"}},
    {"jsonrpc": "2.0", "method": "notifications/unknown", "params": {"x": 1}},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}},
]


def _unknown(server: McpPipe, rng: random.Random) -> bytes:
    server.next_id += 1
    method = rng.choice(["nope", "tools/nope", "resources/subscribe", "x" * 500, "", "../../"])
    return line({"jsonrpc": "2.0", "id": server.next_id, "method": method})


def _wrong_params(server: McpPipe, rng: random.Random) -> bytes:
    server.next_id += 1
    method, params = rng.choice(
        [
            ("tools/call", {}),
            ("tools/call", {"name": 7}),
            ("tools/call", {"name": "catalog", "arguments": []}),
            ("tools/call", {"name": "catalog", "arguments": "x"}),
            ("tools/call", {"name": "no_such_tool"}),
            ("tools/call", {"name": "inspect_contract", "arguments": {"package": 1}}),
            (
                "tools/call",
                {"name": "read_artifact", "arguments": {"package": "../x", "path": "/"}},
            ),
            ("resources/read", {"uri": "file:///etc/passwd"}),
            ("resources/read", {"uri": 5}),
            ("prompts/get", {"name": "nope"}),
            ("prompts/get", {}),
            ("initialize", {"protocolVersion": 1}),
            ("tools/list", {"cursor": {"x": 1}}),
        ]
    )
    return line({"jsonrpc": "2.0", "id": server.next_id, "method": method, "params": params})


def _huge(size: int, rng: random.Random) -> bytes:
    kind = rng.randrange(3)
    if kind == 0:
        return b"x" * size  # not JSON at all
    if kind == 1:  # a valid call whose argument is far beyond the service's argument limit
        call = {
            "jsonrpc": "2.0",
            "id": 9_000_000 + size,
            "method": "tools/call",
            "params": {"name": "compile_contract", "arguments": {"package": "p" * size}},
        }
        return line(call)
    return b'{"jsonrpc":"2.0","method":"notifications/x","params":{"s":"' + b"y" * size + b'"}}'


@dataclass
class Tally:
    sent: int = 0
    expected: set[int] = field(default_factory=set)
    cancelled: set[int] = field(default_factory=set)
    in_flight: list[int] = field(default_factory=list)


def _valid_call(server: McpPipe, rng: random.Random, tally: Tally) -> bytes:
    server.next_id += 1
    name, arguments = rng.choice(
        [
            ("catalog", {}),
            ("discover_packages", {}),
            ("inspect_contract", {"package": "welcome", "contract": "account-digest"}),
            ("validate_contract", {"package": "welcome", "contract": "\u202e../x"}),
            (
                "compile_contract",
                {
                    "package": "welcome",
                    "contract": "account-digest",
                    "inputs": {"account": "\x00\ud7ff", "open_tickets": -1},
                },
            ),
            ("list_workspace_artifacts", {"package": "welcome"}),
        ]
    )
    tally.expected.add(server.next_id)
    return line(
        {
            "jsonrpc": "2.0",
            "id": server.next_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


def _streamed_call(server: McpPipe, tally: Tally) -> bytes:
    server.next_id += 1
    request = json.loads((kit.WELCOME / "scenarios" / "stream-vip" / "request.json").read_text())
    tally.in_flight.append(server.next_id)
    tally.expected.add(server.next_id)
    return line(
        {
            "jsonrpc": "2.0",
            "id": server.next_id,
            "method": "tools/call",
            "params": {
                "name": "execute_contract",
                "arguments": {
                    "package": "welcome",
                    "contract": "onboarding-summary",
                    **request,
                    "capabilities": ["structured_output"],
                    "stream": True,
                },
                "_meta": {"progressToken": f"p{server.next_id}"},
            },
        }
    )


def _cancel(server: McpPipe, rng: random.Random, tally: Tally) -> bytes:
    choice = rng.randrange(4)
    if choice == 0 and tally.in_flight:
        target: Any = tally.in_flight.pop(rng.randrange(len(tally.in_flight)))
        tally.cancelled.add(target)  # may or may not be answered: both are fine
    elif choice == 1:  # an earlier call, finished or not: it may now go unanswered
        target = rng.choice(sorted(tally.expected)) if tally.expected else 1
        tally.cancelled.add(target)
    elif choice == 2:
        target = rng.choice([999_999_999, "no-such-id", None, {"x": 1}])
    else:
        target = server.next_id + 5  # a request that has not been sent yet
    kit.FIGURES.add(SUITE, "cancel notifications sent")
    params: dict[str, Any] = {"requestId": target, "reason": "r5"}
    return line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})


def _message(server: McpPipe, rng: random.Random, tally: Tally, huge: list[int]) -> bytes:
    roll = rng.random()
    if huge and roll < 0.002:
        return _huge(huge.pop(), rng)
    if roll < 0.25:
        return rng.choice(MALFORMED) + rng.choice([b"\n", b"\r\n"])
    if roll < 0.45:
        return line(rng.choice(NOT_RPC))
    if roll < 0.55:
        return _unknown(server, rng)
    if roll < 0.70:
        return _wrong_params(server, rng)
    if roll < 0.80:
        return _valid_call(server, rng, tally)
    if roll < 0.85:
        return _streamed_call(server, tally)
    return _cancel(server, rng, tally)


def test_hostile_stdin_never_stops_the_server(server: McpPipe) -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "messages sent", ">=", MESSAGES)
    figures.expect(SUITE, "valid calls unanswered", "==", 0)
    figures.expect(SUITE, "non-JSON-RPC output lines", "==", 0)
    figures.expect(SUITE, "file descriptors leaked", "<=", 0)
    figures.expect(SUITE, "server tracebacks", "==", 0)
    rng = random.Random(5)
    tally = Tally()
    huge = list(HUGE_SIZES)
    rng.shuffle(huge)
    baseline: int | None = None
    peak_fds = 0
    while tally.sent < MESSAGES:
        server.send(_message(server, rng, tally, huge))
        tally.sent += 1
        figures.add(SUITE, "messages sent")
        if tally.sent % PING_EVERY == 0:
            ping = server.request("ping")
            figures.add(SUITE, "valid calls checked")
            if server.wait_for(ping, ANSWER_S) is None:
                figures.add(SUITE, "valid calls unanswered")
                pytest.fail(f"no answer to ping {ping} after {tally.sent} messages")
            fds = server.fds()
            peak_fds = max(peak_fds, fds)
            if baseline is None and tally.sent >= 200:
                baseline = fds
    for size in huge:  # any huge line the random walk did not reach is sent now
        server.send(_huge(size, rng))
        figures.add(SUITE, "messages sent")
    figures.add(SUITE, "huge lines sent", len(HUGE_SIZES))

    unanswered = [
        request_id
        for request_id in sorted(tally.expected - tally.cancelled)
        if server.wait_for(request_id, ANSWER_S) is None
    ]
    figures.add(SUITE, "valid calls checked", len(tally.expected - tally.cancelled))
    figures.add(SUITE, "valid calls unanswered", len(unanswered))
    stopped = [i for i in tally.cancelled if i not in server.responses]
    figures.add(SUITE, "in-flight calls cancelled (no answer, as allowed)", len(stopped))
    figures.add(SUITE, "progress notifications received", server.notifications)
    catalog = server.request("tools/call", {"name": "catalog", "arguments": {}})
    answer = server.wait_for(catalog)
    assert answer is not None
    assert answer["result"]["structuredContent"]["ok"] is True
    time.sleep(0.3)  # let cancelled work wind down before counting descriptors
    final_fds = server.fds()
    assert baseline is not None
    figures.add(SUITE, "file descriptors leaked", max(0, final_fds - baseline - FD_SLACK))
    figures.add(SUITE, "non-JSON-RPC output lines", len(server.non_protocol))

    assert server.close() == 0
    errors = server.stderr.read_text("utf-8", "replace")
    figures.add(SUITE, "server tracebacks", errors.count("Traceback"))
    assert not unanswered, f"{len(unanswered)} valid calls never answered: {unanswered[:10]}"
    assert not server.non_protocol, server.non_protocol[:5]
    assert final_fds <= baseline + FD_SLACK, (baseline, peak_fds, final_fds)
    assert "Traceback" not in errors, errors[:2000]
