"""R23: huge integers in any JSON input are a diagnostic, never a traceback.

Issue #29: ``--values`` or ``--fixture-output`` holding an integer of more than 4,300 digits
(Python's limit for converting text to ``int``) ended in a traceback. Integers of 4,301 and
100,000 digits, positive and negative, go through every way JSON reaches templiqx: real CLI
processes (``--values``, ``--fixture-output``), the Python API, a JSON render request read by
the core, and a real MCP server (as arguments). Each must be refused with a ``TQX_*``
diagnostic (exit 1 and one line from the CLI; a JSON-RPC error or a refusal from MCP), never
``TQX_INTERNAL`` and never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import reliability_kit as kit
from mcp_pipe import start
from test_r11_cli import templiqx

from templiqx_core import parse_render_request
from templiqx_local import compose

SUITE = "R23"
NUMBERS = {
    "4,301 digits": "9" * 4301,
    "-100,000 digits": "-" + "7" * 100_000,
}
EXECUTE = ("execute", "welcome", "account-digest", "--capability", "text")


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "huge-integer inputs", ">=", 10)
    figures.expect(SUITE, "tracebacks or TQX_INTERNAL", "==", 0)
    yield
    total = figures.get(SUITE, "huge-integer inputs")
    figures.expect(SUITE, "refused with a diagnostic", "==", total)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("r23") / "root"
    kit.fresh_welcome(folder)
    return folder


def _outcome(label: str, refused: bool, text: str) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "huge-integer inputs")
    crashed = "Traceback" in text or "TQX_INTERNAL" in text
    if crashed:
        figures.add(SUITE, "tracebacks or TQX_INTERNAL")
    if refused and not crashed:
        figures.add(SUITE, "refused with a diagnostic")
    assert not crashed, f"{label}: {text[:500]}"
    assert refused, f"{label}: accepted"


@pytest.mark.parametrize("number", list(NUMBERS))
@pytest.mark.parametrize("option", ["--values", "--fixture-output"])
def test_cli_files(root: Path, tmp_path: Path, number: str, option: str) -> None:
    document = tmp_path / "doc.json"
    digits = NUMBERS[number]
    if option == "--values":
        document.write_text('{"inputs": {"account": "a", "open_tickets": ' + digits + "}}")
        done = templiqx("--root", str(root), *EXECUTE, "--values", str(document))
    else:
        document.write_text('{"summary": ' + digits + "}")
        values = tmp_path / "values.json"
        values.write_text('{"inputs": {"account": "a", "open_tickets": 1}}')
        done = templiqx(
            "--root", str(root), *EXECUTE, "--values", str(values), option, str(document)
        )  # fmt: skip
    stderr = done.stderr.decode("utf-8", "replace")
    _outcome(f"cli {option}: {number}", done.code == 1 and stderr.count("\n") == 1, stderr)
    assert "out of range" in stderr, stderr


@pytest.mark.parametrize("number", list(NUMBERS))
def test_python_api_and_json_requests(root: Path, number: str) -> None:
    digits = NUMBERS[number]
    envelope = compose(root).execute_contract(
        "welcome",
        "account-digest",
        inputs={"account": "a", "open_tickets": int(digits) if len(digits) < 4300 else 10**5000},
        capabilities=["text"],
        fixture_output="fine",
    )
    codes = [d.code for d in envelope.diagnostics]
    _outcome(
        f"python: {number}", codes == ["TQX_ARGUMENT_INVALID"], json.dumps(envelope.to_builtins())
    )
    request, diagnostics = parse_render_request('{"inputs": {"n": ' + digits + "}}")
    text = " ".join(d.message for d in diagnostics)
    _outcome(f"render request: {number}", request is None and "out of range" in text, text)
    assert len(text) < 1000  # the number is not echoed whole


def test_mcp_arguments(root: Path, tmp_path: Path) -> None:
    pipe = start(root, {}, tmp_path)
    try:
        for request_id, (number, digits) in enumerate(NUMBERS.items(), start=1):
            arguments = (
                '{"package": "welcome", "contract": "account-digest", "capabilities": ["text"], '
                '"inputs": {"account": "a", "open_tickets": ' + digits + "}}"
            )
            message = (
                '{"jsonrpc": "2.0", "id": ' + str(request_id) + ', "method": "tools/call", '
                '"params": {"name": "compile_contract", "arguments": ' + arguments + "}}\n"
            )
            pipe.send(message.encode())
            answer = pipe.wait_for(request_id, 60)
            assert answer is not None, f"{number}: no answer"
            refused = (
                "error" in answer
                or answer["result"].get("isError") is True
                or (answer["result"]["structuredContent"]["ok"] is False)
            )
            _outcome(f"mcp: {number}", refused, json.dumps(answer)[:2000])
        assert pipe.wait_for(pipe.request("ping"), 10) is not None
    finally:
        pipe.close()
    stderr = pipe.stderr.read_text(errors="replace")
    assert "Traceback" not in stderr
