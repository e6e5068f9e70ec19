"""A client that disconnects from a live stream cancels the model call: the upstream
connection closes.

A loopback chat-completions server (the conformance kit's) plays a model that never stops
talking: one content delta every 20 ms. The server runs the OpenAI-compatible runtime against
it; a client opens the SSE stream of ``execute``, reads a few events and closes its socket.
The model server must see its own connection closed soon after — the runtime's call ended,
not left generating for nobody.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from templiqx_conformance.loopback import LoopbackServer, Reply, sse_frame

DIGEST = "/operations/v1/packages/welcome/contracts/account-digest/execute"
KEY = "sk-disconnect-test-0c41"


def test_a_disconnect_cancels_the_model_call_and_closes_upstream(
    harness: Any, packages: Path
) -> None:
    frame = sse_frame({"choices": [{"index": 0, "delta": {"content": "word "}}]})
    with LoopbackServer(Reply.ticking(frame, every_s=0.02)) as model:
        env = {
            "TEMPLIQX_RUNTIME_MODE": "openai",
            "MODEL_BASE_URL": model.base_url,
            "MODEL_API_KEY": KEY,
            "MODEL_ID": "m",
        }
        with harness.serving("--root", str(packages), env=env) as server:
            body = json.dumps({"render": {"inputs": {"account": "acme", "open_tickets": 2}}})
            request = (
                f"POST {DIGEST} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}"
            ).encode()
            client = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            client.sendall(request)
            received = b""
            while received.count(b"event: Delta") < 5:
                chunk = client.recv(65536)
                assert chunk, received
                received += chunk
            assert received.startswith(b"HTTP/1.1 200")
            assert model.wait_for_requests(1)
            (exchange,) = model.exchanges
            assert exchange.outcome == "pending"
            client.close()
            closed_at = time.monotonic()
            assert exchange.wait(10), "the model's connection stayed open"
            assert exchange.client_closed
            assert exchange.client_closed_at is not None
            latency = exchange.client_closed_at - closed_at
            assert latency < 2.0, f"upstream closed {latency:.3f} s after the client left"
            time.sleep(0.3)
            assert len(model.exchanges) == 1  # nothing was retried
        requests = server.events("request")
    assert requests[0]["status"] == 200
    assert requests[0]["operation"] == "execute_contract"
    assert KEY not in "\n".join(server.stdout + server.stderr)


def test_a_disconnect_while_the_model_is_silent_also_closes_upstream(
    harness: Any, packages: Path
) -> None:
    """No delta is flowing, so no write can fail: the server must notice the client leaving
    from the connection itself and cancel the call the model is still thinking about."""
    with LoopbackServer(Reply.silence()) as model:
        env = {
            "TEMPLIQX_RUNTIME_MODE": "openai",
            "MODEL_BASE_URL": model.base_url,
            "MODEL_API_KEY": KEY,
            "MODEL_ID": "m",
        }
        with harness.serving("--root", str(packages), env=env) as server:
            body = json.dumps({"render": {"inputs": {"account": "acme", "open_tickets": 2}}})
            request = (
                f"POST {DIGEST} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}"
            ).encode()
            client = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            client.sendall(request)
            assert client.recv(65536).startswith(b"HTTP/1.1 200")
            assert model.wait_for_requests(1)
            (exchange,) = model.exchanges
            assert exchange.outcome == "pending"
            client.close()
            closed_at = time.monotonic()
            assert exchange.wait(10), "the model's connection stayed open"
            assert exchange.client_closed
            assert exchange.client_closed_at is not None
            latency = exchange.client_closed_at - closed_at
            assert latency < 2.0, f"upstream closed {latency:.3f} s after the client left"
        requests = server.events("request")
    assert [r["status"] for r in requests] == [200]
