"""The OpenAI-compatible runtime behind every surface (issue #15): usage, lazy settings, names.

A loopback server plays the model (127.0.0.1, ephemeral port, stopped by each test).

* Usage: a call whose server reports token usage carries ``usage`` in its envelope on the
  Python API, the CLI (``--json``, and one human line on stderr without it) and MCP
  (``structuredContent``), streamed or not; its fingerprints equal those of the same call
  without usage, whose envelope has no ``usage`` member at all.
* Settings: ``render`` and ``compile`` with ``--runtime openai`` need no model settings;
  ``execute`` without them fails with one diagnostic naming every missing variable.
* An unknown runtime that a templiqx distribution provides names that distribution.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply
from templiqx_contracts import Usage
from templiqx_local import compose
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

KEY = "sk-live-runtime-surfaces-5e1c"
VALUES = {"inputs": {"account": " acme ", "open_tickets": 2}}
USAGE = {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}
compose_module = importlib.import_module("templiqx_local.compose")


def _model(with_usage: bool) -> Any:
    """A chat-completions server answering ``Acme is fine.``, with or without usage."""

    def reply(request: RecordedRequest) -> Reply:
        usage = USAGE if with_usage else None
        if isinstance(request.json, dict) and request.json.get("stream"):
            frames: list[Any] = [
                {"choices": [{"index": 0, "delta": {"content": "Acme "}}]},
                {"choices": [{"index": 0, "delta": {"content": "is fine."}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            if usage is not None:
                frames.append({"choices": [], "usage": usage})
            return Reply.sse(frames)
        message = {"role": "assistant", "content": "Acme is fine."}
        body: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
        }
        if usage is not None:
            body["usage"] = usage
        return Reply.json(body)

    return reply


def _env(server: LoopbackServer) -> dict[str, str]:
    return {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": KEY, "MODEL_ID": "m"}


def _values(tmp_path: Path) -> Path:
    path = tmp_path / "values.json"
    path.write_text(json.dumps(VALUES), encoding="utf-8")
    return path


def _clean_env(harness: Any, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in harness.child_env().items() if not k.startswith(("MODEL_", "OPENAI_"))}
    env.update(extra or {})
    return env


def test_usage_in_the_python_envelope_with_unchanged_fingerprints(welcome_root: Path) -> None:
    envelopes: dict[tuple[bool, bool], Any] = {}
    for with_usage in (True, False):
        with LoopbackServer(_model(with_usage)) as server:
            settings = OpenAISettings(base_url=server.base_url, api_key=KEY, model="m")
            runtime = OpenAIRuntime(settings)
            service = compose(welcome_root, runtime=runtime)
            for stream in (False, True):
                envelope = service.execute_contract(
                    "welcome",
                    "account-digest",
                    inputs=VALUES["inputs"],
                    capabilities=["text"],
                    stream=stream,
                )
                assert envelope.ok, envelope.diagnostics
                envelopes[with_usage, stream] = envelope
            runtime.close()
    for stream in (False, True):
        metered, plain = envelopes[True, stream], envelopes[False, stream]
        assert metered.usage == Usage(**USAGE)
        assert plain.usage is None
        assert "usage" not in plain.to_builtins()
        assert metered.to_builtins()["usage"] == USAGE
        assert metered.fingerprints == plain.fingerprints
        assert metered.result == plain.result
    assert envelopes[True, False].fingerprints == envelopes[True, True].fingerprints


def test_usage_through_the_iterator_and_async_apis(welcome_root: Path) -> None:
    """The sync iterator, the async iterator and the awaitable execute meter usage as the
    blocking call does: the runtime runs on the service's workers, each call on its own meter."""
    with LoopbackServer(_model(True)) as server:
        runtime = OpenAIRuntime(OpenAISettings(base_url=server.base_url, api_key=KEY, model="m"))
        service = compose(welcome_root, runtime=runtime)
        arguments: dict[str, Any] = {"inputs": VALUES["inputs"], "capabilities": ["text"]}
        with service.stream_contract("welcome", "account-digest", **arguments) as run:
            events = list(run)
        assert type(events[-1]).__name__ == "Complete"
        assert run.envelope.usage == Usage(**USAGE)

        async def drive() -> list[Any]:
            async with service.astream_contract("welcome", "account-digest", **arguments) as arun:
                async for _ in arun:
                    pass
            envelopes = [arun.envelope]
            for stream in (False, True):
                envelopes.append(
                    await service.aexecute_contract(
                        "welcome", "account-digest", stream=stream, **arguments
                    )
                )
            return envelopes

        envelopes = anyio.run(drive)
        runtime.close()
    for envelope in envelopes:
        assert envelope.ok, envelope.diagnostics
        assert envelope.usage == Usage(**USAGE)
        assert envelope.fingerprints == run.envelope.fingerprints


def test_usage_on_a_failure_after_the_model_answered(welcome_root: Path) -> None:
    """A completion whose output is unusable still cost tokens: the failure envelope says so."""
    refusal = {
        "choices": [
            {"index": 0, "message": {"content": None, "refusal": "no"}, "finish_reason": "stop"}
        ],
        "usage": USAGE,
    }
    with LoopbackServer(Reply.json(refusal)) as server:
        runtime = OpenAIRuntime(OpenAISettings(base_url=server.base_url, api_key=KEY, model="m"))
        envelope = compose(welcome_root, runtime=runtime).execute_contract(
            "welcome", "account-digest", inputs=VALUES["inputs"], capabilities=["text"]
        )
        runtime.close()
    assert [d.code for d in envelope.diagnostics] == ["TQX_RUNTIME_PERMANENT"]
    assert envelope.usage == Usage(**USAGE)


def test_usage_through_the_cli(welcome_root: Path, tmp_path: Path, harness: Any) -> None:
    values = _values(tmp_path)
    args = ["--runtime", "openai", "execute", "welcome", "account-digest", "--values", str(values)]
    args += ["--capability", "text"]
    with LoopbackServer(_model(True)) as server:
        env = _clean_env(harness, _env(server))
        for stream in ([], ["--stream"]):
            done = harness.run_cli(welcome_root, *args, *stream, env=env)
            assert done.code == 0, done.stderr
            assert done.envelope()["usage"] == USAGE
        people = subprocess.run(
            [sys.executable, "-m", "templiqx_cli", "--root", str(welcome_root), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert people.returncode == 0, people.stderr
    assert "  usage: 11 prompt + 4 completion = 15 tokens" in people.stdout.splitlines()


def test_usage_through_mcp(welcome_root: Path, tmp_path: Path, harness: Any) -> None:
    results: list[dict[str, Any]] = []

    async def drive(env: dict[str, str]) -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "templiqx_mcp", str(welcome_root)],
            env=env,
            cwd=str(welcome_root.parent),
        )
        with (tmp_path / "mcp.log").open("a", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for stream in (False, True):
                    answer = await session.call_tool(
                        "execute_contract",
                        {
                            "package": "welcome",
                            "contract": "account-digest",
                            "inputs": VALUES["inputs"],
                            "capabilities": ["text"],
                            "stream": stream,
                        },
                    )
                    assert answer.structured_content is not None
                    results.append(answer.structured_content)

    with LoopbackServer(_model(True)) as server:
        env = _clean_env(harness, {**_env(server), "TEMPLIQX_RUNTIME": "openai"})
        anyio.run(drive, env)
    assert len(results) == 2
    for envelope in results:
        assert envelope["ok"], envelope["diagnostics"]
        assert envelope["usage"] == USAGE


def test_a_live_runtime_makes_execute_neither_read_only_nor_closed(
    welcome_root: Path, tmp_path: Path, harness: Any
) -> None:
    """Issue #28: hosts that auto-approve read-only tools must not auto-approve model calls.

    With the OpenAI runtime composed, the official client sees ``execute_contract`` as a
    non-read-only, open-world tool (the other tools keep the catalog's flags), and the
    instructions say that executions reach outside the machine and may cost money.
    """
    found: dict[str, Any] = {}

    async def drive(env: dict[str, str]) -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "templiqx_mcp", str(welcome_root)],
            env=env,
            cwd=str(welcome_root.parent),
        )
        with (tmp_path / "mcp.log").open("a", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                initialized = await session.initialize()
                found["instructions"] = initialized.instructions
                found["tools"] = {t.name: t for t in (await session.list_tools()).tools}

    with LoopbackServer(_model(False)) as server:
        anyio.run(drive, _clean_env(harness, {**_env(server), "TEMPLIQX_RUNTIME": "openai"}))
    execute = found["tools"]["execute_contract"]
    hints = execute.annotations
    assert (hints.read_only_hint, hints.open_world_hint) == (False, True)
    assert (hints.destructive_hint, hints.idempotent_hint) == (False, False)
    assert "calls a live model" in execute.description
    assert "cost money" in execute.description
    others = [tool for name, tool in found["tools"].items() if name != "execute_contract"]
    assert all(tool.annotations.open_world_hint is False for tool in others)
    assert "openai, a live model" in found["instructions"]
    assert "may cost money" in found["instructions"]


def test_render_and_compile_need_no_model_settings(
    welcome_root: Path, tmp_path: Path, harness: Any
) -> None:
    values = str(_values(tmp_path))
    env = _clean_env(harness)
    for command in ("render", "compile"):
        done = harness.run_cli(
            welcome_root,
            "--runtime",
            "openai",
            command,
            "welcome",
            "account-digest",
            "--values",
            values,
            "--capability",
            "text",
            env=env,
        )
        assert done.code == 0, done.stderr
        assert done.envelope()["ok"]
    done = harness.run_cli(
        welcome_root,
        "--runtime",
        "openai",
        "execute",
        "welcome",
        "account-digest",
        "--values",
        values,
        "--capability",
        "text",
        env=env,
    )
    assert done.code == 2
    (diagnostic,) = done.envelope()["diagnostics"]
    assert diagnostic["code"] == "TQX_RUNTIME_PERMANENT"
    assert diagnostic["message"] == (
        "runtime failure TQX_RUNTIME_PERMANENT: runtime settings are missing or invalid: "
        "MODEL_BASE_URL (or OPENAI_BASE_URL) is not set; MODEL_API_KEY (or OPENAI_API_KEY) is "
        "not set; MODEL_ID is not set"
    )
    assert diagnostic["help"].startswith("set MODEL_BASE_URL")


def test_openai_variables_are_enough_through_the_cli(
    welcome_root: Path, tmp_path: Path, harness: Any
) -> None:
    with LoopbackServer(_model(False)) as server:
        env = _clean_env(
            harness,
            {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY, "MODEL_ID": "m"},
        )
        done = harness.run_cli(
            welcome_root,
            "--runtime",
            "openai",
            "execute",
            "welcome",
            "account-digest",
            "--values",
            str(_values(tmp_path)),
            "--capability",
            "text",
            env=env,
        )
        sent = server.requests[0]
    assert done.code == 0, done.stderr
    assert done.envelope()["result"]["output"] == "Acme is fine."
    assert sent.header("Authorization") == f"Bearer {KEY}"


def test_an_unknown_runtime_of_ours_names_its_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = compose_module._runtime_entry_points()
    without = {name: entry for name, entry in installed.items() if name != "openai"}
    monkeypatch.setattr(compose_module, "_runtime_entry_points", lambda: without)
    with pytest.raises(compose_module.RuntimeSelectionError) as caught:
        compose_module.load_runtime("openai")
    assert (
        "'openai' is provided by templiqx-runtime-openai: install it into the same environment "
        "(from a clone's wheels: uv build --all-packages --out-dir dist, then pip install "
        "--find-links dist templiqx-runtime-openai" in str(caught.value)
    )
    with pytest.raises(compose_module.RuntimeSelectionError) as other:
        compose_module.load_runtime("warp")
    assert "provided by" not in str(other.value)
