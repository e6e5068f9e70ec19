"""Cancelling a slow stream: from the MCP client, and by SIGINT (Ctrl-C) to the CLI.

Either way the runtime is cancelled through its cancel token and the stream ends with exactly
one ``Failed`` event with code ``TQX_RUNTIME_CANCELLED``, after which nothing is emitted.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

CONTRACT = "onboarding-summary"
SLOW_PACE_MS = 250
CANCELLED = "TQX_RUNTIME_CANCELLED"


def _arguments(harness: Any) -> dict[str, Any]:
    return {
        "package": "welcome",
        "contract": CONTRACT,
        "capabilities": ["structured_output"],
        **harness.scenario_request(),
        "stream": True,
    }


def test_mcp_client_cancellation_cancels_the_runtime(
    welcome_root: Path, harness: Any, tmp_path: Path
) -> None:
    env = {"TEMPLIQX_RUNTIME": "mock", **harness.mock_env(welcome_root, SLOW_PACE_MS)}
    seen: list[tuple[float, dict[str, Any]]] = []
    three_deltas = anyio.Event()
    failed = anyio.Event()
    after: dict[str, Any] = {}

    async def on_message(message: Any) -> None:
        params = getattr(message, "params", None)
        if getattr(message, "method", None) != "notifications/progress" or params is None:
            return
        # the events ride in _meta, coalesced (issue #28); the message is for people
        for event in (params.meta or {}).get("templiqx/events", []):
            seen.append((time.monotonic(), event))
            if event["kind"] == "Failed":
                failed.set()
        if sum(1 for _, e in seen if e["kind"] == "Delta") >= 3:
            three_deltas.set()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        return None

    async def drive() -> None:
        async with harness.mcp_session(
            welcome_root, env=env, errlog=tmp_path / "log", message_handler=on_message
        ) as session:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    with anyio.CancelScope() as scope:
                        after["scope"] = scope
                        await session.call_tool(
                            "execute_contract", _arguments(harness), progress_callback=on_progress
                        )
                    after["cancelled"] = scope.cancelled_caught

                group.start_soon(call)
                with anyio.fail_after(20):
                    await three_deltas.wait()
                after["scope"].cancel()
                after["cancelled_at"] = time.monotonic()
            with anyio.fail_after(5):
                await failed.wait()
            await anyio.sleep(1.0)  # anything after the Failed event would arrive by now
            answer = await session.call_tool("discover_packages", {})
            after["next"] = answer.structured_content

    anyio.run(drive)
    assert after["cancelled"] is True
    kinds = [event["kind"] for _, event in seen]
    assert kinds.count("Failed") == 1
    assert kinds[-1] == "Failed", "nothing may follow the Failed event"
    assert set(kinds[:-1]) == {"Delta"}
    assert 3 <= len(kinds) - 1 < 18, "the stream stopped early"
    failed_at, failed_event = seen[-1]
    assert failed_event["code"] == CANCELLED
    assert failed_at - after["cancelled_at"] < 1.5, "the runtime noticed within a second"
    assert after["next"]["ok"] is True, "the server keeps serving after a cancellation"


def _sigint_default() -> None:
    """In the child, before exec: SIGINT's default disposition, as a terminal gives it.

    A test run started in the background (``nohup ... &``) has SIGINT ignored, and an ignored
    signal stays ignored across exec; the CLI would then never see the SIGINT sent below.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_cli_sigint_cancels_the_stream_and_exits_130(
    welcome_root: Path, harness: Any, as_json: bool
) -> None:
    values = welcome_root.parent / "values.json"
    values.write_text(json.dumps(harness.scenario_request()), encoding="utf-8")
    argv = harness.cli_argv(
        welcome_root,
        "--runtime",
        "mock",
        "execute",
        "welcome",
        CONTRACT,
        "--values",
        str(values),
        "--capability",
        "structured_output",
        "--stream",
    )
    if not as_json:
        argv.remove("--json")
    env = harness.child_env(harness.mock_env(welcome_root, SLOW_PACE_MS))
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        preexec_fn=_sigint_default,
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        if as_json:
            while len(lines) < 2:
                line = process.stderr.readline()
                assert line, "the stream ended before it could be interrupted"
                lines.append(line)
        else:
            first = process.stderr.read(8)
            assert first, "no delta arrived"
            lines.append(first)
        process.send_signal(signal.SIGINT)
        stdout, rest = process.communicate(timeout=15)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130
    if as_json:
        envelope = json.loads(stdout)
        assert envelope["ok"] is False
        assert [d["code"] for d in envelope["diagnostics"]] == [CANCELLED]
        # The envelope keeps the deltas delivered and ends in the Failed of the diagnostic's code.
        assert envelope["stream_events"][-1]["kind"] == "Failed"
        assert envelope["stream_events"][-1]["code"] == CANCELLED
        assert {event["kind"] for event in envelope["stream_events"][:-1]} <= {"Delta"}
    else:  # for people: that envelope rendered (templiqx_cli.human)
        assert stdout.startswith("✗ execute welcome/"), stdout
        assert CANCELLED in stdout
    stderr = "".join(lines) + rest
    if as_json:
        events = [json.loads(line) for line in stderr.splitlines()]
        kinds = [event["kind"] for event in events]
        assert kinds.count("Failed") == 1
        assert kinds[-1] == "Failed"
        assert events[-1]["code"] == CANCELLED
        assert set(kinds[:-1]) == {"Delta"}
        assert len(kinds) - 1 < 18
    else:
        _, marker, after_failed = stderr.partition(f"[failed] {CANCELLED}:")
        assert marker, stderr
        assert "[failed]" not in after_failed
        assert after_failed.split("\n", 1)[1] == "", "no event after Failed"
