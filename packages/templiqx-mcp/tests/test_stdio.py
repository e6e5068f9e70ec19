"""The stdio server driven by the official ``mcp`` client: handshake, tools, resources, prompts.

Most tests share one server (``shared``, started once per module through a blocking portal);
the tests that need their own settings start their own. The client's context managers stop the
servers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from templiqx_application import CATALOG
from templiqx_mcp.server import SERVER_NAME


def _text(result: Any) -> str:
    value: str = result.content[0].text
    return value


def test_initialize_announces_the_server_its_roots_and_packages(shared: Any) -> None:
    init = shared.session.initialize_result
    assert init.server_info.name == SERVER_NAME
    assert init.server_info.version == "0.2.0"
    caps = init.capabilities
    assert caps.tools is not None
    assert caps.resources is not None
    assert caps.prompts is not None
    text = init.instructions
    assert len(text) > 200
    assert f"Packages root: {shared.root}" in text
    assert "Discovered packages: welcome" in text
    assert f"Workspace root: {shared.root / '.templiqx-workspace'}" in text
    # An agent learns from here that streamed progress carries the growing structured answer.
    assert "notifications/progress" in text
    assert "partial, the answer's JSON value so far" in text


def test_tools_list_is_the_catalog(shared: Any) -> None:
    tools = shared.call("list_tools").tools
    assert [tool.name for tool in tools] == sorted(spec.name for spec in CATALOG)
    specs = {spec.name: spec for spec in CATALOG}
    for tool in tools:
        spec = specs[tool.name]
        assert tool.input_schema["additionalProperties"] is False
        assert "diagnostics" in tool.output_schema["properties"]
        assert tool.title == spec.title
        hints = tool.annotations
        assert hints is not None
        assert hints.title == spec.title
        assert hints.read_only_hint is spec.read_only
        assert hints.destructive_hint is spec.destructive
        assert hints.idempotent_hint is spec.idempotent
        # the fake runtime reaches nothing: every tool is closed-world on it
        assert hints.open_world_hint is False
    compile_tool = next(tool for tool in tools if tool.name == "compile_contract")
    assert {"package", "inputs"} <= set(compile_tool.input_schema["properties"])


def test_calls_return_envelopes_as_structured_content_and_sorted_text(shared: Any) -> None:
    discover = shared.call("call_tool", "discover_packages", {})
    assert discover.is_error is False
    assert discover.structured_content["result"][0]["package"] == "welcome"
    assert _text(discover) == json.dumps(
        discover.structured_content, separators=(",", ":"), sort_keys=True, ensure_ascii=False
    )
    missing = shared.call(
        "call_tool", "validate_contract", {"package": "welcome", "contract": "nope"}
    )
    assert missing.is_error is False, "ok:false is a normal result"
    assert missing.structured_content["ok"] is False
    assert missing.structured_content["diagnostics"][0]["code"] == "TQX_NOT_FOUND"
    catalog = shared.call("call_tool", "catalog")
    assert [op["name"] for op in catalog.structured_content["result"]] == [
        spec.name for spec in CATALOG
    ]


def test_unknown_tool_is_invalid_params(shared: Any) -> None:
    with pytest.raises(MCPError) as raised:
        shared.call("call_tool", "no_such_tool", {})
    assert raised.value.error.code == -32602
    assert shared.call("call_tool", "discover_packages").is_error is False


@pytest.mark.parametrize(
    ("arguments", "fields"),
    [
        ({"package": "welcome", "contract": "x", "colour": "red"}, ["colour"]),
        ({"package": "welcome"}, ["contract"]),
        ({"package": "welcome", "contract": 7}, ["contract"]),
        ({"package": ["welcome"], "contract": "x", "strict": 1}, ["package", "strict"]),
    ],
    ids=["unknown", "missing", "wrong-type", "several"],
)
def test_bad_arguments_are_an_error_result_naming_the_field(
    shared: Any, arguments: dict[str, Any], fields: list[str]
) -> None:
    bad = shared.call("call_tool", "validate_contract", arguments)
    assert bad.is_error is True
    assert bad.structured_content is None
    text = _text(bad)
    assert text.startswith("failed to deserialize parameters: ")
    for field in fields:
        assert f"'{field}'" in text


def test_resources_are_listed_and_read(shared: Any) -> None:
    listed = shared.call("list_resources").resources
    assert [str(r.uri) for r in listed] == [
        "templiqx://catalog",
        "templiqx://packages",
        "templiqx://workspace",
    ]
    assert all(r.mime_type == "application/json" for r in listed)
    catalog = shared.call("read_resource", "templiqx://catalog").contents[0]
    assert catalog.mime_type == "application/json"
    tool = shared.call("call_tool", "catalog", {})
    assert json.loads(catalog.text) == tool.structured_content
    packages = json.loads(shared.call("read_resource", "templiqx://packages").contents[0].text)
    assert packages["operation"] == "discover_packages"
    assert packages["ok"] is True
    assert packages["result"][0]["package"] == "welcome"
    workspace = json.loads(shared.call("read_resource", "templiqx://workspace").contents[0].text)
    assert workspace["workspace"] == str(shared.root / ".templiqx-workspace")
    assert workspace["default"] is True
    assert "symlink" in workspace["safety"]
    with pytest.raises(MCPError) as raised:
        shared.call("read_resource", "templiqx://nothing")
    assert raised.value.error.code == -32002
    assert "templiqx://nothing" in raised.value.error.message


def test_prompts_substitute_the_package(shared: Any) -> None:
    prompts = shared.call("list_prompts").prompts
    assert [p.name for p in prompts] == ["bootstrap", "run-eval"]
    assert all(p.arguments[0].name == "package" and p.arguments[0].required for p in prompts)
    bootstrap = shared.call("get_prompt", "bootstrap", {"package": "welcome"}).messages
    assert len(bootstrap) == 1
    assert bootstrap[0].role == "user"
    assert '"welcome"' in bootstrap[0].content.text
    assert "discover_packages" in bootstrap[0].content.text
    run_eval = shared.call("get_prompt", "run-eval", {"package": "welcome"}).messages[0]
    assert '"welcome"' in run_eval.content.text
    assert "list_evals" in run_eval.content.text
    assert "run_eval" in run_eval.content.text
    with pytest.raises(MCPError) as raised:
        shared.call("get_prompt", "nope")
    assert raised.value.error.code == -32602


@pytest.mark.parametrize(
    "arguments",
    [None, {}, {"package": ""}, {"package": "welcome", "extra": "x"}],
    ids=["none", "empty", "blank", "unknown-argument"],
)
def test_a_prompt_without_its_required_argument_is_invalid_params(
    shared: Any, arguments: dict[str, str] | None
) -> None:
    """MCP: a prompts/get missing a required argument is -32602 (no placeholder is filled in)."""
    with pytest.raises(MCPError) as raised:
        shared.call("get_prompt", "bootstrap", arguments)
    assert raised.value.error.code == -32602
    assert "'package'" in raised.value.error.message
    assert raised.value.error.data == {"prompt": "bootstrap", "required": ["package"]}


def test_environment_roots_and_explicit_workspace(
    open_session: Any, packages_root: Path, tmp_path: Path, session_result: dict[str, Any]
) -> None:
    workspace = tmp_path / "artifacts"
    env = {"TEMPLIQX_PACKAGES_ROOT": str(packages_root), "TEMPLIQX_WORKSPACE_ROOT": str(workspace)}

    async def drive() -> None:
        async with open_session(env=env) as session:
            read = await session.read_resource("templiqx://workspace")
            session_result["workspace"] = json.loads(read.contents[0].text)
            session_result["instructions"] = session.initialize_result.instructions

    anyio.run(drive)
    assert session_result["workspace"] == {
        "default": False,
        "safety": session_result["workspace"]["safety"],
        "workspace": str(workspace),
    }
    assert not workspace.exists(), "the workspace is created by its first write, not at start-up"
    assert f"Packages root: {packages_root}" in session_result["instructions"]
