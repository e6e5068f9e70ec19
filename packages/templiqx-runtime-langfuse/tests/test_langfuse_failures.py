"""The Langfuse adapter's failure table (adapters.md §4.5) on both port methods.

``execute_streaming`` keeps the port's default projection, so every row must raise the very
failure ``execute`` raises — attributed to ``templiqx-runtime-langfuse`` — and emit exactly one
``Failed`` equal to it. Each call still sends its best-effort failure trace, which carries the
code as its status. Every row runs on both twins (``twin``): the async one awaits the model
call and the trace on the event loop.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply
from templiqx_contracts import Failed
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_langfuse import LangfuseRuntime

from .conftest import Twin

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., LangfuseRuntime]

MARKER = "PROVIDER-TEXT-shown-in-messages-never-in-traces"
LIMIT = 2_097_152

RATE_LIMITED = RuntimeFailureCode.RATE_LIMITED
UNAVAILABLE = RuntimeFailureCode.UNAVAILABLE
PERMANENT = RuntimeFailureCode.PERMANENT
TIMEOUT = RuntimeFailureCode.TIMEOUT
INVALID = RuntimeFailureCode.INVALID_RESPONSE


def _leaky(status: int, *headers: tuple[str, str]) -> Reply:
    return Reply.error(status, headers=headers, body={"error": {"message": MARKER}})


def _message(**message: Any) -> Reply:
    return Reply.json({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


# case: (model reply or None for a closed port, code, retry_after_ms, detail, model_timeout_ms)
CASES: dict[str, tuple[Reply | None, RuntimeFailureCode, int | None, str, int]] = {
    "429_x_retry_after_ms": (
        _leaky(429, ("x-retry-after-ms", "1500"), ("Retry-After", "9")),
        RATE_LIMITED,
        1500,
        "model server returned HTTP 429",
        5000,
    ),
    "429_retry_after_seconds": (
        _leaky(429, ("Retry-After", "3")),
        RATE_LIMITED,
        3000,
        "model server returned HTTP 429",
        5000,
    ),
    "503": (
        _leaky(503, ("Retry-After", "3")),
        UNAVAILABLE,
        3000,
        "model server returned HTTP 503",
        5000,
    ),
    "400": (_leaky(400), PERMANENT, None, "model server returned HTTP 400", 5000),
    "connect_refused": (None, UNAVAILABLE, None, "could not connect to the model server", 5000),
    "deadline": (Reply.silence(), TIMEOUT, None, "model request exceeded the 300 ms deadline", 300),
    "truncated_body": (
        Reply(body=b"{", headers=[("Content-Type", "application/json")]),
        INVALID,
        None,
        "model response was not a valid chat completion",
        5000,
    ),
    "no_choices": (
        Reply.json({"choices": []}),
        INVALID,
        None,
        "model response had no choices",
        5000,
    ),
    "content_not_json": (
        _message(content=f"not-json {MARKER}"),
        INVALID,
        None,
        "model output was not valid JSON",
        5000,
    ),
    "unparseable_tool_arguments": (
        _message(
            content=None,
            tool_calls=[
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": MARKER}}
            ],
        ),
        INVALID,
        None,
        "model tool call arguments were not valid JSON",
        5000,
    ),
    "body_over_2_mib": (
        Reply(body=b" " * (LIMIT + 1), headers=[("Content-Type", "application/json")]),
        INVALID,
        None,
        f"model response exceeded {LIMIT} byte limit",
        5000,
    ),
    "refusal": (
        _message(content=None, refusal=MARKER),
        PERMANENT,
        None,
        "the model refused the request",
        5000,
    ),
}


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize("case", list(CASES))
def test_failure_mapping_on_execute_and_the_default_projection(
    twin: Twin, case: str, serve: Serve, runtime_for: RuntimeFor, lf: SimpleNamespace
) -> None:
    reply, code, retry, detail, timeout_ms = CASES[case]
    server = serve([reply, reply] if reply is not None else None)
    model: Any = server if reply is not None else SimpleNamespace(base_url=_closed_port_url())
    runtime = runtime_for(model, langfuse_host=server.base_url, model_timeout_ms=timeout_ms)

    with pytest.raises(RuntimeFailureError) as caught:
        twin.execute(runtime, lf.request())
    plain = caught.value
    events: list[Any] = []
    with pytest.raises(RuntimeFailureError) as caught:
        twin.execute_streaming(runtime, lf.request(), events.append)
    streamed = caught.value

    assert plain.failure == streamed.failure
    failure = plain.failure
    assert failure.code is code
    assert failure.retry_after_ms == retry
    assert failure.detail == detail
    assert failure.adapter_id == "templiqx-runtime-langfuse"
    assert events == [Failed(code=code.value, message=str(streamed))]
    # The server's error message is shown (DECISIONS 20), never in the fingerprinted detail.
    assert MARKER not in failure.detail
    assert (MARKER in str(plain)) is case.startswith(("429", "503", "400"))
    for text in (str(plain), events[0].message):
        for secret in (lf.MODEL_KEY, lf.PUBLIC_KEY, lf.SECRET_KEY):
            assert secret not in text
    traces = server.requests_to(lf.INGESTION)
    assert len(traces) == 2  # one best-effort trace per failed call
    for trace in traces:
        assert trace.json["batch"][1]["body"]["statusMessage"] == code.value
        assert MARKER not in json.dumps(trace.json)
