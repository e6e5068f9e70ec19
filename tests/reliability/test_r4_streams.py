"""R4: the live OpenAI adapter's stream fault matrix.

Every fault of the live adapter's proofs (success, tool calls, in-band error, malformed frame,
drop and clean close without ``[DONE]``, deadline, oversize, over-long line, refusal, content
filter, truncation, invalid UTF-8, no choices, unparseable tool arguments, cancellation, HTTP
errors and redirects before the stream, a JSON answer to a streaming request, a silent server)
is served by a loopback HTTP server on 127.0.0.1, its bytes re-split at different boundaries
(one write per frame, the whole body at once, every byte alone, random cut points, cuts inside
multi-byte characters, CRLF line ends split between ``\\r`` and ``\\n``), with chunked or
close-delimited framing, by a fast server and by a slow one. For every case:

* the sink receives exactly one terminal event (``Complete`` or ``Failed``), and it is last;
* ``execute_streaming`` returns the receipt in the ``Complete`` or raises the error in the
  ``Failed``, with the fault's stable code;
* the call returns within two seconds (none hangs), and the process's peak memory grows by
  less than :data:`MEMORY_BUDGET_MIB` even when the server sends 100 MB.

A smaller set of faults also goes through ``TempliqxService.execute_contract(stream=True)``.
The live adapter's own per-fault proofs are ``packages/templiqx-runtime-openai/tests``.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit

from templiqx_conformance.loopback import Chunk, LoopbackServer, RecordedRequest, Reply, filler
from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    CompiledMessage,
    Complete,
    Delta,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCallDelta,
)
from templiqx_local import compose
from templiqx_ports import PortError, validate_event_order
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

SUITE = "R4"
HANG_S = 2.0
MEMORY_BUDGET_MIB = 48.0
KEY = "sk-r4-loopback-not-a-secret"
SLOW_S = 0.015

SPLITS = (
    ["frame", "whole", "byte", "random", "utf8", "crlf"]
    if kit.FULL
    else [
        "frame",
        "byte",
        "random",
        "crlf",
    ]
)
RANDOM_REPEATS = kit.scaled(1, 4)
FRAMINGS = ["chunked", "close"] if kit.FULL else ["chunked"]
SPEEDS = ["fast", "slow"]

OK_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["ok"],
}


def _chunk(
    content: str | None = None,
    *,
    role: str | None = None,
    finish: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    refusal: str | None = None,
) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    if refusal is not None:
        delta["refusal"] = refusal
    return {
        "id": "chatcmpl-r4",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE = {
    "id": "chatcmpl-r4",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "choices": [],
    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
}


def _tool(index: int, **parts: str) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index}
    if "id" in parts:
        call.update(id=parts["id"], type="function")
    function = {k: v for k, v in parts.items() if k in ("name", "arguments")}
    if function:
        call["function"] = function
    return call


def _content(*pieces: str) -> list[Any]:
    return [
        _chunk("", role="assistant"),
        *(_chunk(piece) for piece in pieces),
        _chunk(finish="stop"),
        USAGE,
    ]


TEXT = '{"ok": true, "note": "caf\u00e9 \U0001f642 \u2014 na\u00efve"}'


@dataclass
class Fault:
    """One fault: the events served (or a whole reply), settings, and the expected outcome."""

    name: str
    events: list[Any] | None = None
    done: bool = True
    after: str = "finish"
    reply: Callable[[], Reply] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    cancel_after_s: float | None = None
    text: str | None = None
    splittable: bool = True


FAULTS = [
    Fault("success", _content(TEXT[:9], TEXT[9:20], TEXT[20:]), text=TEXT),
    Fault(
        "tool calls",
        [
            _chunk(role="assistant", tool_calls=[_tool(0, id="a", name="lookup", arguments="")]),
            _chunk(tool_calls=[_tool(1, id="b", name="clock", arguments="")]),
            _chunk(tool_calls=[_tool(0, arguments='{"q": "caf\u00e9')]),
            _chunk(tool_calls=[_tool(1, arguments='{"tz": "UTC"}')]),
            _chunk(tool_calls=[_tool(0, arguments='"}')]),
            _chunk(finish="tool_calls"),
            USAGE,
        ],
    ),
    Fault(
        "in-band error",
        [_chunk('{"ok":'), {"error": {"message": "overloaded", "type": "server_error"}}],
        code="TQX_RUNTIME_UNAVAILABLE",
    ),
    Fault("malformed frame", [_chunk('{"ok":'), "{not json"], code="TQX_RUNTIME_INVALID_RESPONSE"),
    Fault(
        "invalid UTF-8 in a frame",
        [_chunk('{"ok":'), b'{"choices": [{"index": 0, "delta": {"content": "\xff\xfe"}}]}'],
        code="TQX_RUNTIME_INVALID_RESPONSE",
    ),
    Fault(
        "drop without [DONE]",
        [_chunk('{"ok":'), _chunk("true}")],
        done=False,
        after="drop",
        code="TQX_RUNTIME_UNAVAILABLE",
    ),
    Fault(
        "clean close without [DONE]",
        [_chunk('{"ok":'), _chunk("true}")],
        done=False,
        code="TQX_RUNTIME_UNAVAILABLE",
    ),
    Fault(
        "deadline mid-stream",
        [_chunk('{"ok":')],
        done=False,
        after="hang",
        settings={"timeout_ms": 300},
        code="TQX_RUNTIME_TIMEOUT",
    ),
    Fault(
        "cancel mid-stream",
        [_chunk('{"ok":')],
        done=False,
        after="hang",
        code="TQX_RUNTIME_CANCELLED",
        cancel_after_s=0.15,
    ),
    Fault(
        "oversize output",
        [_chunk("x" * 600), _chunk("y" * 600)],
        settings={"max_response_bytes": 1000},
        code="TQX_RUNTIME_INVALID_RESPONSE",
    ),
    Fault(
        "over-long line",
        [_chunk("z" * 3000)],
        settings={"max_line_bytes": 1024},
        code="TQX_RUNTIME_INVALID_RESPONSE",
    ),
    Fault(
        "refusal",
        [_chunk(role="assistant", refusal="I can't"), _chunk(finish="stop")],
        code="TQX_RUNTIME_PERMANENT",
    ),
    Fault(
        "content filter",
        [_chunk('{"ok":'), _chunk(finish="content_filter")],
        code="TQX_RUNTIME_PERMANENT",
    ),
    Fault(
        "cut off at length",
        [_chunk('{"ok":'), _chunk(finish="length")],
        code="TQX_RUNTIME_INVALID_RESPONSE",
    ),
    Fault(
        "stream without choices",
        [USAGE, {"choices": []}],
        code="TQX_RUNTIME_INVALID_RESPONSE",
    ),
    Fault(
        "unparseable tool arguments",
        [
            _chunk(tool_calls=[_tool(0, id="c", name="f", arguments='{"broken"')]),
            _chunk(finish="tool_calls"),
        ],
        code="TQX_RUNTIME_INVALID_RESPONSE",
    ),
    Fault(
        "a JSON answer to a streaming request",
        reply=lambda: Reply.json(
            {"choices": [{"index": 0, "message": {"content": '{"ok":true}'}}]}
        ),
        code="TQX_RUNTIME_INVALID_RESPONSE",
        splittable=False,
    ),
    Fault(
        "a redirect",
        reply=lambda: Reply.error(307, headers=[("Location", "http://127.0.0.1:9/elsewhere")]),
        code="TQX_RUNTIME_PERMANENT",
        splittable=False,
    ),
    Fault(
        "HTTP 500 before the stream",
        reply=lambda: Reply.error(500),
        code="TQX_RUNTIME_UNAVAILABLE",
        splittable=False,
    ),
    Fault(
        "HTTP 429 before the stream",
        reply=lambda: Reply.error(429, headers=[("Retry-After", "2")]),
        code="TQX_RUNTIME_RATE_LIMITED",
        splittable=False,
    ),
    Fault(
        "HTTP 400 before the stream",
        reply=lambda: Reply.error(400),
        code="TQX_RUNTIME_PERMANENT",
        splittable=False,
    ),
    Fault(
        "silent server",
        reply=Reply.silence,
        settings={"timeout_ms": 300},
        code="TQX_RUNTIME_TIMEOUT",
        splittable=False,
    ),
    Fault(
        "100 MB line without a newline",
        reply=lambda: Reply.stream(filler(100 * 1024 * 1024, prefix=b"data: ")),
        code="TQX_RUNTIME_INVALID_RESPONSE",
        splittable=False,
    ),
    Fault(
        "100 MB of content frames",
        reply=lambda: Reply.stream(
            (b"data: " + _frame(_chunk("w" * 60_000)) for _ in range(1_700)), framing="chunked"
        ),
        code="TQX_RUNTIME_INVALID_RESPONSE",
        splittable=False,
    ),
    Fault(
        "100 MB of keep-alive comments",
        reply=lambda: Reply.stream(filler(100 * 1024 * 1024, unit=b": keep-alive\n\n")),
        settings={"max_stream_bytes": 16 * 1024 * 1024},
        code="TQX_RUNTIME_INVALID_RESPONSE",
        splittable=False,
    ),
]


def _frame(event: Any) -> bytes:
    if isinstance(event, bytes):
        return event + b"\n\n"
    if isinstance(event, str):
        return event.encode() + b"\n\n"
    return json.dumps(event, ensure_ascii=False).encode() + b"\n\n"


def _frames(fault: Fault, split: str) -> list[bytes]:
    assert fault.events is not None
    events = [*fault.events, "[DONE]"] if fault.done else list(fault.events)
    frames = [b"data: " + _frame(event) for event in events]
    if split == "crlf":
        frames = [frame.replace(b"\n", b"\r\n") for frame in frames]
    return frames


def _cut(body: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p for p in points if 0 < p < len(body)})
    edges = [0, *points, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def _writes(fault: Fault, split: str, rng: random.Random) -> list[bytes]:
    frames = _frames(fault, split)
    body = b"".join(frames)
    if split == "frame":
        return frames
    if split == "whole":
        return [body]
    if split == "byte":
        return [body[i : i + 1] for i in range(len(body))]
    if split == "random":
        return _cut(body, [rng.randrange(1, max(2, len(body))) for _ in range(8)])
    if split == "utf8":  # after the first byte of every multi-byte character
        return _cut(body, [i + 1 for i, byte in enumerate(body) if byte >= 0xC0])
    # crlf: cut between every \r and its \n
    return _cut(body, [i + 1 for i in range(len(body) - 1) if body[i : i + 2] == b"\r\n"])


def _reply(fault: Fault, split: str, framing: str, speed: str, rng: random.Random) -> Reply:
    if fault.reply is not None:
        reply = fault.reply()
        if speed == "slow":
            reply = Reply(
                status=reply.status,
                headers=reply.headers,
                body=reply.body,
                chunks=reply.chunks,
                framing=reply.framing,
                delay_s=SLOW_S,
                after=reply.after,
                silent=reply.silent,
            )
        return reply
    delay = SLOW_S if speed == "slow" else 0.0
    chunks = [Chunk(piece, delay) for piece in _writes(fault, split, rng)]
    return Reply.stream(chunks, framing=framing, after=fault.after)  # type: ignore[arg-type]


def _request() -> ExecutionRequest:
    interaction = CompiledInteraction(
        compiler=COMPILER_ID,
        contract_id="r4",
        contract_version="1.0.0",
        messages=[CompiledMessage(role="user", content="hello")],
        output_schema=OK_SCHEMA,
        required_capabilities=["structured_output"],
        target_capabilities=["structured_output"],
        runtime_policy={},
        extensions={},
    )
    return ExecutionRequest(interaction=interaction, fixture_output=None)


class Sink:
    def __init__(self) -> None:
        self.events: list[StreamEvent] = []

    def __call__(self, event: StreamEvent) -> None:
        self.events.append(event)


@dataclass
class Outcome:
    events: list[StreamEvent]
    receipt: Any = None
    error: BaseException | None = None
    seconds: float = 0.0
    hung: bool = False


def _run(runtime: OpenAIRuntime, cancel_after_s: float | None) -> Outcome:
    sink = Sink()
    cancel = threading.Event()
    outcome = Outcome(sink.events)

    def call() -> None:
        started = time.monotonic()
        try:
            outcome.receipt = runtime.execute_streaming(_request(), sink, cancel=cancel)
        except BaseException as exc:
            outcome.error = exc
        outcome.seconds = time.monotonic() - started

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    if cancel_after_s is not None:
        time.sleep(cancel_after_s)
        cancel.set()
    worker.join(HANG_S)
    if worker.is_alive():
        outcome.hung = True
        cancel.set()  # unstick it so the test can finish
        worker.join(HANG_S)
    return outcome


def _problems(fault: Fault, outcome: Outcome) -> list[str]:
    if outcome.hung:
        return [f"still running after {HANG_S} s"]
    problems = []
    try:
        validate_event_order(outcome.events)
    except Exception as exc:
        problems.append(f"event order: {exc}")
    terminals = [e for e in outcome.events if isinstance(e, (Complete, Failed))]
    if len(terminals) != 1 or terminals[0] is not outcome.events[-1]:
        problems.append(
            f"{len(terminals)} terminal events: {[type(e).__name__ for e in outcome.events]}"
        )
        return problems
    terminal = terminals[0]
    if fault.code is None:
        if outcome.error is not None or not isinstance(terminal, Complete):
            problems.append(f"failed: {outcome.error!r}")
        elif terminal != Complete.of(outcome.receipt):
            problems.append("the Complete event does not carry the returned receipt")
        elif fault.text is not None:
            text = "".join(e.text for e in outcome.events if isinstance(e, Delta))
            if text != fault.text:
                problems.append(f"deltas assemble to {text!r}")
    else:
        error = outcome.error
        if not isinstance(error, PortError):
            problems.append(f"raised {error!r}, expected {fault.code}")
        elif error.code != fault.code or terminal != Failed(code=error.code, message=str(error)):
            problems.append(f"ended with {terminal!r} / {error.code}, expected {fault.code}")
    if KEY in repr(outcome.events) or KEY in str(outcome.error):
        problems.append("the API key appeared in an event or the error")
    return problems


@dataclass
class Holder:
    reply: Reply = field(default_factory=lambda: Reply.error(500))

    def __call__(self, request: RecordedRequest) -> Reply:
        return self.reply


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[LoopbackServer, Holder]]:
    holder = Holder()
    with LoopbackServer(holder) as running:
        yield running, holder


def _cases() -> list[tuple[Fault, str, str, str, int]]:
    cases = []
    for fault in FAULTS:
        for speed in SPEEDS:
            if not fault.splittable:
                cases.append((fault, "-", "-", speed, 0))
                continue
            for split in SPLITS:
                if split == "byte" and speed == "slow":
                    continue  # hundreds of writes times the slow delay: not a fault, a crawl
                for framing in FRAMINGS:
                    repeats = RANDOM_REPEATS if split == "random" else 1
                    cases.extend((fault, split, framing, speed, r) for r in range(repeats))
    return cases


def test_stream_fault_matrix(server: tuple[LoopbackServer, Holder]) -> None:
    figures = kit.FIGURES
    cases = _cases()
    figures.expect(SUITE, "cases (fault x split x framing x speed)", ">=", len(cases))
    figures.expect(SUITE, "cases without exactly one terminal event", "==", 0)
    figures.expect(SUITE, "hangs over 2 s", "==", 0)
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    loopback, holder = server
    problems: list[str] = []
    for fault, split, framing, speed, repeat in cases:
        rng = random.Random(f"{fault.name}/{split}/{framing}/{speed}/{repeat}")
        holder.reply = _reply(fault, split, framing, speed, rng)
        settings = {"timeout_ms": 5_000, **fault.settings}
        runtime = OpenAIRuntime(
            OpenAISettings(base_url=loopback.base_url, api_key=KEY, model="m", **settings)
        )
        with kit.measure_peak() as peak:
            outcome = _run(runtime, fault.cancel_after_s)
        runtime.close()
        figures.add(SUITE, "cases (fault x split x framing x speed)")
        figures.peak(SUITE, "slowest call", round(outcome.seconds, 3), " s")
        if peak.growth_mib is not None:
            figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
            if peak.growth_mib > MEMORY_BUDGET_MIB:
                problems.append(f"{fault.name}: grew {peak.growth_mib:.0f} MiB")
        if outcome.hung:
            figures.add(SUITE, "hangs over 2 s")
        found = _problems(fault, outcome)
        if found and not outcome.hung:
            figures.add(SUITE, "cases without exactly one terminal event")
        problems += [f"{fault.name} / {split} / {framing} / {speed}: {p}" for p in found]
    assert not problems, "\n".join(problems)


SERVICE_FAULTS = [
    f
    for f in FAULTS
    if f.name
    in (
        "success",
        "in-band error",
        "drop without [DONE]",
        "deadline mid-stream",
        "cancel mid-stream",
        "oversize output",
        "HTTP 429 before the stream",
    )
]


def test_stream_faults_through_the_service(
    server: tuple[LoopbackServer, Holder], tmp_path: Path
) -> None:
    """The same faults end the same way when ``execute_contract`` streams through the service."""
    loopback, holder = server
    root = tmp_path / "root"
    kit.fresh_welcome(root)
    contract = root / "welcome" / "contracts" / "r4.yaml"
    contract.write_text(
        "api_version: templiqx/v1alpha1\nid: r4\nversion: 1.0.0\n"
        "messages:\n  - role: user\n    content:\n      - {kind: text, value: hello}\n"
        "capabilities: [structured_output]\n"
        "output_schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}\n",
        encoding="utf-8",
    )
    for fault in SERVICE_FAULTS:
        holder.reply = _reply(fault, "frame", "chunked", "fast", random.Random(0))
        settings = {"timeout_ms": 5_000, **fault.settings}
        runtime = OpenAIRuntime(
            OpenAISettings(base_url=loopback.base_url, api_key=KEY, model="m", **settings)
        )
        service = compose(root, runtime=runtime)
        sink = Sink()
        cancel = threading.Event()
        if fault.cancel_after_s is not None:
            threading.Timer(fault.cancel_after_s, cancel.set).start()
        started = time.monotonic()
        envelope = service.execute_contract(
            "welcome",
            "r4",
            capabilities=["structured_output"],
            stream=True,
            sink=sink,
            cancel=cancel,
        )
        runtime.close()
        kit.FIGURES.add(SUITE, "service-level stream cases")
        assert time.monotonic() - started < HANG_S, fault.name
        assert not kit.envelope_problems(envelope, "execute_contract", forbidden_text=(KEY,))
        terminals = [e for e in sink.events if isinstance(e, (Complete, Failed))]
        assert len(terminals) == 1, (fault.name, sink.events)
        assert terminals[0] is sink.events[-1]
        if fault.code is None:
            assert envelope.ok, envelope.diagnostics
            assert isinstance(envelope.stream_events[-1], Complete)
        else:
            assert [d.code for d in envelope.diagnostics] == [fault.code], fault.name
            assert terminals[0] == Failed(code=fault.code, message=terminals[0].message)
        assert not any(isinstance(e, ToolCallDelta) for e in sink.events)
