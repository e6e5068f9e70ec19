"""Contracts that declare tools, through the service: loading with pinned tool contracts,
inspect/explain, evals on the fake runtime, runtime capability, and the output checks."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from templiqx_application import DeterministicFakeRuntime, TempliqxService
from templiqx_contracts import (
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    ToolCallDelta,
    fingerprint,
)
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_mock import ScenarioManifest, ScriptedRuntime
from templiqx_ports import RuntimeAdapter

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "fixtures" / "packages" / "support-desk"
SCENARIO = EXAMPLE / "scenarios" / "triage-refund" / "manifest.json"
CAPS = ["structured_output"]
TRIAGE = "support-triage"
LOOKUP = {"id": "call_1", "name": "lookup_account", "arguments": {"email": "ada@example.com"}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A writable packages root holding a copy of the support-desk example."""
    target = tmp_path / "packages"
    shutil.copytree(EXAMPLE, target / "support-desk")
    return target


def service(root: Path, runtime: RuntimeAdapter | None = None) -> TempliqxService:
    return TempliqxService(
        FilesystemPackageStore(root), FilesystemArtifactWorkspace(root.parent / "ws"), runtime
    )


def codes(envelope: OperationEnvelope) -> list[tuple[str, str | None]]:
    return [(d.code, d.json_pointer) for d in envelope.diagnostics]


def request() -> dict[str, Any]:
    values: dict[str, Any] = json.loads((SCENARIO.parent / "request.json").read_text())
    return values


def execute(svc: TempliqxService, output: Any, **more: Any) -> OperationEnvelope:
    return svc.execute_contract(
        "support-desk", TRIAGE, capabilities=CAPS, fixture_output=output, **request(), **more
    )


def edit_manifest(root: Path, change: Any) -> None:
    path = root / "support-desk" / "templiqx.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def edit_triage(root: Path, change: Any) -> None:
    path = root / "support-desk" / "contracts" / f"{TRIAGE}.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# --- loading, inspect, explain, validate, evals ---------------------------------------------


def test_the_example_package_validates_and_its_evals_pass(root: Path) -> None:
    svc = service(root)
    assert svc.validate_package("support-desk").ok
    report = svc.test_package("support-desk", capabilities=CAPS)
    assert report.ok, report.diagnostics
    assert report.result.passed == 4
    assert report.result.failed == 0


def test_inspect_shows_the_resolved_tools_and_explain_lists_them(root: Path) -> None:
    svc = service(root)
    inspected = svc.inspect_contract("support-desk", TRIAGE)
    assert inspected.ok
    contract = inspected.to_builtins()["result"]
    shared = yaml.safe_load((root / "support-desk" / "templiqx.yaml").read_text())
    assert [tool["name"] for tool in contract["tools"]] == ["lookup_account", "open_ticket"]
    assert contract["tools"][0]["arguments"] == shared["tool_contracts"]["lookup_account"]["schema"]
    assert (contract["tool_choice"], contract["parallel_tool_calls"]) == ("auto", True)
    explained = svc.explain_contract("support-desk", TRIAGE).to_builtins()["result"]
    assert explained["tools"] == ["lookup_account", "open_ticket"]
    reply = svc.explain_contract("support-desk", "support-reply").to_builtins()["result"]
    assert "tools" not in reply


def test_compile_carries_the_resolved_tools(root: Path) -> None:
    compiled = service(root).compile_contract(
        "support-desk", TRIAGE, capabilities=CAPS, **request()
    )
    assert compiled.ok
    interaction = compiled.to_builtins()["result"]
    assert [tool["name"] for tool in interaction["tools"]] == ["lookup_account", "open_ticket"]
    assert "$ref" not in json.dumps(interaction["tools"])
    assert compiled.fingerprints["compiled_interaction"] == fingerprint(interaction)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda m: m["tool_contracts"]["lookup_account"].update(fingerprint="sha256:newer"),
            "tool 'lookup_account' pins fingerprint 'sha256:6a80",
        ),
        (
            lambda m: m["tool_contracts"].update(
                {"account": m["tool_contracts"].pop("lookup_account")}
            ),
            "tool 'lookup_account' references unknown tool_contract 'lookup_account'",
        ),
    ],
    ids=["stale-pin", "unknown-name"],
)
def test_unresolved_tool_contracts_stop_every_contract_operation(
    root: Path, change: Any, message: str
) -> None:
    edit_manifest(root, change)
    svc = service(root)
    for envelope in (
        svc.inspect_contract("support-desk", TRIAGE),
        svc.validate_contract("support-desk", TRIAGE),
        svc.compile_contract("support-desk", TRIAGE, capabilities=CAPS, **request()),
        svc.run_eval("support-desk", TRIAGE, "asks-for-the-account", capabilities=CAPS),
    ):
        assert codes(envelope)[0] == ("TQX_TOOL_CONTRACT_REF_UNRESOLVED", "/tools/0/arguments")
        assert envelope.diagnostics[0].message.startswith(message)
        assert not envelope.ok


def test_without_a_tool_contracts_table_the_stub_is_named(root: Path) -> None:
    edit_manifest(root, lambda m: m.pop("tool_contracts"))
    envelope = service(root).validate_contract("support-desk", TRIAGE)
    assert codes(envelope) == [("TQX_TOOL_CONTRACT_REF_UNRESOLVED", "/tools/0/arguments")]
    assert envelope.diagnostics[0].file == "support-desk/contracts/support-triage.yaml"


def test_bad_tool_declarations_are_diagnosed_with_pointers(root: Path) -> None:
    def break_tools(data: dict[str, Any]) -> None:
        data["tools"][1]["name"] = "open ticket"
        data["tools"].append(copy.deepcopy(data["tools"][0]))
        data["tools"][2]["arguments"] = {"type": "object", "oneOf": []}
        data["tool_choice"] = {"tool": "refund"}

    edit_triage(root, break_tools)
    envelope = service(root).validate_contract("support-desk", TRIAGE)
    assert codes(envelope) == [
        ("TQX_TOOL_NAME_INVALID", "/tools/1/name"),
        ("TQX_TOOL_NAME_DUPLICATE", "/tools/2/name"),
        ("TQX_TOOL_SCHEMA_INVALID", "/tools/2/arguments"),
        ("TQX_SCHEMA_KEYWORD_UNSUPPORTED", "/tools/2/arguments/oneOf"),
        ("TQX_TOOL_CHOICE_INVALID", "/tool_choice/tool"),
    ]


# --- execution on the fake runtime ----------------------------------------------------------


def test_a_tool_call_fixture_output_executes_on_the_fake_runtime(root: Path) -> None:
    envelope = execute(service(root), {"tool_calls": [LOOKUP]})
    assert envelope.ok, envelope.diagnostics
    receipt = envelope.result
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.output_schema_valid is True
    assert receipt.adapter.capabilities == ["structured_output", "text"]


def test_an_undeclared_tool_call_is_diagnosed(root: Path) -> None:
    output = {"tool_calls": [LOOKUP, {"id": "c2", "name": "refund", "arguments": {}}]}
    envelope = execute(service(root), output)
    assert not envelope.ok
    assert codes(envelope) == [("TQX_TOOL_CALL_UNDECLARED", "/output/tool_calls/1/name")]
    assert envelope.result.output_schema_valid is False
    assert envelope.diagnostics[0].help


def test_schema_invalid_arguments_are_diagnosed_per_violation(root: Path) -> None:
    ticket = {
        "id": "c2",
        "name": "open_ticket",
        "arguments": {"account_id": "", "subject": "x", "priority": "asap"},
    }
    envelope = execute(service(root), {"tool_calls": [LOOKUP, ticket]})
    assert not envelope.ok
    assert codes(envelope) == [
        ("TQX_TOOL_CALL_ARGUMENTS", "/output/tool_calls/1/arguments"),
        ("TQX_TOOL_CALL_ARGUMENTS", "/output/tool_calls/1/arguments"),
    ]
    text = " ".join(d.message for d in envelope.diagnostics)
    assert "tool call 1 ('open_ticket') arguments:" in text
    assert '"asap" is not one of' in text
    assert '"" is shorter than 1 character' in text


def test_a_plain_answer_is_still_checked_against_the_output_schema(root: Path) -> None:
    svc = service(root)
    assert execute(svc, {"reply": "We open at nine."}).ok
    envelope = execute(svc, {"reply": ""})
    assert codes(envelope) == [("TQX_OUTPUT_SCHEMA", "/output/reply")]  # each violation named


def test_a_forced_tool_call_refuses_a_plain_answer(root: Path) -> None:
    edit_triage(root, lambda data: data.update(tool_choice="required"))
    envelope = execute(service(root), {"reply": "We open at nine."})
    assert codes(envelope) == [("TQX_TOOL_CALL_REQUIRED", "/output")]


# --- runtime capability ---------------------------------------------------------------------


def test_a_runtime_without_tool_calling_is_refused(root: Path) -> None:
    runtime = ScriptedRuntime.success()
    envelope = execute(service(root, runtime), {"tool_calls": [LOOKUP]})
    assert codes(envelope) == [("TQX_RUNTIME_CAPABILITY_UNSUPPORTED", "/tools")]
    assert envelope.diagnostics[0].message == (
        "runtime lacks 'tool_calling', which the contract's tools need"
    )
    assert runtime.stats().attempts == 0
    # a contract without tools still runs there
    assert (
        service(root, runtime)
        .execute_contract(
            "support-desk",
            "support-reply",
            capabilities=CAPS,
            inputs={"message": "hi", "tool_results": []},
            fixture_output={"reply": "Hello"},
        )
        .ok
    )


def test_a_tool_calling_mock_replays_a_tool_call_output(root: Path) -> None:
    runtime = ScriptedRuntime([], tool_calling=True)
    assert runtime.descriptor().capabilities == ["structured_output", "tool_calling"]
    envelope = execute(service(root, runtime), {"tool_calls": [LOOKUP]})
    assert envelope.ok, envelope.diagnostics


# --- streaming scripted tool calls ----------------------------------------------------------


def test_scripted_tool_calls_stream_and_match_the_plain_receipt(root: Path) -> None:
    manifest = ScenarioManifest.load(SCENARIO)
    svc = service(root, ScriptedRuntime.from_manifest(manifest))
    seen: list[Any] = []
    streamed = svc.execute_contract(
        "support-desk", TRIAGE, capabilities=CAPS, stream=True, sink=seen.append, **request()
    )
    plain = svc.execute_contract("support-desk", TRIAGE, capabilities=CAPS, **request())
    assert streamed.ok, streamed.diagnostics
    assert plain.ok
    assert streamed.result == plain.result
    assert streamed.fingerprints == plain.fingerprints
    fragments = [e for e in streamed.stream_events if isinstance(e, ToolCallDelta)]
    scripted = [
        event
        for event in json.loads(SCENARIO.read_text())["events"]
        if event["kind"] == "tool_call"
    ]
    assert [(e.name, e.arguments_fragment) for e in fragments] == [
        (event["name"], event["arguments"]) for event in scripted if event["arguments"]
    ]
    assert seen == streamed.stream_events
    terminal = streamed.stream_events[-1]
    assert isinstance(terminal, Complete)
    assert terminal.receipt == plain.result
    output = plain.result.output
    assert [call["name"] for call in output["tool_calls"]] == ["lookup_account", "open_ticket"]
    assert output["tool_calls"][1]["arguments"]["priority"] == "urgent"


def test_the_fake_runtime_judges_tool_calls_like_the_application() -> None:
    runtime = DeterministicFakeRuntime()
    svc_root = EXAMPLE.parent
    compiled = service(svc_root).compile_contract(
        "support-desk", TRIAGE, capabilities=CAPS, **request()
    )
    interaction = compiled.result
    for output, valid in (
        ({"tool_calls": [LOOKUP]}, True),
        ({"tool_calls": [{**LOOKUP, "arguments": {}}]}, False),
        ({"reply": "x"}, True),
        ({"tool_calls": []}, False),
    ):
        receipt = runtime.execute(ExecutionRequest(interaction=interaction, fixture_output=output))
        assert receipt.output_schema_valid is valid, output
