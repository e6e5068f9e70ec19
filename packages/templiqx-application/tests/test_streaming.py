"""Acceptance 2: the five streaming conformance cases (conformance.md §2.6), against the mock
directly and through the service; plus live sinks and cancellation."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import (
    DeterministicFakeRuntime,
    TempliqxService,
    bind_arguments,
    operation_spec,
)
from templiqx_contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    CompiledMessage,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCallDelta,
    decode_json,
    fingerprint,
)
from templiqx_local import compose
from templiqx_mock import MOCK_API_VERSION, ScenarioManifest, ScriptedRuntime
from templiqx_ports import (
    EventOrderError,
    RuntimeAdapter,
    RuntimeFailureCode,
    RuntimeFailureError,
    validate_event_order,
)

CAPS = ["structured_output"]

ECHO = """\
api_version: templiqx/v1alpha1
id: echo
version: 1.0.0
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: hello}
output_schema:
  type: object
  additionalProperties: false
  required: [ok]
  properties:
    ok: {type: boolean}
"""


def _events_manifest(**overrides: Any) -> ScenarioManifest:
    data: dict[str, Any] = {
        "api_version": MOCK_API_VERSION,
        "id": "stream-two-deltas",
        "contract": "echo",
        "kind": "happy_path",
        "receipt_payload_policy": "fingerprints_only",
        "events": [
            {"kind": "start", "id": "s1"},
            {"kind": "delta", "id": "d1", "text": "Extracted "},
            {"kind": "delta", "id": "d2", "text": "onboarding facts"},
            {"kind": "end", "id": "e1"},
            {"kind": "finish", "id": "f1", "output": {"ok": True}, "output_schema_valid": True},
        ],
    }
    data.update(overrides)
    return ScenarioManifest.from_json(json.dumps(data))


def _synthetic_request() -> ExecutionRequest:
    return ExecutionRequest(
        interaction=CompiledInteraction(
            compiler="conformance",
            contract_id="bli-61-date-term-extraction",
            contract_version="1.0.0",
            messages=[CompiledMessage(role="user", content="hello")],
            output_schema={"type": "object"},
            required_capabilities=[],
            target_capabilities=[],
            runtime_policy={},
            extensions={},
        ),
        fixture_output={"ok": True},
    )


@pytest.fixture
def echo_root(tmp_path: Path, write_pkg: Callable[..., Path]) -> Path:
    root = tmp_path / "root"
    write_pkg(root, "streams", contracts={"echo": ECHO})
    return root


def _run(service: TempliqxService, **kwargs: Any) -> Any:
    return service.execute_contract(
        "streams", "echo", capabilities=CAPS, fixture_output={"ok": True}, **kwargs
    )


# --- 1. streaming_receipt_matches_non_streaming ----------------------------------------------


def test_mock_streaming_receipt_matches_non_streaming() -> None:
    plain = ScriptedRuntime.from_manifest(_events_manifest()).execute(_synthetic_request())
    events: list[StreamEvent] = []
    streamed = ScriptedRuntime.from_manifest(_events_manifest()).execute_streaming(
        _synthetic_request(), events.append
    )
    assert streamed == plain
    assert [e for e in events if isinstance(e, Delta)] == [
        Delta(text="Extracted "),
        Delta(text="onboarding facts"),
    ]
    assert events[-1] == Complete.of(plain)
    assert plain.request_fingerprint == (
        "6aea6fa72da18ad92ffd9450ddabe3bde318f07f9d4012403117f54755d7649e"
    )
    assert plain.output_fingerprint == fingerprint({"ok": True})


def test_service_streaming_receipt_matches_non_streaming(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    plain = _run(make_service(echo_root, ScriptedRuntime.from_manifest(_events_manifest())))
    live: list[StreamEvent] = []
    streamed = _run(
        make_service(echo_root, ScriptedRuntime.from_manifest(_events_manifest())),
        stream=True,
        sink=live.append,
    )
    assert plain.ok
    assert streamed.ok
    assert streamed.result == plain.result
    assert streamed.fingerprints == plain.fingerprints
    assert set(plain.fingerprints) == {"request", "output"}
    assert [e for e in streamed.stream_events if isinstance(e, Delta)] == [
        Delta(text="Extracted "),
        Delta(text="onboarding facts"),
    ]
    assert streamed.stream_events[-1] == Complete.of(plain.result)
    assert live == streamed.stream_events
    wire = streamed.to_builtins()["stream_events"]
    assert wire[0] == {"kind": "Delta", "text": "Extracted "}
    assert wire[-1]["kind"] == "Complete"
    assert wire[-1]["request_fingerprint"] == plain.fingerprints["request"]


# --- 2. default_streaming_emits_single_complete ----------------------------------------------


class _ExecuteOnly(RuntimeAdapter):
    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="execute-only", version="1", capabilities=CAPS)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(request.fixture_output),
            output=request.fixture_output,
            output_schema_valid=True,
        )


def test_default_streaming_emits_single_complete() -> None:
    for runtime in (_ExecuteOnly(), DeterministicFakeRuntime()):
        events: list[StreamEvent] = []
        receipt = runtime.execute_streaming(_synthetic_request(), events.append)
        assert receipt == runtime.execute(_synthetic_request())
        assert events == [Complete.of(receipt)]


def test_service_default_streaming_emits_single_complete(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    for runtime in (_ExecuteOnly(), None):
        envelope = _run(make_service(echo_root, runtime), stream=True)
        assert envelope.ok
        assert envelope.stream_events == [Complete.of(envelope.result)]


# --- 3. mid_stream_failure_emits_stable_failed_code ------------------------------------------


def test_mock_mid_stream_failure_emits_stable_failed_code() -> None:
    runtime = ScriptedRuntime.failure("mid-stream", RuntimeFailureCode.INVALID_RESPONSE)
    events: list[StreamEvent] = []
    with pytest.raises(RuntimeFailureError) as raised:
        runtime.execute_streaming(_synthetic_request(), events.append)
    assert raised.value.code == "TQX_RUNTIME_INVALID_RESPONSE"
    assert events == [
        Failed(
            code="TQX_RUNTIME_INVALID_RESPONSE",
            message="runtime failure TQX_RUNTIME_INVALID_RESPONSE: "
            "scripted runtime failure: mid-stream",
        )
    ]


def test_service_mid_stream_failure_keeps_its_events(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    live: list[StreamEvent] = []
    streamed = _run(
        make_service(
            echo_root, ScriptedRuntime.failure("mid-stream", RuntimeFailureCode.INVALID_RESPONSE)
        ),
        stream=True,
        sink=live.append,
    )
    plain = _run(
        make_service(
            echo_root, ScriptedRuntime.failure("mid-stream", RuntimeFailureCode.INVALID_RESPONSE)
        )
    )
    assert not streamed.ok
    # The failure envelope of the plain call, plus the events: one Failed with its code.
    assert streamed.stream_events == live
    assert {**streamed.to_builtins(), "stream_events": []} == plain.to_builtins() | {
        "stream_events": []
    }
    assert "result" not in streamed.to_builtins()
    (diagnostic,) = streamed.diagnostics
    assert diagnostic.code == "TQX_RUNTIME_INVALID_RESPONSE"
    assert diagnostic.message == (
        "runtime failure TQX_RUNTIME_INVALID_RESPONSE: scripted runtime failure: mid-stream"
    )
    assert diagnostic.json_pointer == ""
    help_tokens = (diagnostic.help or "").split()
    assert "adapter=templiqx-scripted-runtime" in help_tokens
    assert "scenario=mid-stream" in help_tokens
    assert any(token.startswith("fingerprint=") for token in help_tokens)
    assert [type(e) for e in live] == [Failed]
    assert live[0].code == diagnostic.code


# --- 4. stream_contract_covers_every_variant_and_rejects_invalid_ordering --------------------


def test_stream_contract_covers_every_variant_and_rejects_invalid_ordering() -> None:
    receipt = DeterministicFakeRuntime().execute(_synthetic_request())
    complete = Complete.of(receipt)
    validate_event_order(
        [Delta(text="a"), ToolCallDelta(name="lookup", arguments_fragment="{"), complete]
    )
    validate_event_order([Failed(code="TQX_RUNTIME_TIMEOUT", message="late")])
    for bad in ([complete, Delta(text="a")], [complete, complete], [Delta(text="a")], []):
        with pytest.raises(EventOrderError):
            validate_event_order(bad)


class _BrokenStream(_ExecuteOnly):
    """Streams a delta after its terminal event: the service must not accept that."""

    def execute_streaming(self, request: Any, sink: Any, *, cancel: Any = None) -> Any:
        receipt = self.execute(request)
        sink(Complete.of(receipt))
        sink(Delta(text="late"))
        return receipt


def test_service_rejects_a_stream_that_breaks_the_grammar(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    envelope = _run(make_service(echo_root, _BrokenStream()), stream=True)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_INVALID_RESPONSE"]
    assert envelope.diagnostics[0].json_pointer == "/stream_events"


# --- 5. execute_contract_stream_events_only_when_streaming -----------------------------------


def test_execute_contract_stream_events_only_when_streaming(
    reference: Path, tmp_path: Path
) -> None:
    service = compose(reference, tmp_path / "workspace")
    request = decode_json((reference / "crm3" / "evals" / "bli-61-request.json").read_bytes())
    output = decode_json((reference / "crm3" / "evals" / "bli-61-output.json").read_bytes())
    results = {}
    for stream in (False, True):
        results[stream] = service.execute_contract(
            "crm3",
            "bli-61-date-term-extraction",
            inputs=request["inputs"],
            context=request["context"],
            capabilities=CAPS,
            fixture_output=output,
            stream=stream,
        )
    assert results[False].ok
    assert results[True].ok
    assert "stream_events" not in results[False].to_builtins()
    assert results[True].stream_events
    assert results[False].fingerprints["output"] == results[True].fingerprints["output"]
    assert results[False].fingerprints["request"] == (
        "c18d54797d60a8d3b99306f364fc4048f023911533cd1c39e816e73acc38f0f9"
    )


# --- live sink and cancellation --------------------------------------------------------------


def test_live_sink_sees_each_event_before_the_next_is_produced(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    runtime = ScriptedRuntime.from_manifest(_events_manifest())
    seen: list[tuple[StreamEvent, int]] = []
    envelope = _run(
        make_service(echo_root, runtime),
        stream=True,
        sink=lambda event: seen.append((event, runtime.stats().attempts)),
    )
    # Deltas arrive while the runtime has not executed yet: they are forwarded live.
    assert [attempts for event, attempts in seen if isinstance(event, Delta)] == [0, 0]
    assert [event for event, _ in seen] == envelope.stream_events


def test_a_failing_live_sink_cancels_the_call_and_the_envelope_says_why(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    calls: list[StreamEvent] = []

    def sink(event: StreamEvent) -> None:
        calls.append(event)
        raise BrokenPipeError("reader went away")

    envelope = _run(
        make_service(echo_root, ScriptedRuntime.from_manifest(_events_manifest())),
        stream=True,
        sink=sink,
    )
    assert not envelope.ok
    assert len(calls) == 1, "a sink that raised is not called again"
    cancelled, warning = envelope.diagnostics
    assert cancelled.code == "TQX_RUNTIME_CANCELLED"
    assert (warning.code, warning.severity) == ("TQX_STREAM_SINK_FAILED", "warning")
    assert "BrokenPipeError" in warning.message
    assert "cancelled" in warning.message
    # The delta the sink saw, then the runtime's Failed with the diagnostic's code.
    assert [type(event) for event in envelope.stream_events] == [Delta, Failed]
    terminal = envelope.stream_events[-1]
    assert isinstance(terminal, Failed)
    assert terminal.code == cancelled.code


def test_cancel_token_reaches_the_runtime(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    cancel = threading.Event()
    runtime = ScriptedRuntime.from_manifest(_events_manifest(), pace_ms=5)

    def sink(event: StreamEvent) -> None:
        if isinstance(event, Delta):
            cancel.set()

    envelope = _run(make_service(echo_root, runtime), stream=True, sink=sink, cancel=cancel)
    assert not envelope.ok
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert runtime.stats().attempts == 0


def test_a_token_set_before_the_call_stops_before_the_runtime(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    cancel = threading.Event()
    cancel.set()
    runtime = ScriptedRuntime.from_manifest(_events_manifest())
    for stream in (False, True):
        envelope = _run(make_service(echo_root, runtime), stream=stream, cancel=cancel)
        assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert runtime.stats().attempts == 0


def test_invoke_forwards_the_live_sink_and_cancel_token(
    echo_root: Path, make_service: Callable[..., TempliqxService]
) -> None:
    service = make_service(echo_root, ScriptedRuntime.from_manifest(_events_manifest()))
    live: list[StreamEvent] = []
    arguments = {
        "package": "streams",
        "contract": "echo",
        "capabilities": CAPS,
        "fixture_output": {"ok": True},
        "stream": True,
    }
    envelope = service.invoke("execute_contract", arguments, sink=live.append)
    assert envelope.ok
    assert live == envelope.stream_events
    cancel = threading.Event()
    cancel.set()
    stopped = service.invoke("execute_contract", arguments, cancel=cancel)
    assert [d.code for d in stopped.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert service.invoke("list_evals", {"package": "streams"}, sink=live.append).ok
    spec = operation_spec("execute_contract")
    assert spec is not None
    bound, _ = bind_arguments(spec, arguments)
    live.clear()
    bound_envelope = service.invoke_bound("execute_contract", bound, sink=live.append)
    assert bound_envelope.to_builtins() == envelope.to_builtins()
    assert live == bound_envelope.stream_events
    assert [
        d.code for d in service.invoke_bound("execute_contract", bound, cancel=cancel).diagnostics
    ] == ["TQX_RUNTIME_CANCELLED"]
