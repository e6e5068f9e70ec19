"""The server on the wire: newline-delimited JSON-RPC over stdio, robust to garbage.

These tests talk raw JSON lines to ``python -m templiqx_mcp`` (no client library), to pin what
any MCP client sees: stdout carries only protocol messages, malformed input never stops the
server, and closing stdin ends the process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's Python settings plus ``extra`` (no inherited templiqx settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPLIQX_")}
    env.update(extra or {})
    return env


MALFORMED = [
    b"not json at all\n",
    b"{\n",
    b'{"jsonrpc":"2.0"}\n',
    b"[1,2,3]\n",
    b'{"id":5}\n',
    b"\xff\xfe\xfd\n",
    b'{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{}}\n',
    b'{"jsonrpc":"2.0","id":7,"method":"no/such/method"}\n',
    b"\n",
    b'"just a string"\n',
]


def test_a_thousand_malformed_lines_leave_the_server_answering(
    packages_root: Path, tmp_path: Path, raw_server: Any
) -> None:
    server = raw_server([str(packages_root)], tmp_path)
    try:
        init = server.initialize("2024-11-05")
        assert init["result"]["protocolVersion"] == "2024-11-05"
        assert init["result"]["serverInfo"]["name"] == "templiqx-mcp"
        for index in range(1000):
            server.stdin.write(MALFORMED[index % len(MALFORMED)])
        server.stdin.flush()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 42,
                "method": "tools/call",
                "params": {"name": "discover_packages", "arguments": {}},
            }
        )
        reply = server.answer(42)
        assert reply["result"]["isError"] is False
        assert reply["result"]["structuredContent"]["operation"] == "discover_packages"
    finally:
        code = server.close()
    assert code == 0, "closing stdin ends the server cleanly"
    answers = 0
    for line in server.raw:
        value = json.loads(line)
        for message in value if isinstance(value, list) else [value]:  # a batch: an array
            assert message["jsonrpc"] == "2.0"
            assert "id" in message or "method" in message
        answers += 1
    # every line but the blank ones gets exactly one answer (issue #28), besides init and 42
    sent = sum(1 for index in range(1000) if MALFORMED[index % len(MALFORMED)].strip())
    assert answers == sent + 2


def test_unknown_tool_over_the_wire_is_error_32602(
    packages_root: Path, tmp_path: Path, raw_server: Any
) -> None:
    server = raw_server([str(packages_root)], tmp_path)
    try:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "nope", "arguments": {}},
            }
        )
        reply = server.answer(2)
    finally:
        server.close()
    assert reply["error"]["code"] == -32602
    assert "result" not in reply


def _start_and_wait(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "templiqx_mcp", *args],
        input=b"",
        capture_output=True,
        cwd=cwd,
        env=server_env(env),
        timeout=60,
        check=False,
    )


def test_a_root_that_cannot_be_used_exits_1(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("x")
    done = _start_and_wait([str(not_a_folder)], tmp_path)
    assert done.returncode == 1
    assert done.stdout == b""
    message = done.stderr.decode()
    assert message.startswith("templiqx-mcp: compose local Templiqx service: ")
    assert "is a file, not a directory" in message
    assert message.endswith(" [TQX_PATH_INVALID]\n")


def test_an_unknown_runtime_exits_1_naming_the_installed_ones(
    packages_root: Path, tmp_path: Path
) -> None:
    done = _start_and_wait([str(packages_root)], tmp_path, {"TEMPLIQX_RUNTIME": "warp-drive"})
    assert done.returncode == 1
    message = done.stderr.decode()
    assert "unknown runtime 'warp-drive'" in message
    assert "fake" in message


def test_usage(tmp_path: Path) -> None:
    helped = _start_and_wait(["--help"], tmp_path)
    assert helped.returncode == 0
    text = helped.stdout.decode()
    assert text.startswith("usage: templiqx-mcp [-h] [-V] [--root DIR] [--workspace DIR]")
    assert "``" not in text, "plain text, not reStructuredText"
    for name in ("TEMPLIQX_PACKAGES_ROOT", "TEMPLIQX_WORKSPACE_ROOT", "TEMPLIQX_RUNTIME"):
        assert f"\n  {name} " in text
    config = text[text.index("{") : text.rindex("}") + 1]
    server = json.loads(config)["mcpServers"]["templiqx"]
    assert server["command"].endswith("/templiqx-mcp")
    assert server["args"] == ["--root", "/path/to/packages"]
    assert list(tmp_path.iterdir()) == [], "--help composes nothing"
