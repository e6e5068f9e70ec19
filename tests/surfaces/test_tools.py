"""A tool-calling contract on every surface: the Python API, the CLI and the MCP server give
equal envelopes for the same execution (scripted tool calls on the mock, streamed or not; a
tool-call fixture on the fake), the CLI shows the calls readably as they stream, MCP progress
carries every ``ToolCallDelta``, and inspect/explain list the tools."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from templiqx_local.compose import compose, load_runtime

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "packages" / "support-desk"
SCENARIO = "support-desk/scenarios/triage-refund/manifest.json"
CONTRACT = "support-triage"
UNDECLARED = {
    "tool_calls": [
        {"id": "call_1", "name": "lookup_account", "arguments": {"email": "ada@example.com"}},
        {"id": "call_2", "name": "refund", "arguments": {"amount": 10}},
    ]
}

Envelopes = dict[str, dict[str, Any]]


def _values() -> dict[str, Any]:
    values: dict[str, Any] = json.loads(
        (EXAMPLE / "scenarios/triage-refund/request.json").read_text()
    )
    return values


# (id, runtime, arguments beyond package/contract/capabilities/values)
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("mock.plain", "mock", {}),
    ("mock.stream", "mock", {"stream": True}),
    ("fake.undeclared", "fake", {"fixture_output": UNDECLARED}),
    ("fake.undeclared.stream", "fake", {"fixture_output": UNDECLARED, "stream": True}),
]


def _arguments(extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "package": "support-desk",
        "contract": CONTRACT,
        "capabilities": ["structured_output"],
        **_values(),
        **extra,
    }


def _root(base: Path) -> Path:
    root = base / "packages"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(EXAMPLE, root / "support-desk")
    return root


def _python(root: Path) -> Envelopes:
    results: Envelopes = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TEMPLIQX_MOCK_SCENARIO", str(root / SCENARIO))
        services = {"mock": compose(root, runtime=load_runtime("mock")), "fake": compose(root)}
        for case, runtime, extra in CALLS:
            results[case] = services[runtime].invoke("execute_contract", _arguments(extra))
            results[case] = results[case].to_builtins()
        for operation in ("inspect_contract", "explain_contract"):
            envelope = services["fake"].invoke(
                operation, {"package": "support-desk", "contract": CONTRACT}
            )
            results[operation] = envelope.to_builtins()
    return results


def _cli(root: Path, inputs: Path, harness: Any) -> tuple[Envelopes, dict[str, str]]:
    (inputs / "values.json").write_text(json.dumps(_values()), encoding="utf-8")
    (inputs / "undeclared.json").write_text(json.dumps(UNDECLARED), encoding="utf-8")
    results: Envelopes = {}
    stderr: dict[str, str] = {}
    for case, runtime, extra in CALLS:
        argv = ["--runtime", runtime, "execute", "support-desk", CONTRACT]
        argv += ["--values", str(inputs / "values.json"), "--capability", "structured_output"]
        if "fixture_output" in extra:
            argv += ["--fixture-output", str(inputs / "undeclared.json")]
        if extra.get("stream"):
            argv.append("--stream")
        done = harness.run_cli(root, *argv, env={"TEMPLIQX_MOCK_SCENARIO": str(root / SCENARIO)})
        assert done.code == (0 if runtime == "mock" else 2), done.stderr
        results[case] = done.envelope()
        stderr[case] = done.stderr
    for operation, command in (("inspect_contract", "inspect"), ("explain_contract", "explain")):
        results[operation] = harness.run_cli(root, command, "support-desk", CONTRACT).envelope()
    # the same stream for people: one line per call, then the closing line
    argv = harness.cli_argv(
        root,
        "--runtime",
        "mock",
        "execute",
        "support-desk",
        CONTRACT,
        "--values",
        str(inputs / "values.json"),
        "--capability",
        "structured_output",
        "--stream",
    )
    argv.remove("--json")
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=harness.child_env({"TEMPLIQX_MOCK_SCENARIO": str(root / SCENARIO)}),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stderr["people"] = done.stderr
    return results, stderr


async def _ignore_progress(value: float, total: float | None, message: str | None) -> None:
    return None


def _mcp(root: Path, log: Path, harness: Any) -> tuple[Envelopes, list[dict[str, Any]]]:
    results: Envelopes = {}
    progress: list[dict[str, Any]] = []

    notes: list[tuple[float, list[dict[str, Any]]]] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            events = (message.params.meta or {}).get("templiqx/events", [])
            notes.append((message.params.progress, events))

    async def drive() -> None:
        for runtime in ("mock", "fake"):
            env = {"TEMPLIQX_RUNTIME": runtime, "TEMPLIQX_MOCK_SCENARIO": str(root / SCENARIO)}
            async with harness.mcp_session(
                root, env=env, errlog=log, message_handler=on_message
            ) as session:
                for case, wanted, extra in CALLS:
                    if wanted != runtime:
                        continue
                    callback = _ignore_progress if case == "mock.stream" else None
                    answer = await session.call_tool(
                        "execute_contract", _arguments(extra), progress_callback=callback
                    )
                    assert answer.is_error is False
                    assert answer.structured_content is not None
                    results[case] = answer.structured_content
                if runtime == "fake":
                    for operation in ("inspect_contract", "explain_contract"):
                        answer = await session.call_tool(
                            operation, {"package": "support-desk", "contract": CONTRACT}
                        )
                        assert answer.structured_content is not None
                        results[operation] = answer.structured_content

    anyio.run(drive)
    for _, events in sorted(notes, key=lambda note: note[0]):  # in order of their progress
        progress.extend(events)
    return results, progress


@pytest.fixture(scope="module")
def surfaces(
    tmp_path_factory: pytest.TempPathFactory, harness: Any
) -> tuple[Envelopes, Envelopes, dict[str, str], Envelopes, list[dict[str, Any]]]:
    base = tmp_path_factory.mktemp("tools")
    inputs = base / "inputs"
    inputs.mkdir()
    python = _python(_root(base))
    cli, stderr = _cli(_root(base), inputs, harness)
    mcp, progress = _mcp(_root(base), base / "mcp.log", harness)
    return python, cli, stderr, mcp, progress


CASES = [case for case, _, _ in CALLS] + ["inspect_contract", "explain_contract"]


@pytest.mark.parametrize("case", CASES)
def test_every_surface_gives_the_same_envelope(case: str, surfaces: Any) -> None:
    python, cli, _, mcp, _ = surfaces
    assert cli[case] == python[case], "CLI envelope differs from the Python API's"
    assert mcp[case] == python[case], "MCP envelope differs from the Python API's"


def test_the_scripted_tool_calls_pass_and_stream(surfaces: Any) -> None:
    python = surfaces[0]
    plain, streamed = python["mock.plain"], dict(python["mock.stream"])
    assert plain["ok"] is True, plain["diagnostics"]
    calls = plain["result"]["output"]["tool_calls"]
    assert [call["name"] for call in calls] == ["lookup_account", "open_ticket"]
    events = streamed.pop("stream_events")
    assert streamed == plain
    assert [event for event in events if event["kind"] == "ToolCallDelta"] == _scripted()
    assert events[-1]["kind"] == "Complete"


def test_an_undeclared_call_is_diagnosed_on_every_surface(surfaces: Any) -> None:
    python = surfaces[0]
    for case in ("fake.undeclared", "fake.undeclared.stream"):
        envelope = python[case]
        assert envelope["ok"] is False
        assert [(d["code"], d["json_pointer"]) for d in envelope["diagnostics"]] == [
            ("TQX_TOOL_CALL_UNDECLARED", "/output/tool_calls/1/name")
        ]


def test_inspect_and_explain_list_the_tools(surfaces: Any) -> None:
    python = surfaces[0]
    tools = python["inspect_contract"]["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["lookup_account", "open_ticket"]
    assert "$ref" not in json.dumps(tools)
    assert python["explain_contract"]["result"]["tools"] == ["lookup_account", "open_ticket"]


def test_the_cli_shows_each_call_on_its_own_line(surfaces: Any) -> None:
    python, _, stderr, _, _ = surfaces
    assert stderr["people"].splitlines() == [
        '[tool lookup_account] {"email": "ada@example.com"}',
        '[tool open_ticket] {"account_id": "acc_1042", "subject": "Double charge", '
        '"priority": "urgent"}',
        "[complete] 2 tool calls (lookup_account, open_ticket); output fingerprint "
        + python["mock.plain"]["fingerprints"]["output"],
    ]
    lines = [json.loads(line) for line in stderr["mock.stream"].splitlines()]
    assert lines == python["mock.stream"]["stream_events"]


def test_mcp_progress_carries_every_tool_call_fragment(surfaces: Any) -> None:
    progress = surfaces[4]
    # the events of coalesced progress notifications, in _meta (issue #28)
    fragments = [
        {key: event[key] for key in ("kind", "name", "arguments_fragment")} for event in progress
    ]
    assert fragments == _scripted()


def _scripted() -> list[dict[str, Any]]:
    """The ToolCallDelta events the scenario scripts (its non-empty fragments, in order)."""
    manifest = json.loads((EXAMPLE.parent / SCENARIO).read_text())
    events = [
        {"kind": "ToolCallDelta", "name": e["name"], "arguments_fragment": e["arguments"]}
        for e in manifest["events"]
        if e["kind"] == "tool_call" and e["arguments"]
    ]
    assert len(events) == 7
    return events
