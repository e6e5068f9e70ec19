"""Fixtures for the OpenAI runtime tests: interactions, wire builders, loopback servers.

Every server is a :class:`templiqx_conformance.loopback.LoopbackServer` on 127.0.0.1 with an
ephemeral port, started by the ``serve`` fixture and stopped at teardown. The kit is a test-only
dependency here (the workspace installs it); the runtime itself never imports it.

The ``twin`` fixture runs one test body against both twins of the runtime (as openai-python's
tests do): the synchronous port (``execute`` / ``execute_streaming``) and the native async one
(``aexecute`` / ``aexecute_streaming``), the latter driven from the test's thread on one event
loop kept for the whole test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from templiqx_conformance.loopback import LoopbackServer, Script
from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    CompiledMessage,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
)
from templiqx_ports import CancelToken, StreamSink
from templiqx_runtime_openai import ChatClient, ChatResult, OpenAIRuntime, OpenAISettings

CANARY_KEY = "sk-canary-openai-4d1f0a9be37c"
"""A model API key that must never appear in any receipt, event, error or log line."""

OK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


def interaction(
    *,
    structured: bool = True,
    schema: Any = None,
    policy: dict[str, Any] | None = None,
    messages: list[tuple[str, str]] | None = None,
) -> CompiledInteraction:
    """A compiled interaction (structured output with ``OK_SCHEMA`` by default)."""
    pairs = messages or [("system", "Answer in JSON."), ("user", "hello")]
    capabilities = ["structured_output"] if structured else []
    return CompiledInteraction(
        compiler=COMPILER_ID,
        contract_id="greeting",
        contract_version="1.0.0",
        messages=[CompiledMessage(role=role, content=content) for role, content in pairs],  # type: ignore[arg-type]
        output_schema=OK_SCHEMA if schema is None else schema,
        required_capabilities=capabilities,
        target_capabilities=capabilities,
        runtime_policy=policy or {},
        extensions={},
    )


def request(**options: Any) -> ExecutionRequest:
    """An execution request around :func:`interaction`."""
    return ExecutionRequest(interaction=interaction(**options), fixture_output=None)


def chunk(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    refusal: str | None = None,
    role: str | None = None,
    index: int = 0,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a single choice."""
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
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1727346176,
        "model": "test-model",
        "system_fingerprint": "fp_test",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def tool(
    index: int, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    """One tool-call fragment of a stream delta."""
    part: dict[str, Any] = {"index": index}
    if id is not None:
        part["id"] = id
        part["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    if function:
        part["function"] = function
    return part


def usage_chunk(prompt: int = 5, completion: int = 7) -> dict[str, Any]:
    """The final usage-only chunk (``stream_options.include_usage``)."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1727346176,
        "model": "test-model",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def content_stream(*fragments: str, finish: str = "stop") -> list[dict[str, Any]]:
    """Role-only chunk, one chunk per fragment, a finish chunk, a usage chunk."""
    return [
        chunk("", role="assistant"),
        *(chunk(fragment) for fragment in fragments),
        chunk(finish=finish),
        usage_chunk(),
    ]


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    refusal: str | None = None,
) -> dict[str, Any]:
    """A non-streamed ``chat.completion``."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1727346176,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def whole_tool_call(id: str, name: str, arguments: str) -> dict[str, Any]:
    """A complete tool call of a non-streamed message."""
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


class Collector:
    """A sink that records events and the thread each was delivered on."""

    def __init__(self, on_event: Callable[[Collector, StreamEvent], None] | None = None) -> None:
        self.events: list[StreamEvent] = []
        self.threads: set[int] = set()
        self._on_event = on_event

    def __call__(self, event: StreamEvent) -> None:
        self.events.append(event)
        self.threads.add(threading.get_ident())
        if self._on_event is not None:
            self._on_event(self, event)

    @property
    def kinds(self) -> list[str]:
        return [type(event).__name__ for event in self.events]


WIRE = SimpleNamespace(
    interaction=interaction,
    request=request,
    chunk=chunk,
    tool=tool,
    usage_chunk=usage_chunk,
    content_stream=content_stream,
    completion=completion,
    whole_tool_call=whole_tool_call,
    Collector=Collector,
    OK_SCHEMA=OK_SCHEMA,
    CANARY_KEY=CANARY_KEY,
)


@pytest.fixture
def wire() -> SimpleNamespace:
    """Builders for interactions, requests, chunks, completions and a collecting sink."""
    return WIRE


@pytest.fixture
def serve() -> Iterator[Callable[..., LoopbackServer]]:
    """Start loopback servers (``serve(script, routes=...)``); all stop at teardown."""
    servers: list[LoopbackServer] = []

    def start(script: Script | None = None, **options: Any) -> LoopbackServer:
        server = LoopbackServer(script, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def runtime_for() -> Iterator[Callable[..., OpenAIRuntime]]:
    """``runtime_for(server, **settings)``: an OpenAIRuntime pointed at a loopback server."""
    runtimes: list[OpenAIRuntime] = []

    def build(server: LoopbackServer, **overrides: Any) -> OpenAIRuntime:
        options: dict[str, Any] = {
            "base_url": server.base_url,
            "api_key": CANARY_KEY,
            "model": "test-model",
            "timeout_ms": 5000,
        }
        options.update(overrides)
        runtime = OpenAIRuntime(OpenAISettings(**options))
        runtimes.append(runtime)
        return runtime

    yield build
    for runtime in runtimes:
        runtime.close()


T = TypeVar("T")


class Twin:
    """One twin of the runtime behind the synchronous call shapes the tests are written in.

    ``sync`` calls the port's methods. ``async`` awaits ``aexecute`` / drives
    ``aexecute_streaming`` (and the client's ``acomplete``) on an event loop that lives as long
    as the test, so connection reuse spans calls as it does in a host; events go to the sink on
    the test's thread as they arrive; a failure is the ``Failed`` event, then the raised error;
    a sink that raises closes the iterator (cancelling the call) and propagates.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._runner = asyncio.Runner() if name == "async" else None

    def __repr__(self) -> str:
        return f"Twin({self.name})"

    @property
    def is_async(self) -> bool:
        return self._runner is not None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the twin's event loop (async twin only)."""
        assert self._runner is not None
        return self._runner.run(coroutine)

    def execute(self, runtime: OpenAIRuntime, request: ExecutionRequest) -> ExecutionReceipt:
        if self._runner is None:
            return runtime.execute(request)
        return self.run(runtime.aexecute(request))

    def execute_streaming(
        self,
        runtime: OpenAIRuntime,
        request: ExecutionRequest,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ExecutionReceipt:
        if self._runner is None:
            return runtime.execute_streaming(request, sink, cancel=cancel)
        return self.run(self._drive(runtime, request, sink, cancel))

    @staticmethod
    async def _drive(
        runtime: OpenAIRuntime,
        request: ExecutionRequest,
        sink: StreamSink,
        cancel: CancelToken | None,
    ) -> ExecutionReceipt:
        events = runtime.aexecute_streaming(request, cancel=cancel)
        receipt: ExecutionReceipt | None = None
        try:
            async for event in events:
                sink(event)
                if isinstance(event, Complete):
                    receipt = event.receipt
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        assert receipt is not None, "the stream ended without a terminal event"
        return receipt

    def complete(
        self,
        client: ChatClient,
        interaction: CompiledInteraction,
        *,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        if self._runner is None:
            return client.complete(interaction, cancel=cancel)
        return self.run(client.acomplete(interaction, cancel=cancel))

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()


@pytest.fixture(params=["sync", "async"])
def twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    """Each of the runtime's twins in turn (see :class:`Twin`)."""
    driver = Twin(request.param)
    yield driver
    driver.close()
