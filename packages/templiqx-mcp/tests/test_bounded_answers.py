"""Bounded tool results (issue #28): a large output is sent once, and what was left out is said.

A 5 MB ``fixture_output`` came back as a 10 MB answer (20 MB streamed): the envelope as text and
as ``structuredContent``, and the output again in ``stream_events``' ``Complete`` event — above
the server's own 8 MiB line limit. Through the official client, and on the raw wire to measure
the answer's line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    OperationEnvelope,
)
from templiqx_mcp import output_schema
from templiqx_mcp.results import ABRIDGE_BYTES, bounded_result
from templiqx_mcp.tools import envelope_text
from templiqx_mcp.wire import MAX_LINE_BYTES

CONTRACT = {"package": "welcome", "contract": "onboarding-summary"}


def _values(packages_root: Path) -> dict[str, Any]:
    request = packages_root / "welcome" / "scenarios" / "stream-vip" / "request.json"
    values: dict[str, Any] = json.loads(request.read_text(encoding="utf-8"))
    return values


def _large_output(size: int) -> dict[str, Any]:
    """An output matching onboarding-summary's schema, about ``size`` bytes of JSON."""
    return {"summary": "x" * size, "next_steps": ["read the welcome pack"], "tone": "warm"}


def _call(session: Any, packages_root: Path, output: Any, stream: bool) -> Any:
    arguments = {
        **CONTRACT,
        **_values(packages_root),
        "capabilities": ["structured_output"],
        "fixture_output": output,
        "stream": stream,
    }
    return session.call_tool("execute_contract", arguments)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_large_output_comes_once_through_the_official_client(
    open_session: Any, packages_root: Path, stream: bool
) -> None:
    output = _large_output(5_000_000)
    found: dict[str, Any] = {}

    async def drive() -> None:
        async with open_session("--root", str(packages_root)) as session:
            found["result"] = await _call(session, packages_root, output, stream)

    anyio.run(drive)  # the client validates structuredContent against the output schema
    result = found["result"]
    envelope = result.structured_content
    assert envelope["ok"] is True, envelope["diagnostics"]
    assert envelope["result"]["output"] == output
    (text,) = result.content
    assert len(text.text) < 1000, "the text does not repeat the envelope"
    assert "is in structuredContent" in text.text
    assert text.text.startswith("execute_contract: ok.")
    if stream:
        complete = envelope["stream_events"][-1]
        assert complete["kind"] == "Complete"
        assert "output" not in complete
        assert complete["output_omitted"] is True
        assert complete["output_fingerprint"] == envelope["result"]["output_fingerprint"]
        assert "leaves out the output" in text.text
    size = len(json.dumps(envelope).encode())
    assert size < 1.01 * len(json.dumps(output).encode()) + 10_000, "one copy of the output"


def test_a_small_answer_is_unchanged(shared: Any) -> None:
    values = _values(shared.root)
    arguments = {**CONTRACT, **values, "capabilities": ["structured_output"], "stream": True}
    arguments["fixture_output"] = _large_output(10)
    result = shared.call("call_tool", "execute_contract", arguments)
    envelope = result.structured_content
    assert json.loads(result.content[0].text) == envelope
    assert envelope["stream_events"][-1]["output"] == envelope["result"]["output"]


def test_the_answer_line_stays_under_the_line_limit(served: Any, packages_root: Path) -> None:
    """The largest fixture output a client may send (just under MAX_ARGUMENT_BYTES), streamed:
    its answer is one line the server itself would read (a client on MCP 2025-06-18)."""
    output = _large_output(8 * 1024 * 1024 - 4096)
    arguments = {
        **CONTRACT,
        **_values(packages_root),
        "capabilities": ["structured_output"],
        "fixture_output": output,
        "stream": True,
    }
    served.call(3, "execute_contract", arguments)
    answer = served.answer(3, timeout=120)
    assert answer["result"]["structuredContent"]["ok"] is True
    (line,) = [raw for raw in served.raw if b'"id":3' in raw[:40]]
    assert len(line) <= MAX_LINE_BYTES
    once = len(output["summary"]) // 1000
    assert line.count(b"x" * 1000) == once, "the output is in the line once"


def test_an_old_client_gets_the_text_once(
    raw_server: Any, packages_root: Path, tmp_path: Path
) -> None:
    """MCP 2024-11-05 has no structuredContent: a large envelope comes as its text only."""
    server = raw_server(["--root", str(packages_root)], tmp_path)
    server.initialize("2024-11-05")
    arguments = {
        **CONTRACT,
        **_values(packages_root),
        "capabilities": ["structured_output"],
        "fixture_output": _large_output(3_000_000),
    }
    server.call(4, "execute_contract", arguments)
    answer = server.answer(4, timeout=120)["result"]
    assert "structuredContent" not in answer
    (text,) = answer["content"]
    envelope = json.loads(text["text"])
    assert envelope["ok"] is True
    assert len(envelope["result"]["output"]["summary"]) == 3_000_000


def _streamed_envelope(deltas: int, text: str) -> OperationEnvelope:
    adapter = AdapterDescriptor(id="templiqx.fake", version="0.2.0", capabilities=["text"])
    receipt = ExecutionReceipt(
        adapter=adapter,
        request_fingerprint="r" * 64,
        output_fingerprint="o" * 64,
        output=text * deltas,
        output_schema_valid=True,
    )
    events: list[Any] = [Delta(text=text) for _ in range(deltas)]
    events.append(Complete.of(receipt))
    return OperationEnvelope.build(
        "execute_contract", result=receipt, fingerprints={}, stream_events=events
    )


def test_deltas_beyond_the_budget_are_left_out_and_said() -> None:
    envelope = _streamed_envelope(20_000, "word ")
    budget = 300_000
    result = bounded_result(envelope, envelope_text, budget=budget)
    data = result.structured_content
    assert data is not None
    assert len(envelope_text(data).encode()) <= budget
    events = data["stream_events"]
    assert events[-1]["kind"] == "Complete"
    assert events[-1]["output_omitted"] is True
    assert 0 < len(events) - 1 < 20_000
    assert all(event == {"kind": "Delta", "text": "word "} for event in events[:-1])
    (warning,) = data["diagnostics"]
    assert warning["code"] == "TQX_STREAM_EVENTS_TRUNCATED"
    assert warning["severity"] == "warning"
    assert f"last {20_000 - (len(events) - 1)} deltas" in warning["message"]
    assert warning["help"]
    assert data["ok"] is True
    jsonschema.validate(data, output_schema("execute_contract"))


def test_the_threshold() -> None:
    small = bounded_result(
        _streamed_envelope(1, "x" * (ABRIDGE_BYTES // 2)), envelope_text, budget=MAX_LINE_BYTES
    )
    assert small.structured_content is not None
    assert "output" in small.structured_content["stream_events"][-1]
    large = bounded_result(
        _streamed_envelope(1, "x" * (ABRIDGE_BYTES + 10)), envelope_text, budget=MAX_LINE_BYTES
    )
    assert large.structured_content is not None
    assert "output" not in large.structured_content["stream_events"][-1]
