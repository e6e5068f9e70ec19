"""R21: terminal escape injection — nothing a value, a model or a diagnostic carries drives the
terminal of a person reading the human CLI output; ``--json`` stays the envelope itself.

Issue #29: the human CLI printed rendered messages, model deltas and outputs raw, so OSC 52
(write the clipboard), CSI 2J (clear the screen), OSC 0 (the window title) and U+202E reached
the terminal from input values and from a hostile model server. Real ``templiqx`` processes
render hostile values and execute against a loopback model server that streams and answers the
same sequences (the OpenAI runtime, streamed and not); every byte of stdout and stderr without
``--json`` is scanned for raw control and bidirectional characters (there must be none, each
shown escaped instead), and every ``--json`` output must carry the hostile text unchanged.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit
from test_r11_cli import templiqx

SUITE = "R21"
OSC52 = "\x1b]52;c;aGFja2Vk\x07"
CLEAR = "\x1b[2J"
TITLE = "\x1b]0;owned\x07"
RLO = "\u202e"
C1 = "\x9b2J"
HOSTILE = f"acme {OSC52}{CLEAR}{TITLE}{RLO}gpj.exe{C1} done"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")
RENDER = ("render", "welcome", "account-digest", "--capability", "text")
EXECUTE = ("execute", "welcome", "account-digest", "--runtime", "openai")


class _Model(BaseHTTPRequestHandler):
    """A hostile chat-completions server: its answer is :data:`HOSTILE`, streamed or not."""

    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for piece in (HOSTILE[:10], HOSTILE[10:25], HOSTILE[25:]):
                chunk = {
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]
                }
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
            return
        answer = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": HOSTILE},
                    "finish_reason": "stop",
                }
            ]
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def model() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("r21") / "root"
    kit.fresh_welcome(folder)
    return folder


@pytest.fixture(scope="module", autouse=True)
def _figures() -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "human outputs scanned", ">=", 4)
    figures.expect(SUITE, "raw control or bidirectional characters shown", "==", 0)
    figures.expect(SUITE, "--json outputs carrying the hostile text unchanged", ">=", 3)
    figures.expect(SUITE, "tracebacks", "==", 0)


def _values(tmp_path: Path, inputs: dict[str, Any]) -> Path:
    path = tmp_path / "values.json"
    path.write_text(json.dumps({"inputs": inputs}), encoding="utf-8")
    return path


def _human(*args: str, env: dict[bytes, bytes] | None = None, visible: str = "") -> None:
    """Run a human command: scan everything it shows people."""
    done = templiqx(*args, env=env)
    shown = (done.stdout + done.stderr).decode("utf-8", "replace")
    kit.FIGURES.add(SUITE, "human outputs scanned")
    raw = sum(shown.count(char) for char in RAW)
    kit.FIGURES.add(SUITE, "raw control or bidirectional characters shown", raw)
    kit.FIGURES.add(SUITE, "tracebacks", shown.count("Traceback"))
    assert raw == 0, shown[:2000]
    assert "Traceback" not in shown
    if visible:
        assert visible in shown, shown[:2000]


def _machine(*args: str, env: dict[bytes, bytes] | None = None) -> dict[str, Any]:
    done = templiqx("--json", *args, env=env)
    envelope: dict[str, Any] = json.loads(done.stdout)
    return envelope


def _model_env(model: str) -> dict[bytes, bytes]:
    return {b"MODEL_BASE_URL": model.encode(), b"MODEL_API_KEY": b"k", b"MODEL_ID": b"hostile"}


def test_hostile_values_rendered(root: Path, tmp_path: Path) -> None:
    values = _values(tmp_path, {"account": HOSTILE, "open_tickets": 1})
    _human("--root", str(root), *RENDER, "--values", str(values), visible="\\x1b]52;C;")
    envelope = _machine("--root", str(root), *RENDER, "--values", str(values))
    assert HOSTILE.strip().upper() in envelope["result"][1]["content"]  # trim, upper
    kit.FIGURES.add(SUITE, "--json outputs carrying the hostile text unchanged")


def test_a_diagnostic_quoting_hostile_text(root: Path, tmp_path: Path) -> None:
    values = _values(tmp_path, {"account": "a", "open_tickets": 1, f"x{CLEAR}{RLO}": TITLE})
    _human("--root", str(root), *RENDER, "--values", str(values), visible="TQX_VALUE_UNKNOWN")


@pytest.mark.parametrize("stream", [False, True])
def test_a_hostile_model(root: Path, tmp_path: Path, model: str, stream: bool) -> None:
    values = _values(tmp_path, {"account": "acme", "open_tickets": 1})
    args = ["--root", str(root), *EXECUTE, "--values", str(values)]
    if stream:
        args.append("--stream")
    _human(*args, env=_model_env(model), visible="\\x1b]0;owned\\x07")
    envelope = _machine(*args, env=_model_env(model))
    assert envelope["ok"], envelope["diagnostics"]
    assert envelope["result"]["output"] == HOSTILE
    if stream:
        deltas = "".join(e["text"] for e in envelope["stream_events"] if e["kind"] == "Delta")
        assert deltas == HOSTILE
    kit.FIGURES.add(SUITE, "--json outputs carrying the hostile text unchanged")
