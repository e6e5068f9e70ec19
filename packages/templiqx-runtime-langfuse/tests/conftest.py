"""Fixtures for the Langfuse runtime tests: a loopback model + Langfuse, and the ingestion schema.

The ingestion schema is built from the reference copy of Langfuse's OpenAPI document
(``../shared/reference/langfuse/openapi.yml``): the inline request body of
``POST /api/public/ingestion`` with every ``#/components/schemas/*`` reference pointed at a
``$defs`` copy, and OpenAPI 3.0's ``nullable: true`` rewritten as ``anyOf [..., null]``.

``twin`` runs a test body on both twins of the runtime: the synchronous port, and the native
async one (``aexecute`` and the async port's default projection ``aexecute_streaming``) driven
on one event loop kept for the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml

from templiqx_conformance.loopback import LoopbackServer, Reply, Script
from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    CompiledMessage,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
)
from templiqx_ports import StreamSink
from templiqx_runtime_langfuse import ExportMode, LangfuseRuntime, LangfuseSettings, PayloadPolicy
from templiqx_runtime_openai import OpenAISettings

INGESTION = "/api/public/ingestion"
OTLP = "/api/public/otel/v1/traces"
MODEL_KEY = "sk-canary-model-8e1c55"
PUBLIC_KEY = "pk-lf-canary-31aa07"
SECRET_KEY = "sk-lf-canary-90fd4e"
PROMPT = "PROMPT-TEXT-hello-langfuse"
OUTPUT_MARKER = "OUTPUT-TEXT-marker"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["ok"],
}


def _openapi_to_json_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_openapi_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _openapi_to_json_schema(value) for key, value in node.items()}
    ref = converted.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        converted["$ref"] = "#/$defs/" + ref.rsplit("/", 1)[1]
    if converted.pop("nullable", False) is True:
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


@pytest.fixture(scope="session")
def otlp_validator(reference: Path) -> Any:
    """A jsonschema-rs validator for the OTLP export request body Langfuse declares."""
    document = yaml.safe_load((reference / "langfuse" / "openapi.yml").read_text("utf-8"))
    operation = document["paths"][OTLP]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    schema = _openapi_to_json_schema(body)
    schema["$defs"] = _openapi_to_json_schema(document["components"]["schemas"])
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return jsonschema_rs.validator_for(schema, validate_formats=True)


@pytest.fixture(scope="session")
def ingestion_validator(reference: Path) -> Any:
    """A jsonschema-rs validator for the ingestion request body."""
    document = yaml.safe_load((reference / "langfuse" / "openapi.yml").read_text("utf-8"))
    operation = document["paths"][INGESTION]["post"]
    assert operation["deprecated"] is True  # documented in docs/decisions/live-adapters.md
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    schema = _openapi_to_json_schema(body)
    schema["$defs"] = _openapi_to_json_schema(document["components"]["schemas"])
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return jsonschema_rs.validator_for(schema, validate_formats=True)


def interaction(*, policy: dict[str, Any] | None = None) -> CompiledInteraction:
    return CompiledInteraction(
        compiler=COMPILER_ID,
        contract_id="greeting",
        contract_version="1.2.0",
        messages=[
            CompiledMessage(role="system", content="Answer in JSON."),
            CompiledMessage(role="user", content=PROMPT),
        ],
        output_schema=SCHEMA,
        required_capabilities=["structured_output"],
        target_capabilities=["structured_output"],
        runtime_policy=policy if policy is not None else {"temperature": 0},
        extensions={},
    )


def request(**options: Any) -> ExecutionRequest:
    return ExecutionRequest(interaction=interaction(**options), fixture_output=None)


def completion(content: str, *, usage: bool = True) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage:
        answer["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return answer


def accepted() -> Reply:
    return Reply.json({"successes": [{"id": "a", "status": 201}], "errors": []}, status=207)


@pytest.fixture
def serve() -> Iterator[Callable[..., LoopbackServer]]:
    servers: list[LoopbackServer] = []

    def start(
        model: Script | None = None, ingestion: Script | None = None, otlp: Script | None = None
    ) -> LoopbackServer:
        routes = {
            INGESTION: ingestion if ingestion is not None else accepted(),
            OTLP: otlp if otlp is not None else Reply.json({}),
        }
        server = LoopbackServer(model, routes=routes).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def runtime_for() -> Iterator[Callable[..., LangfuseRuntime]]:
    runtimes: list[LangfuseRuntime] = []

    def build(
        server: Any,
        *,
        policy: PayloadPolicy = PayloadPolicy.FINGERPRINTS_ONLY,
        langfuse_host: str | None = None,
        trace_timeout_ms: int = 2000,
        model_timeout_ms: int = 5000,
        export: ExportMode = ExportMode.INGESTION,
    ) -> LangfuseRuntime:
        runtime = LangfuseRuntime(
            OpenAISettings(
                base_url=server.base_url,
                api_key=MODEL_KEY,
                model="test-model",
                timeout_ms=model_timeout_ms,
            ),
            LangfuseSettings(
                host=langfuse_host or server.base_url,
                public_key=PUBLIC_KEY,
                secret_key=SECRET_KEY,
                payload_policy=policy,
                timeout_ms=trace_timeout_ms,
                export=export,
            ),
        )
        runtimes.append(runtime)
        return runtime

    yield build
    for runtime in runtimes:
        runtime.close()


@pytest.fixture
def lf() -> Any:
    """Builders and constants."""
    from types import SimpleNamespace

    return SimpleNamespace(
        INGESTION=INGESTION,
        OTLP=OTLP,
        MODEL_KEY=MODEL_KEY,
        PUBLIC_KEY=PUBLIC_KEY,
        SECRET_KEY=SECRET_KEY,
        PROMPT=PROMPT,
        OUTPUT_MARKER=OUTPUT_MARKER,
        SCHEMA=SCHEMA,
        interaction=interaction,
        request=request,
        completion=completion,
        accepted=accepted,
    )


class Twin:
    """The sync port, or the async twin driven from the test's thread (see the docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._runner = asyncio.Runner() if name == "async" else None

    def execute(self, runtime: LangfuseRuntime, request: ExecutionRequest) -> ExecutionReceipt:
        if self._runner is None:
            return runtime.execute(request)
        return self._runner.run(runtime.aexecute(request))

    def execute_streaming(
        self, runtime: LangfuseRuntime, request: ExecutionRequest, sink: StreamSink
    ) -> ExecutionReceipt:
        if self._runner is None:
            return runtime.execute_streaming(request, sink)

        async def drive() -> ExecutionReceipt:
            receipt: ExecutionReceipt | None = None
            async for event in runtime.aexecute_streaming(request):
                sink(event)
                if isinstance(event, Complete):
                    receipt = event.receipt
            assert receipt is not None
            return receipt

        return self._runner.run(drive())

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()


@pytest.fixture(params=["sync", "async"])
def twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    driver = Twin(request.param)
    yield driver
    driver.close()
