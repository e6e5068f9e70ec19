"""P7: 100 sequential streamed calls, each a short answer, on one client that keeps its connection.

A chat application streams many short answers one after another; what each costs beyond
reading its events is the per-call work (building the request, the HTTP exchange, the receipt)
and, against an HTTPS provider, a TLS handshake whenever a connection is not reused. Both
clients call the loopback server of ``sse_server.py`` (its own process) in keep-alive mode, which
keeps a connection open as long as the client does and counts the connections it accepts:

* templiqx: one ``OpenAIRuntime``, ``execute_streaming`` 100 times, each ending in a receipt
  (output parsed, schema-checked and fingerprinted);
* the official ``openai`` SDK: one client, ``chat.completions.create(stream=True)`` 100 times,
  collecting each delta's content.

Each answer is a structured one of 200 content deltas (about 37 kB of events). Before timing,
each client's first call is checked (the assembled output and its fingerprint, the deltas, the
terminal event; the SDK's content) and every call of a checking pass of 100 returns the same
receipt. The connections each client opens for 100 calls are counted by the server and reported:
0 means the client kept the connection of its previous call throughout, 100 that it opened one
per call. The ratio is reported, without a target; peak memory is the Python heap of one call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import cast

import openai
from harness import (
    BenchmarkError,
    Comparison,
    Settings,
    Side,
    check,
    interleave,
    peak_python_memory,
)
from openai.types.chat import ChatCompletionChunk
from sse_server import LoopbackServer, expected_summary

from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    fingerprint,
)
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

__all__ = ["run"]

CALLS = 100
DELTAS = 200
MODEL = "gpt-4o-mini"
API_KEY = "bench-key"
PROMPT = "Summarise the contract."
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["summary"],
    "properties": {"summary": {"type": "string"}},
}


def _request() -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="templiqx-core/0.2.0",
            contract_id="bench-sequential",
            contract_version="1.0.0",
            messages=[CompiledMessage(role="user", content=PROMPT)],
            output_schema=SCHEMA,
            required_capabilities=["streaming", "structured_output"],
            target_capabilities=["streaming", "structured_output"],
            runtime_policy={},
            extensions={},
        )
    )


class _Clients:
    """One templiqx runtime and one SDK client against ``server``, each reused for every call."""

    def __init__(self, server: LoopbackServer) -> None:
        settings = OpenAISettings(
            base_url=server.base_url, api_key=API_KEY, model=MODEL, timeout_ms=60_000
        )
        self.runtime = OpenAIRuntime(settings)
        self.request = _request()
        self.sdk = openai.OpenAI(
            base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=60.0
        )

    def close(self) -> None:
        self.runtime.close()
        self.sdk.close()

    def templiqx_once(self) -> tuple[ExecutionReceipt, list[StreamEvent]]:
        events: list[StreamEvent] = []
        receipt = self.runtime.execute_streaming(self.request, events.append)
        return receipt, events

    def sdk_once(self) -> str:
        stream = self.sdk.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
        )
        parts: list[str] = []
        for chunk in cast("Iterable[ChatCompletionChunk]", stream):
            for choice in chunk.choices:
                if choice.index == 0 and choice.delta.content:
                    parts.append(choice.delta.content)
        return "".join(parts)

    def templiqx_calls(self) -> list[ExecutionReceipt]:
        return [self.templiqx_once()[0] for _ in range(CALLS)]

    def sdk_calls(self) -> list[str]:
        return [self.sdk_once() for _ in range(CALLS)]


def _verify(clients: _Clients) -> None:
    """Check one call of each client."""
    summary = expected_summary(DELTAS)
    content = '{"summary": "' + summary + '"}'
    receipt, events = clients.templiqx_once()
    check(
        receipt.output == {"summary": summary} and receipt.output_schema_valid,
        "execute_streaming assembled the wrong output",
    )
    check(receipt.output_fingerprint == fingerprint({"summary": summary}), "wrong fingerprint")
    texts = [event.text for event in events if isinstance(event, Delta)]
    check(
        len(texts) == DELTAS and "".join(texts) == content,
        f"expected {DELTAS} deltas adding up to the content",
    )
    check(
        isinstance(events[-1], Complete) and events[-1].receipt == receipt,
        "the stream did not end in Complete(receipt)",
    )
    check(clients.sdk_once() == content, "the openai SDK assembled different content")


def _connections(server: LoopbackServer, calls: Callable[[], Sequence[object]]) -> int:
    """The connections one pass of 100 calls opens (checking that every call was answered)."""
    before_connections, before_requests = server.stats()
    results = calls()
    after_connections, after_requests = server.stats()
    requests = after_requests - before_requests
    if requests != CALLS:
        raise BenchmarkError(f"the server answered {requests} requests for {CALLS} calls")
    check(len(set(map(repr, results))) == 1, "the calls of one pass returned different results")
    return after_connections - before_connections


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P7",
        what=f"{CALLS} sequential execute_streaming calls ({DELTAS} deltas each)",
        baseline="openai SDK, one client",
        target=None,
    )
    with LoopbackServer(DELTAS, keep_alive=True) as server:
        clients = _Clients(server)
        try:
            _verify(clients)
            # A fresh pass on each client (their first call above opened their connection):
            # how many connections 100 more calls open.
            ours = _connections(server, clients.templiqx_calls)
            theirs = _connections(server, clients.sdk_calls)
            row.metrics["templiqx_connections_per_100_calls"] = ours
            row.metrics["sdk_connections_per_100_calls"] = theirs
            row.metrics["events_bytes_per_call"] = server.body_bytes
            a, b, ratios = interleave(
                Side("templiqx", clients.templiqx_calls, ops=CALLS),
                Side("openai", clients.sdk_calls, ops=CALLS),
                rounds=settings.rounds(7, 2),
                warmup=0,
            )
            row.record(a, b, ratios)
            row.subject_peak_memory = peak_python_memory(clients.templiqx_once)
            row.baseline_peak_memory = peak_python_memory(clients.sdk_once)
        finally:
            clients.close()
    return [row]


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """100 calls of ``execute_streaming`` against a server that stays up while profiling."""
    server = LoopbackServer(DELTAS, keep_alive=True).__enter__()
    clients = _Clients(server)

    def profile() -> None:
        try:
            clients.templiqx_calls()
        finally:
            clients.close()
            server.__exit__()

    return profile
