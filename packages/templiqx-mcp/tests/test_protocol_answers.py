"""Every request gets exactly one answer with its id (issue #28): what clients tripped over.

Through the official ``mcp`` client where a client can say it (resource templates, a request
before ``initialize``); as raw lines where no client library would send them (deep nesting,
batches, values that are not objects) — every answer is then read back with the SDK's own
message types, as a client would.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


def _server_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("PYTHON")}


def _sdk_message(line: bytes) -> Any:
    """A stdout line read as the official SDK reads it (raises when it is no message)."""
    return types.jsonrpc_message_adapter.validate_json(line, by_name=False)


def _nested(depth: int, request_id: int) -> bytes:
    arguments = "[" * depth + "]" * depth
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":'
        f'{{"name":"execute_contract","arguments":{{"package":"welcome","contract":'
        f'"onboarding-summary","fixture_output":{arguments}}}}}}}\n'
    ).encode()


def test_deep_requests_get_their_id_and_the_limit_named(served: Any) -> None:
    for depth, request_id in ((150, 1), (250, 2), (300, 3), (980, 4), (5000, 5)):
        served.stdin.write(_nested(depth, request_id))
    # the id as the last member, after a body too deep to read
    deep = "[" * 3000 + "]" * 3000
    served.stdin.write(
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"catalog","arguments":'
        + deep.encode()
        + b'},"id":"last"}\n'
    )
    served.stdin.flush()
    for request_id in (1, 2):  # within MAX_ARGUMENT_DEPTH: the call runs
        answer = served.answer(request_id)
        assert answer["result"]["isError"] is False
    answer = served.answer(3)  # deeper than MAX_ARGUMENT_DEPTH: the service says so
    assert answer["result"]["isError"] is True
    assert "256" in answer["result"]["content"][0]["text"]
    assert "MAX_ARGUMENT_DEPTH" in answer["result"]["content"][0]["text"]
    for request_id in (4, 5, "last"):  # too deep to read: refused with its id
        answer = served.answer(request_id)
        assert answer["error"]["code"] == -32600
        assert "MAX_ARGUMENT_DEPTH" in answer["error"]["message"]
        assert "256" in answer["error"]["message"]
    assert all(_sdk_message(line) for line in served.raw)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"[]", "an empty batch"),
        (b"{}", '"jsonrpc" must be "2.0"'),
        (b"null", "not null"),
        (b"42", "not a number"),
        (b'"ping"', "not a string"),
        (b"true", "not a boolean"),
        (b'{"jsonrpc":"2.0","method":7}', '"method" must be a string'),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', '"id" must be a string or an integer'),
    ],
)
def test_a_value_that_is_no_message_gets_one_error_with_id_null(
    served: Any, line: bytes, says: str
) -> None:
    served.stdin.write(line + b"\n")
    served.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    refusal = served.answer(None)
    assert refusal["error"]["code"] == -32600
    assert says in refusal["error"]["message"]
    assert served.answer("after")["result"] == {}
    assert [json.loads(raw).get("id") for raw in served.raw[1:]] == [None, "after"]
    assert all(_sdk_message(raw) for raw in served.raw)


def test_an_object_that_is_no_message_keeps_its_id(served: Any) -> None:
    served.send({"jsonrpc": "1.0", "id": 9, "method": "ping"})
    answer = served.answer(9)
    assert answer["error"]["code"] == -32600
    assert '"jsonrpc" must be "2.0"' in answer["error"]["message"]


@pytest.mark.parametrize("digits", [4301, 100_000])
def test_an_integer_too_long_to_read_is_refused_with_the_id(served: Any, digits: int) -> None:
    """Issue #29 beside #28: the line is refused -32600 with its id (it was a parse error with
    ``id: null``), never delivered with the number changed."""
    served.stdin.write(
        b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"catalog",'
        b'"arguments":{"n":' + b"7" * digits + b"}}}\n"
    )
    served.stdin.flush()
    answer = served.answer("huge")
    assert answer["error"]["code"] == -32600
    assert "more than 4300 digits" in answer["error"]["message"]
    assert len(json.dumps(answer)) < 1000, "the number is not echoed"


def test_a_batch_is_answered_with_one_array(served: Any) -> None:
    served.send_raw(
        [
            {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
            {
                "jsonrpc": "2.0",
                "id": "b2",
                "method": "tools/call",
                "params": {"name": "validate_package", "arguments": {"package": "welcome"}},
            },
            1,
            {"jsonrpc": "2.0", "id": "b3", "method": "no/such/method"},
        ]
    )
    answers = served.batch_answer()
    served.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    served.answer("after")
    assert len([raw for raw in served.raw if raw.startswith(b"[")]) == 1, served.raw
    assert sorted(str(answer["id"]) for answer in answers) == ["None", "b1", "b2", "b3"]
    by_id = {answer["id"]: answer for answer in answers}
    assert by_id["b1"]["result"] == {}
    assert by_id["b2"]["result"]["structuredContent"]["ok"] is True
    assert by_id["b3"]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    for answer in answers:
        _sdk_message(json.dumps(answer).encode())


def test_a_batch_of_notifications_and_refusals_only(served: Any) -> None:
    served.send_raw([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])
    served.send_raw([{"jsonrpc": "2.0", "method": "x"}, "no"])
    served.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    served.answer("after")
    arrays = [json.loads(raw) for raw in served.raw if raw.startswith(b"[")]
    assert arrays == [
        [
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32600,
                    "message": "Invalid Request: a JSON-RPC message is an object, not a string",
                },
            }
        ]
    ], "notifications get no answer; the refused element does"


def test_resource_templates_through_the_official_client(
    packages_root: Path, tmp_path: Path
) -> None:
    found: dict[str, Any] = {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "templiqx_mcp", "--root", str(packages_root)],
        env=_server_env(),
        cwd=str(tmp_path),
    )

    async def drive() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            try:
                await session.call_tool("catalog", {})
            except MCPError as refused:
                found["before"] = refused.error
            await session.initialize()
            found["templates"] = (await session.list_resource_templates()).resource_templates
            package = await session.read_resource("templiqx://packages/welcome")
            found["package"] = json.loads(package.contents[0].text)
            contract = await session.read_resource(
                "templiqx://packages/welcome/contracts/onboarding-summary"
            )
            found["contract"] = json.loads(contract.contents[0].text)
            missing = await session.read_resource("templiqx://packages/nope/contracts/x")
            found["missing"] = json.loads(missing.contents[0].text)
            try:
                await session.read_resource("templiqx://packages/welcome/other/x")
            except MCPError as unknown:
                found["unknown"] = unknown.error

    anyio.run(drive)
    before = found["before"]
    assert before.code == -32602
    assert "not initialized" in before.message
    assert "initialize first" in before.message
    assert before.data == {"method": "tools/call", "reason": "not initialized"}
    templates = {t.name: t for t in found["templates"]}
    assert templates["package"].uri_template == "templiqx://packages/{package}"
    assert templates["contract"].uri_template == (
        "templiqx://packages/{package}/contracts/{contract}"
    )
    assert all(t.mime_type == "application/json" and t.description for t in templates.values())
    assert found["package"]["operation"] == "validate_package"
    assert found["package"]["ok"] is True
    assert found["contract"]["operation"] == "inspect_contract"
    assert found["contract"]["result"]["id"] == "onboarding-summary"
    assert found["missing"]["ok"] is False
    assert found["missing"]["diagnostics"][0]["code"] == "TQX_NOT_FOUND"
    assert found["unknown"].code == -32002
    assert "templiqx://packages/{package}" in found["unknown"].data["templates"]


def test_argument_and_workspace_problems_say_what_is_wrong(shared: Any) -> None:
    """``capabilities: [1, 2]`` names the item; a workspace outside the allowed roots gets
    help about the workspace, not about path syntax."""
    listed = shared.call(
        "call_tool",
        "compile_contract",
        {"package": "welcome", "contract": "onboarding-summary", "capabilities": [1, 2]},
    )
    assert listed.is_error is True
    text = listed.content[0].text
    assert "argument 'capabilities' must be a list of strings, but item 0 is a number" in text
    outside = shared.call(
        "call_tool", "list_workspace_artifacts", {"package": "welcome", "workspace": "/tmp"}
    ).structured_content
    (problem,) = outside["diagnostics"]
    assert problem["code"] == "TQX_PATH_INVALID"
    assert "outside the allowed workspace roots" in problem["message"]
    assert problem["help"].startswith("Leave `workspace` out to use the configured workspace")
    assert "separators" not in problem["help"]


_CONTRACT = {"package": "welcome", "contract": "onboarding-summary"}


def _nested_value(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_requests_deeper_than_the_sdk_reads_are_answered_through_the_official_client(
    open_session: Any, packages_root: Path
) -> None:
    """Between the SDK reader's ~200 levels and MAX_ARGUMENT_DEPTH a call runs and is answered
    with its own result (it was "not a JSON-RPC 2.0 message"). The official client cannot write
    a message much deeper than 255 levels (its serializer stops there), so the deeper cases are
    raw lines: see test_deep_requests_get_their_id_and_the_limit_named."""
    found: dict[int, Any] = {}

    async def drive() -> None:
        async with open_session("--root", str(packages_root)) as session:
            for depth in (220, 250):
                with anyio.fail_after(60):
                    found[depth] = await session.call_tool(
                        "execute_contract", {**_CONTRACT, "fixture_output": _nested_value(depth)}
                    )

    anyio.run(drive)
    for result in found.values():
        assert result.is_error is False
        envelope = result.structured_content
        assert envelope["operation"] == "execute_contract"
        assert [d["code"] for d in envelope["diagnostics"]][:1] == ["TQX_VALUE_REQUIRED"]


def test_the_execute_description_holds_for_what_stream_events_carry(shared: Any) -> None:
    """Issue #28: the tool description said stream_events "end in Complete or Failed", which a
    refused call and an output that breaks the schema contradicted. What it says now is what
    the official client receives."""
    tools = {tool.name: tool for tool in shared.call("list_tools").tools}
    description = tools["execute_contract"].description
    assert "a call refused before the runtime runs (bad values, a missing capability) has none" in (
        description
    )
    assert "ok false with TQX_OUTPUT_SCHEMA, when the output breaks the contract's schema" in (
        description
    )
    request = shared.root / "welcome" / "scenarios" / "stream-vip" / "request.json"
    values = json.loads(request.read_text(encoding="utf-8"))
    refused = shared.call(
        "call_tool",
        "execute_contract",
        {**_CONTRACT, **values, "capabilities": ["text"], "stream": True, "fixture_output": {}},
    ).structured_content
    assert refused["ok"] is False
    assert [d["code"] for d in refused["diagnostics"]] == ["TQX_CAPABILITY_UNSUPPORTED"]
    assert "stream_events" not in refused, "refused before the runtime: no events"
    broken = shared.call(
        "call_tool",
        "execute_contract",
        {**_CONTRACT, **values, "stream": True, "fixture_output": {"tone": 7}},
    ).structured_content
    assert broken["ok"] is False
    assert {d["code"] for d in broken["diagnostics"]} == {"TQX_OUTPUT_SCHEMA"}
    terminal = broken["stream_events"][-1]
    assert (terminal["kind"], terminal["output_schema_valid"]) == ("Complete", False)
    ran = shared.call(
        "call_tool",
        "execute_contract",
        {
            **_CONTRACT,
            **values,
            "stream": True,
            "fixture_output": {"summary": "s", "next_steps": ["x"], "tone": "warm"},
        },
    ).structured_content
    assert ran["ok"] is True
    assert ran["stream_events"][-1]["kind"] == "Complete"
