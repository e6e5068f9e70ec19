"""Live streaming on the CLI (stderr, as deltas arrive) and over MCP (progress notifications).

The scripted mock replays the welcome package's 18-delta scenario with real pacing between
deltas, so "live" is observable: the CLI's stderr is read incrementally while the process is
still running, and every MCP progress notification arrives before the tool result.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

CONTRACT = "onboarding-summary"
PACE_MS = 120


def _scenario_deltas(harness: Any) -> list[str]:
    manifest = json.loads((harness.WELCOME / harness.SCENARIO).read_text())
    return [event["text"] for event in manifest["events"] if event["kind"] == "delta"]


def _values_file(root: Path, harness: Any) -> Path:
    path = root.parent / "values.json"
    path.write_text(json.dumps(harness.scenario_request()), encoding="utf-8")
    return path


def _execute_argv(harness: Any, root: Path, *extra: str) -> list[str]:
    values = _values_file(root, harness)
    return harness.cli_argv(
        root,
        "--runtime",
        "mock",
        "execute",
        "welcome",
        CONTRACT,
        "--values",
        str(values),
        "--capability",
        "structured_output",
        *extra,
    )


def _read_live(process: subprocess.Popen[bytes]) -> list[tuple[bytes, bool]]:
    """Every stderr chunk with whether the process was still running when it was read."""
    assert process.stderr is not None
    fd = process.stderr.fileno()
    chunks: list[tuple[bytes, bool]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append((data, process.poll() is None))
    return chunks


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_cli_stream_prints_deltas_to_stderr_as_they_arrive(
    welcome_root: Path, harness: Any, as_json: bool
) -> None:
    argv = _execute_argv(harness, welcome_root, "--stream")
    if not as_json:
        argv.remove("--json")
    env = harness.child_env(harness.mock_env(welcome_root, PACE_MS))
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0
    )
    try:
        chunks = _read_live(process)
        stdout = process.communicate(timeout=30)[0].decode()
    finally:
        process.kill()
        process.wait()
    deltas = _scenario_deltas(harness)
    stderr = b"".join(data for data, _ in chunks).decode()
    live = b"".join(data for data, running in chunks if running).decode()
    if as_json:
        events = [json.loads(line) for line in stderr.splitlines()]
        assert [e["text"] for e in events if e["kind"] == "Delta"] == deltas
        assert events[-1]["kind"] == "Complete"
        live_deltas = [json.loads(line) for line in live.splitlines() if '"Delta"' in line]
        assert len(live_deltas) >= len(deltas) // 2, "deltas must arrive while the run goes on"
    else:
        assert stderr.startswith("".join(deltas))
        assert len(chunks) >= len(deltas) // 2, "the text must arrive in pieces, not at the end"
        assert live.startswith("".join(deltas[: len(deltas) // 2]))
    if as_json:
        envelope = json.loads(stdout)
        assert envelope["ok"] is True
        assert len(envelope["stream_events"]) == len(deltas) + 1
    else:  # for people: that envelope rendered (templiqx_cli.human)
        assert stdout.startswith("✓ execute welcome/"), stdout
        assert f"streamed: {len(deltas) + 1} events ({len(deltas)} deltas)" in stdout
    assert process.returncode == 0


def test_cli_envelope_with_and_without_stream_differs_only_by_events(
    welcome_root: Path, harness: Any
) -> None:
    env = harness.mock_env(welcome_root, 0)
    outcomes = []
    for extra in ((), ("--stream",)):
        done = subprocess.run(
            _execute_argv(harness, welcome_root, *extra),
            capture_output=True,
            text=True,
            env=harness.child_env(env),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outcomes.append(json.loads(done.stdout))
    plain, streamed = outcomes
    assert "stream_events" not in plain
    assert streamed.pop("stream_events")
    assert streamed == plain


def test_mcp_sends_coalesced_progress_notifications_before_the_result(
    welcome_root: Path, harness: Any, tmp_path: Path
) -> None:
    """Every delta reaches the client live, in ``_meta`` of coalesced notifications (at most
    one per 50 ms, plus the final one) whose message is for people (issue #28)."""
    env = {"TEMPLIQX_RUNTIME": "mock", **harness.mock_env(welcome_root, 60)}
    arguments: dict[str, Any] = {
        "package": "welcome",
        "contract": CONTRACT,
        "capabilities": ["structured_output"],
        **harness.scenario_request(),
    }
    progress: list[tuple[float, float, float | None, str | None]] = []
    notes: list[tuple[float, dict[str, Any]]] = []
    outcome: dict[str, Any] = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((time.monotonic(), value, total, message))

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            notes.append((message.params.progress, message.params.meta or {}))

    async def drive() -> None:
        async with harness.mcp_session(
            welcome_root, env=env, errlog=tmp_path / "log", message_handler=on_message
        ) as session:
            streamed = await session.call_tool(
                "execute_contract", {**arguments, "stream": True}, progress_callback=on_progress
            )
            outcome["returned"] = time.monotonic()
            outcome["streamed"] = streamed.structured_content
            plain = await session.call_tool("execute_contract", arguments)
            outcome["plain"] = plain.structured_content

    anyio.run(drive)
    deltas = _scenario_deltas(harness)
    notes.sort(key=lambda note: note[0])
    carried = [event for _, meta in notes for event in meta["templiqx/events"]]
    assert carried == [{"kind": "Delta", "text": text} for text in deltas]
    # A structured answer's notes also carry the value so far (`partial`, DECISIONS 22).
    partials = [meta["templiqx/partial"] for _, meta in notes if "templiqx/partial" in meta]
    progress.sort(key=lambda item: item[1])
    values = [value for _, value, _, _ in progress]
    assert values == sorted(set(values)), "progress grows with every notification"
    assert 2 <= len(progress) <= len(deltas) + 1
    assert progress[-1][1] == progress[-1][2] == len(deltas) + 1, "the last one has its total"
    assert all(total is None for _, _, total, _ in progress[:-1])
    assert all(message and not message.startswith("{") for _, _, _, message in progress)
    assert progress[-1][3].startswith("Answer complete: ")
    assert all(at < outcome["returned"] for at, _, _, _ in progress)
    streamed, plain = outcome["streamed"], outcome["plain"]
    events = streamed.pop("stream_events")
    assert [e["kind"] for e in events] == ["Delta"] * len(deltas) + ["Complete"]
    assert "stream_events" not in plain
    assert streamed == plain
    assert streamed["ok"] is True
    assert partials[-1] == streamed["result"]["output"]
