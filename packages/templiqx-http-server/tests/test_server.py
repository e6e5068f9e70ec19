"""The server as a process: drain on SIGTERM, readiness reasons, log lines, workers."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Any

from templiqx_http import SseDecoder

EXECUTE = "/operations/v1/packages/welcome/contracts/onboarding-summary/execute"
TOKEN = "tqx-server-token-3b9c0d"
MODEL_KEY = "sk-server-model-key-51f0"
CANARY = "canary-body-7e22"


def _values(harness: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((harness.SCENARIO / "request.json").read_text())
    return data


def test_sigterm_drains_then_cancels_and_every_stream_ends_properly(
    harness: Any, packages: Path
) -> None:
    env = {
        "TEMPLIQX_RUNTIME_MODE": "mock",
        "TEMPLIQX_MOCK_SCENARIO": str(packages / "welcome/scenarios/stream-vip/manifest.json"),
        "TEMPLIQX_MOCK_PACE_MS": "150",
    }
    with harness.serving("--root", str(packages), "--grace", "1", env=env) as server:
        connection = server.connection()
        body = json.dumps({"render": _values(harness)})
        connection.request(
            "POST",
            EXECUTE,
            body=body,
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        response = connection.getresponse()
        assert response.status == 200
        decoder = SseDecoder()
        messages = decoder.feed(response.read1(65536))
        while not messages:
            messages += decoder.feed(response.read1(65536))
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        during_grace = 0
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            fresh = decoder.feed(chunk)
            during_grace += sum(
                m.event == "Delta" and time.monotonic() - signalled < 0.9 for m in fresh
            )
            messages += fresh
        names = [m.event for m in messages if m.event != "partial"]
        assert names[-2:] == ["Failed", "envelope"], names
        failed = next(m for m in messages if m.event == "Failed")
        assert failed.json()["code"] == "TQX_RUNTIME_CANCELLED"
        assert messages[-1].json()["ok"] is False
        assert during_grace >= 2, "the stream did not go on during the grace period"
        with socket.socket() as probe:  # no new connections once draining
            probe.settimeout(2)
            assert probe.connect_ex(("127.0.0.1", server.port)) != 0
        assert server.process.wait(30) == 0
        time.sleep(0.2)
        assert server.events("shutdown")[0]["grace_s"] == 1.0
        assert server.events("drain")[0]["cancelled"] == 1
        assert server.events("shutdown_complete")


def test_readiness_names_what_is_missing_and_the_rest_still_serves(
    harness: Any, packages: Path
) -> None:
    env = {"TEMPLIQX_RUNTIME_MODE": "openai", "MODEL_API_KEY": MODEL_KEY}
    with harness.serving("--root", str(packages), env=env) as server:
        warning = server.wait_for("not_ready")
        assert "MODEL_ID" in warning["reason"]
        for path in ("/operations/v1/health/ready", "/readyz"):
            status, headers, body = server.request("GET", path)
            assert status == 503, body
            ready = json.loads(body)
            assert ready["status"] == "not_ready"
            assert ready["api_version"] == "templiqx/v1alpha1"
            assert any("MODEL_ID" in reason for reason in ready["reasons"])
            assert ready["request_id"] == headers["x-request-id"]
        assert server.request("GET", "/healthz")[0] == 200
        compiled = server.request(
            "POST",
            EXECUTE.replace("execute", "compile"),
            {"render": _values(harness), "capabilities": ["structured_output"]},
        )
        assert compiled[0] == 200
        failed = server.request("POST", EXECUTE, {"render": _values(harness)})
        assert failed[0] == 422
        assert json.loads(failed[2])["diagnostics"][0]["code"] == "TQX_RUNTIME_PERMANENT"
        events = {"Accept": "text/event-stream"}
        streamed = server.request("POST", EXECUTE, {"render": _values(harness)}, events)
        assert streamed[0] == 422, streamed  # before any stream: JSON, not 200 then Failed
        assert streamed[1]["content-type"] == "application/json"
        envelope = json.loads(streamed[2])
        assert envelope["diagnostics"][0]["code"] == "TQX_RUNTIME_PERMANENT"
        assert "MODEL_ID" in envelope["diagnostics"][0]["message"]
        assert envelope["diagnostics"][0]["help"]
        assert envelope["stream_events"][-1]["kind"] == "Failed"
        shutil.rmtree(packages)
        status, _, body = server.request("GET", "/operations/v1/health/ready")
        assert status == 503
        assert any("does not exist" in reason for reason in json.loads(body)["reasons"])
    assert MODEL_KEY not in "\n".join(server.stdout + server.stderr)


def test_every_log_line_is_json_and_none_carries_a_secret(harness: Any, packages: Path) -> None:
    env = {"TEMPLIQX_HTTP_TOKEN": TOKEN, "MODEL_API_KEY": MODEL_KEY}
    with harness.serving("--root", str(packages), env=env) as server:
        auth = {"Authorization": f"Bearer {TOKEN}", "Cookie": f"c={CANARY}"}
        assert server.request("GET", "/operations/v1/catalog", headers=auth)[0] == 200
        created = server.request(
            "POST", "/operations/v1/packages", {"name": "made", "version": "0.1.0"}, auth
        )
        assert created[0] == 200
        wrong = server.request(
            "PATCH",
            "/operations/v1/packages/made",
            {"description": CANARY},
            {"Authorization": f"Bearer {CANARY}", "If-Match": CANARY},
        )
        assert wrong[0] == 401
        listed = server.request(
            "GET", f"/operations/v1/artifacts?package=welcome&prefix={CANARY}", headers=auth
        )
        assert listed[0] == 200
        assert server.request("GET", "/operations/v1/catalog")[0] == 401
    lines = server.stdout + server.stderr
    assert lines
    for line in server.stdout:
        json.loads(line)
    text = "\n".join(lines)
    for secret in (TOKEN, MODEL_KEY, CANARY):
        assert secret not in text, secret
    requests = server.events("request")
    assert [r["status"] for r in requests] == [200, 200, 401, 200, 401]
    assert all(r["request_id"].startswith("tqx-") for r in requests)
    start = server.events("start")[0]
    assert start["auth"] == "bearer"
    assert start["readiness_class"] == "local-demo-deterministic-fake"
    assert any(
        "MODEL_API_KEY is set but ignored" in w["warning"] for w in server.events("config_warning")
    )


def test_two_workers_serve_and_stop_cleanly(harness: Any, packages: Path) -> None:
    with harness.serving("--root", str(packages), "--workers", "2") as server:
        deadline = time.monotonic() + 60
        while server.request("GET", "/operations/v1/health/ready")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        for _ in range(10):
            status, _, body = server.request("GET", "/operations/v1/packages")
            assert status == 200
            assert [p["package"] for p in json.loads(body)["result"]] == ["welcome"]
        assert server.stop() == 0


def test_the_listening_socket_says_tcp_so_nagle_is_off_on_every_connection(
    packages: Path,
) -> None:
    """asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP, and accepted
    sockets inherit the listener's: with protocol 0 every response written as headers then
    body waited for the client's delayed ACK (40 ms a request)."""
    import asyncio

    from templiqx_http_server.config import ServerConfig
    from templiqx_http_server.serve import bind

    sock = bind(ServerConfig.resolve({"addr": "127.0.0.1:0", "root": str(packages)}, {}))
    try:
        assert sock.proto == socket.IPPROTO_TCP

        async def accepted_nodelay() -> int:
            found: list[int] = []

            async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                client = writer.get_extra_info("socket")
                found.append(client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                writer.close()

            server = await asyncio.start_server(on_client, sock=sock)
            port = sock.getsockname()[1]
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            while not found:
                await asyncio.sleep(0.01)
            writer.close()
            server.close()
            return found[0]

        assert asyncio.run(accepted_nodelay()) != 0
    finally:
        sock.close()
