"""Live Server-Sent Events for ``execute_contract`` (DECISIONS 27).

One event per stream event, in the runtime's order, then the ``envelope``; the events plus the
envelope event rebuild exactly the envelope the same call answers as JSON (success, an answer
the schema refuses after ``Complete``, a runtime failure). A call refused before any model call
is an ordinary JSON 4xx. The deadline and a draining server still end the stream properly.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from templiqx_application import CHANGE_BYTES_ALLOWANCE, CHANGE_BYTES_PER_ANSWER_BYTE
from templiqx_contracts import (
    MISSING,
    AdapterDescriptor,
    Complete,
    Delta,
    Failed,
    ToolCallDelta,
    apply_partial_changes,
    decode_partial_changes,
)
from templiqx_http import (
    HttpSettings,
    SseDecoder,
    SseMessage,
    envelope_sse,
    partial_value,
    rebuild_envelope,
    sse_comment,
    sse_event,
    stream_event_sse,
)
from templiqx_mock import runtime_from_path

ClientFactory = Callable[..., TestClient]
WELCOME = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"
SCENARIO = WELCOME / "scenarios" / "stream-vip"
EXECUTE = "/operations/v1/packages/welcome/contracts/onboarding-summary/execute"
EVENTS = {"accept": "text/event-stream"}


def _values() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
    return data


def _stream(client: TestClient, body: dict[str, Any]) -> tuple[int, str, bytes]:
    with client.stream("POST", EXECUTE, json=body, headers=EVENTS) as response:
        raw = b"".join(response.iter_bytes())
        return response.status_code, response.headers["content-type"], raw


def _messages(raw: bytes) -> list[SseMessage]:
    decoder = SseDecoder()
    messages = decoder.feed(raw)
    assert decoder.feed(b"") == []
    return messages


def _mock(pace_ms: int = 0) -> Any:
    return runtime_from_path(SCENARIO / "manifest.json", pace_ms=pace_ms)


def test_events_arrive_in_order_and_rebuild_the_json_envelope(client_for: ClientFactory) -> None:
    client = client_for(runtime=_mock())
    body = {"render": _values()}
    status, media, raw = _stream(client, body)
    assert (status, media) == (200, "text/event-stream; charset=utf-8")
    messages = _messages(raw)
    events = [message.event for message in messages if message.event != "partial"]
    assert events == ["Delta"] * 18 + ["Complete", "envelope"]
    for message in messages[:-1]:
        if message.event != "partial":
            assert message.json()["kind"] == message.event
    closing = messages[-1].json()
    assert "stream_events" not in closing
    assert closing["ok"] is True
    plain = client.post(EXECUTE, json={**body, "stream": True}).json()
    assert rebuild_envelope(messages) == plain
    text = "".join(m.json()["text"] for m in messages if m.event == "Delta")
    assert json.loads(text) == plain["result"]["output"]


def test_partial_events_carry_what_each_event_changed_and_add_up_to_the_answer(
    client_for: ClientFactory,
) -> None:
    client = client_for(runtime=_mock())
    _, _, raw = _stream(client, {"render": _values()})
    messages = _messages(raw)
    names = [message.event for message in messages]
    for at, name in enumerate(names):
        if name == "partial":  # right after the stream event whose changes it carries
            assert names[at - 1] in ("Delta", "Complete"), names
    answer = messages[-1].json()["result"]["output"]
    value: Any = MISSING
    for at, message in enumerate(messages):  # after each partial: the answer so far
        if message.event == "partial":
            changes = decode_partial_changes(message.data)
            assert changes, "a partial event always carries a change"
            value = apply_partial_changes(value, changes)
            shown = json.dumps(value, ensure_ascii=False)
            text = "".join(m.json()["text"] for m in messages[:at] if m.event == "Delta")
            assert _prefix_of(value, answer), (shown, text)
    assert value == answer == partial_value(messages)
    partial_bytes = sum(len(m.data) for m in messages if m.event == "partial")
    answer_bytes = len(json.dumps(answer, ensure_ascii=False).encode())
    assert partial_bytes <= CHANGE_BYTES_PER_ANSWER_BYTE * answer_bytes + CHANGE_BYTES_ALLOWANCE


def test_partial_events_stay_linear_for_a_long_answer(
    client_for: ClientFactory, tmp_path: Path
) -> None:
    """A 40 KB summary in 4,000 deltas: re-sending the value after each would cost ~80 MB of
    partial events; what each delta changed costs about the answer's size."""
    pieces = [f"word{index:05d} " for index in range(4_000)]
    summary = "".join(pieces)
    output = {"summary": summary, "tone": "warm", "next_steps": ["Plan de kick-off"]}
    texts = ['{"summary": "', *pieces, '", "tone": "warm", "next_steps": ["Plan de kick-off"]}']
    manifest = json.loads((SCENARIO / "manifest.json").read_text(encoding="utf-8"))
    manifest["events"] = [
        {"kind": "start", "id": "start"},
        *({"kind": "delta", "id": f"d{at}", "text": text} for at, text in enumerate(texts)),
        {"kind": "end", "id": "end"},
        {"kind": "finish", "id": "finish", "output": output, "output_schema_valid": True},
    ]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (tmp_path / "request.json").write_text(
        (SCENARIO / "request.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    client = client_for(runtime=runtime_from_path(tmp_path / "manifest.json"))
    status, _, raw = _stream(client, {"render": _values()})
    assert status == 200
    messages = _messages(raw)
    assert messages[-1].json()["ok"] is True, messages[-1].data[:500]
    assert partial_value(messages) == output
    partials = [m for m in messages if m.event == "partial"]
    assert len(partials) > len(pieces)  # one per delta: the view is live, not summed up at the end
    partial_bytes = sum(len(m.data) for m in partials)
    answer_bytes = len(json.dumps(output, ensure_ascii=False).encode())
    assert partial_bytes <= CHANGE_BYTES_PER_ANSWER_BYTE * answer_bytes + CHANGE_BYTES_ALLOWANCE
    # measured: 5.6 bytes of partial events per byte of answer (~56 a delta); a view re-sent
    # whole after each delta would be ~2,000
    assert partial_bytes < 10 * answer_bytes


def _prefix_of(value: Any, answer: Any) -> bool:
    """Whether the value so far only holds what the answer holds (strings as prefixes)."""
    if isinstance(value, dict):
        return isinstance(answer, dict) and all(
            key in answer and _prefix_of(item, answer[key]) for key, item in value.items()
        )
    if isinstance(value, list):
        return isinstance(answer, list) and all(
            _prefix_of(item, other) for item, other in zip(value, answer, strict=False)
        )
    if isinstance(value, str):
        return isinstance(answer, str) and answer.startswith(value)
    return bool(value == answer)


def test_a_text_answer_has_no_partial_events(client: TestClient) -> None:
    path = "/operations/v1/packages/welcome/contracts/account-digest/execute"
    body = {"render": {"inputs": {"account": "acme", "open_tickets": 2}}, "fixture_output": "Hi"}
    with client.stream("POST", path, json=body, headers=EVENTS) as response:
        messages = _messages(b"".join(response.iter_bytes()))
    assert [m.event for m in messages] == ["Complete", "envelope"]
    assert partial_value(messages) is MISSING


def test_complete_then_not_ok_when_the_schema_refuses_the_answer(client: TestClient) -> None:
    body = {"render": _values(), "fixture_output": {"summary": 7}}
    status, _, raw = _stream(client, body)
    assert status == 200
    messages = _messages(raw)
    assert [m.event for m in messages] == ["Complete", "partial", "envelope"]
    assert partial_value(messages) == {"summary": 7}  # the answer, whatever the schema says
    closing = messages[-1].json()
    assert closing["ok"] is False
    codes = {d["code"] for d in closing["diagnostics"]}
    assert codes == {"TQX_OUTPUT_SCHEMA"}
    assert all(d["help"] for d in closing["diagnostics"])  # the actionable lines are streamed
    plain = client.post(EXECUTE, json={**body, "stream": True})
    assert plain.status_code == 422
    assert rebuild_envelope(messages) == plain.json()


def test_a_runtime_failure_streams_failed_then_the_envelope(client: TestClient) -> None:
    body = {"render": _values()}  # the fake runtime needs fixture_output
    status, _, raw = _stream(client, body)
    assert status == 200
    messages = _messages(raw)
    assert [m.event for m in messages] == ["Failed", "envelope"]
    plain = client.post(EXECUTE, json={**body, "stream": True}).json()
    assert rebuild_envelope(messages) == plain
    assert plain["stream_events"][0]["code"] == plain["diagnostics"][0]["code"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"render": {}}, 422, "TQX_VALUE_REQUIRED"),
        ({"render": _values(), "capabilities": ["text"]}, 501, "TQX_CAPABILITY_UNSUPPORTED"),
        ({"render": _values(), "bogus": 1}, 400, "TQX_HTTP_JSON"),
    ],
)
def test_a_call_refused_before_any_model_call_is_plain_json(
    client_for: ClientFactory, body: dict[str, Any], status: int, code: str
) -> None:
    client = client_for(runtime=_mock())
    response = client.post(EXECUTE, json=body, headers=EVENTS)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["diagnostics"][0]["code"] == code
    assert "stream_events" not in response.json()


def test_without_the_header_stream_true_collects_the_events(client_for: ClientFactory) -> None:
    client = client_for(runtime=_mock())
    for accept in ("application/json", "text/event-stream;q=0", "*/*"):
        response = client.post(
            EXECUTE, json={"render": _values(), "stream": True}, headers={"accept": accept}
        )
        assert response.headers["content-type"] == "application/json", accept
        assert len(response.json()["stream_events"]) == 19


def test_a_silent_stream_gets_keep_alive_comments(client_for: ClientFactory) -> None:
    client = client_for(HttpSettings(sse_keepalive_s=0.02), runtime=_mock(pace_ms=120))
    _, _, raw = _stream(client, {"render": _values()})
    assert b"\n: \n\n" in b"\n" + raw or raw.startswith(b": ")
    names = [m.event for m in _messages(raw) if m.event != "partial"]
    assert names[-2:] == ["Complete", "envelope"]


def test_the_deadline_ends_a_stream_in_failed_and_its_envelope(
    client_for: ClientFactory,
) -> None:
    client = client_for(HttpSettings(request_timeout_s=0.4), runtime=_mock(pace_ms=100))
    status, _, raw = _stream(client, {"render": _values()})
    assert status == 200
    messages = _messages(raw)
    names = [m.event for m in messages if m.event != "partial"]
    assert names[-2:] == ["Failed", "envelope"]
    failed = next(m for m in messages if m.event == "Failed")
    assert failed.json()["code"] == "TQX_RUNTIME_CANCELLED"
    assert messages[-1].json()["ok"] is False
    assert 0 < names.count("Delta") < 18


def test_draining_ends_a_running_stream_in_failed(client_for: ClientFactory) -> None:
    client = client_for(runtime=_mock(pace_ms=100))
    state = client.app.state.templiqx  # type: ignore[attr-defined]
    messages: list[SseMessage] = []
    decoder = SseDecoder()
    with client.stream("POST", EXECUTE, json={"render": _values()}, headers=EVENTS) as response:
        for chunk in response.iter_bytes():
            messages.extend(decoder.feed(chunk))
            if len(messages) == 2:
                threading.Thread(target=state.drain).start()
    names = [m.event for m in messages if m.event != "partial"]
    assert names[-2:] == ["Failed", "envelope"]
    failed = next(m for m in messages if m.event == "Failed")
    assert failed.json()["code"] == "TQX_RUNTIME_CANCELLED"
    assert client.get("/operations/v1/health/ready").status_code == 503
    refused = client.post(EXECUTE, json={"render": _values()}, headers=EVENTS)
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["diagnostics"][0]["code"] == "TQX_HTTP_BUSY"
    assert "shutting down" in refused.json()["diagnostics"][0]["message"]


def test_the_encoders() -> None:
    assert sse_event("x", '{"a":1}') == b'event: x\ndata: {"a":1}\n\n'
    assert sse_event("x", "one\ntwo\r\nthree") == b"event: x\ndata: one\ndata: two\ndata: three\n\n"
    assert sse_comment() == b": \n\n"
    assert (
        stream_event_sse(Delta(text="a\nb"))
        == b'event: Delta\ndata: {"kind":"Delta","text":"a\\nb"}\n\n'
    )
    tool = stream_event_sse(ToolCallDelta(name="f", arguments_fragment='{"a"'))
    assert tool.startswith(b"event: ToolCallDelta\n")
    failed = stream_event_sse(Failed(code="TQX_RUNTIME_CANCELLED", message="m"))
    assert _messages(failed)[0].json() == {
        "kind": "Failed",
        "code": "TQX_RUNTIME_CANCELLED",
        "message": "m",
    }
    complete = Complete(
        adapter=AdapterDescriptor(id="a", version="1", capabilities=[]),
        request_fingerprint="r",
        output_fingerprint="o",
        output={"x": 1},
        output_schema_valid=True,
    )
    assert _messages(stream_event_sse(complete))[0].json()["output"] == {"x": 1}


def test_the_decoder_reads_any_chunking_and_rebuild_needs_one_envelope() -> None:
    from templiqx_contracts import OperationEnvelope

    stream = (
        b": hello\n\n"
        + stream_event_sse(Delta(text="a"))
        + b"id: 7\nretry: 10\n"
        + stream_event_sse(Failed(code="C", message="m"))
        + envelope_sse(OperationEnvelope.build("execute_contract"))
    )
    whole = _messages(stream)
    decoder = SseDecoder()
    pieces = [m for byte in stream for m in decoder.feed(bytes([byte]))]
    assert pieces == whole
    assert [m.event for m in whole] == ["Delta", "Failed", "envelope"]
    rebuilt = rebuild_envelope(whole)
    assert rebuilt["stream_events"] == [
        {"kind": "Delta", "text": "a"},
        {"kind": "Failed", "code": "C", "message": "m"},
    ]
    with pytest.raises(ValueError, match="one envelope event"):
        rebuild_envelope(whole[:-1])
