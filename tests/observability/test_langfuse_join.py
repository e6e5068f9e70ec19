"""Langfuse over OTLP joins the host's trace (issue #32 item 5): with an SDK set up, the
traces the Langfuse runtime sends carry the trace id of the application's spans."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Telemetry, completion
from templiqx_conformance.loopback import LoopbackServer, Reply
from templiqx_local import compose
from templiqx_runtime_langfuse import ExportMode, LangfuseRuntime, LangfuseSettings
from templiqx_runtime_openai import OpenAISettings

OTLP = "/api/public/otel/v1/traces"


def test_langfuse_spans_share_the_applications_trace(otel: Telemetry, package_root: Path) -> None:
    with LoopbackServer(
        Reply.json(completion('{"ok": true}')), routes={OTLP: Reply.json({})}
    ) as server:
        runtime = LangfuseRuntime(
            OpenAISettings(base_url=server.base_url, api_key="sk-k", model="obs-model"),
            LangfuseSettings(
                host=server.base_url, public_key="pk", secret_key="sk", export=ExportMode.OTLP
            ),
        )
        envelope = compose(package_root, runtime=runtime).execute_contract(
            "obs", "answer", inputs={"question": "q"}
        )
        runtime.close()
        (sent,) = server.requests_to(OTLP)
    assert envelope.ok
    operation = otel.one("templiqx execute_contract")
    call = otel.one("chat obs-model")
    assert call.attributes is not None
    assert call.attributes["gen_ai.response.id"] == "chatcmpl-obs-1"
    spans = json.loads(sent.body)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert {span["traceId"] for span in spans} == {f"{operation.context.trace_id:032x}"}
