"""P1: consume a 50,000-delta SSE stream through ``OpenAIRuntime.execute_streaming``.

The stream (about 8 MB, chunked, one HTTP chunk per event) comes from ``sse_server.py`` in its
own process. Three clients read it, interleaved:

* templiqx: ``execute_streaming`` with a sink that appends every event to a list, ending in the
  receipt (output parsed, schema-checked and fingerprinted);
* the official ``openai`` SDK: ``chat.completions.create(stream=True)``, iterating the chunks
  and collecting each delta's content;
* the floor: ``requests`` reading the same response bytes without parsing them.

Before timing, each client's result is checked once: the deltas and the assembled output for
templiqx, the assembled content for the SDK, the byte count and SHA-256 for the raw read.

P1r's target is 1.5 (issue #33). P1g times the same path on a stream four times as long against
this one (``harness.growth``: it fails when the time grows more than 4.6 times) and reports the
ratio to the raw read at both sizes.
"""

from __future__ import annotations

import hashlib
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

import openai
import requests
from harness import (
    BenchmarkError,
    Comparison,
    Settings,
    Side,
    check,
    growth,
    interleave,
    peak_python_memory,
)
from openai.types.chat import ChatCompletionChunk
from sse_server import expected_summary

from templiqx_contracts import (
    CompiledInteraction,
    CompiledMessage,
    Complete,
    Delta,
    ExecutionRequest,
    StreamEvent,
    fingerprint,
)
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

__all__ = ["run"]

DELTAS = 50_000
MODEL = "gpt-4o-mini"
API_KEY = "bench-key"
MESSAGES = [{"role": "user", "content": "Summarise the contract."}]
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["summary"],
    "properties": {"summary": {"type": "string"}},
}


class _Server:
    """``sse_server.py`` as a child process; ``with`` starts it and stops it."""

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas

    def __enter__(self) -> _Server:
        script = Path(__file__).with_name("sse_server.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(self.deltas)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if len(line) != 3:
            self.__exit__()
            raise BenchmarkError("the SSE server did not start")
        self.port = int(line[0])
        self.body_bytes = int(line[1])
        self.body_sha256 = line[2].decode()
        self.base_url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *_: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _interaction() -> CompiledInteraction:
    return CompiledInteraction(
        compiler="templiqx-core/0.2.0",
        contract_id="bench-stream",
        contract_version="1.0.0",
        messages=[CompiledMessage(role="user", content=MESSAGES[0]["content"])],
        output_schema=SCHEMA,
        required_capabilities=["streaming", "structured_output"],
        target_capabilities=["streaming", "structured_output"],
        runtime_policy={},
        extensions={},
    )


class _Clients:
    def __init__(self, server: _Server) -> None:
        self.server = server
        self.runtime = OpenAIRuntime(
            OpenAISettings(
                base_url=server.base_url, api_key=API_KEY, model=MODEL, timeout_ms=600_000
            )
        )
        self.request = ExecutionRequest(interaction=_interaction())
        self.sdk = openai.OpenAI(
            base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=600.0
        )
        self.session = requests.Session()
        self.raw_body = (
            b'{"model":"gpt-4o-mini","messages":[{"role":"user",'
            b'"content":"Summarise the contract."}],"stream":true}'
        )

    def close(self) -> None:
        self.runtime.close()
        self.sdk.close()
        self.session.close()

    def templiqx(self) -> tuple[Any, list[StreamEvent]]:
        events: list[StreamEvent] = []
        receipt = self.runtime.execute_streaming(self.request, events.append)
        return receipt, events

    def openai_sdk(self) -> str:
        stream = self.sdk.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=True,
        )
        parts: list[str] = []
        for chunk in cast("Iterable[ChatCompletionChunk]", stream):
            for choice in chunk.choices:
                if choice.index == 0 and choice.delta.content:
                    parts.append(choice.delta.content)
        return "".join(parts)

    def raw(self, keep: bool = False) -> tuple[int, bytes]:
        kept: list[bytes] = []
        total = 0
        with self.session.post(
            self.server.base_url + "/chat/completions",
            data=self.raw_body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"},
            stream=True,
        ) as response:
            response.raise_for_status()
            for piece in response.iter_content(65536):
                total += len(piece)
                if keep:
                    kept.append(piece)
        return total, b"".join(kept)


def _verify(clients: _Clients, deltas: int) -> None:
    summary = expected_summary(deltas)
    content = '{"summary": "' + summary + '"}'

    receipt, events = clients.templiqx()
    check(
        receipt.output == {"summary": summary} and receipt.output_schema_valid,
        "execute_streaming assembled the wrong output",
    )
    check(receipt.output_fingerprint == fingerprint({"summary": summary}), "wrong fingerprint")
    texts = [event.text for event in events[:-1] if isinstance(event, Delta)]
    check(
        len(texts) == deltas and len(events) == deltas + 1, f"expected {deltas} deltas + Complete"
    )
    check("".join(texts) == content, "the deltas do not add up to the streamed content")
    check(
        isinstance(events[-1], Complete) and events[-1].receipt == receipt,
        "the stream did not end in Complete(receipt)",
    )
    check(
        clients.runtime.execute(clients.request) == receipt,
        "the streamed receipt differs from the non-streamed one",
    )

    check(clients.openai_sdk() == content, "the openai SDK assembled different content")

    total, data = clients.raw(keep=True)
    check(
        total == clients.server.body_bytes
        and hashlib.sha256(data).hexdigest() == clients.server.body_sha256,
        "the raw read did not receive the stream's bytes",
    )


def run(settings: Settings) -> list[Comparison]:
    deltas = 5_000 if settings.quick else DELTAS
    vs_sdk = Comparison(
        id="P1",
        what=f"execute_streaming, {deltas:,}-delta SSE stream",
        baseline="openai SDK, same stream",
        target=0.05,
    )
    vs_raw = Comparison(
        id="P1r",
        what="execute_streaming, same stream",
        baseline="requests raw read (floor)",
        target=1.5,
    )
    with _Server(deltas) as server:
        clients = _Clients(server)
        try:
            _verify(clients, deltas)
            vs_sdk.metrics["stream_bytes"] = server.body_bytes
            ours = Side("templiqx", clients.templiqx)
            raw = Side("requests", clients.raw)
            a, b, ratios = interleave(ours, raw, rounds=settings.rounds(11, 3))
            vs_raw.record(a, b, ratios)
            sdk = Side("openai", clients.openai_sdk)
            a, b, ratios = interleave(ours, sdk, rounds=settings.rounds(3, 1), warmup=0)
            vs_sdk.record(a, b, ratios)
            vs_sdk.subject_peak_memory = vs_raw.subject_peak_memory = peak_python_memory(
                clients.templiqx
            )
            vs_raw.baseline_peak_memory = peak_python_memory(clients.raw)
        finally:
            clients.close()
    # The SDK under tracemalloc is several times slower still: its peak heap is taken on a
    # stream a tenth as long, so the row says so.
    with _Server(deltas // 10) as small:
        clients = _Clients(small)
        try:
            vs_sdk.baseline_peak_memory = peak_python_memory(clients.openai_sdk)
            vs_sdk.metrics["sdk_peak_memory_stream_deltas"] = deltas // 10
            vs_sdk.metrics["templiqx_peak_memory_on_that_stream"] = peak_python_memory(
                clients.templiqx
            )
        finally:
            clients.close()
    return [vs_sdk, vs_raw, _growth(settings, deltas, vs_raw.ratio)]


def _growth(settings: Settings, deltas: int, ratio_x1: float | None) -> Comparison:
    """P1g (issue #33): the same stream four times as long; the cost must grow with the input,
    and the ratio to the raw read is reported at both sizes."""
    with _Server(deltas) as small, _Server(4 * deltas) as large:
        one, four = _Clients(small), _Clients(large)
        try:
            _verify_streams(four, 4 * deltas)
            row = growth(
                "P1g",
                f"execute_streaming, {4 * deltas:,}-delta stream (4x)",
                Side("1x", one.templiqx),
                Side("4x", four.templiqx),
                factor=4,
                rounds=settings.rounds(7, 2),
            )
            _, _, ratios = interleave(
                Side("templiqx", four.templiqx),
                Side("requests", four.raw),
                rounds=settings.rounds(5, 2),
            )
            row.metrics["stream_bytes_x4"] = large.body_bytes
            row.metrics["ratio_to_raw_read_x1"] = None if ratio_x1 is None else round(ratio_x1, 3)
            row.metrics["ratio_to_raw_read_x4"] = round(statistics.median(ratios), 3)
        finally:
            one.close()
            four.close()
    return row


def _verify_streams(clients: _Clients, deltas: int) -> None:
    """The long stream's receipt and deltas, and the raw read's bytes (as :func:`_verify`)."""
    receipt, events = clients.templiqx()
    check(
        receipt.output == {"summary": expected_summary(deltas)}
        and len(events) == deltas + 1
        and isinstance(events[-1], Complete)
        and events[-1].receipt == receipt,
        "execute_streaming assembled the long stream wrongly",
    )
    total, data = clients.raw(keep=True)
    check(
        total == clients.server.body_bytes
        and hashlib.sha256(data).hexdigest() == clients.server.body_sha256,
        "the raw read did not receive the long stream's bytes",
    )


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """Three ``execute_streaming`` runs against a server that stays up while profiling."""
    server = _Server(5_000 if settings.quick else DELTAS).__enter__()
    clients = _Clients(server)

    def profile() -> None:
        try:
            for _ in range(3):
                clients.templiqx()
        finally:
            clients.close()
            server.__exit__()

    return profile
