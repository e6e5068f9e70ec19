"""templiqx-mcp installed alone: an MCP initialize handshake, tools/list and one tool call."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from templiqx_application import OPERATION_NAMES

SERVER = str(Path(sys.executable).parent / "templiqx-mcp")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


shutil.copytree(Path(os.environ["SMOKE_FIXTURES"]) / "welcome", Path("packages") / "welcome")
server = subprocess.Popen(
    [SERVER, "packages"],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
)
assert server.stdin is not None
assert server.stdout is not None


def send(message: dict[str, Any]) -> None:
    assert server.stdin is not None
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()


def answer(request_id: int) -> dict[str, Any]:
    assert server.stdout is not None
    for line in server.stdout:
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message
    raise SystemExit(f"smoke check failed: no answer to request {request_id}")


try:
    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "smoke", "version": "0"},
            },
        }
    )
    initialized = answer(1)["result"]
    check(initialized["serverInfo"]["name"] == "templiqx-mcp", f"server info: {initialized}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = [tool["name"] for tool in answer(2)["result"]["tools"]]
    check(sorted(tools) == sorted(OPERATION_NAMES), f"one tool per operation: {tools}")
    send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "validate_package", "arguments": {"package": "welcome"}},
        }
    )
    result = answer(3)["result"]
    check(result["isError"] is False and result["structuredContent"]["ok"], f"call: {result}")
finally:
    server.stdin.close()
    try:
        server.wait(timeout=20)
    finally:
        if server.poll() is None:
            server.kill()
print("ok")
