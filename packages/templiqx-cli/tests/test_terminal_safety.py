"""Issue #29: nothing a value, a model or a file carries drives the terminal of a person reading
the human output; ``--json`` stays the envelope byte for byte."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from templiqx_cli.app import run
from templiqx_cli.output import StreamPrinter
from templiqx_cli.terminal import safe_data, terminal_safe
from templiqx_contracts import Delta, Failed, ToolCallDelta

OSC52 = "\x1b]52;c;aGFja2Vk\x07"  # write the clipboard
CLEAR = "\x1b[2J"  # clear the screen
TITLE = "\x1b]0;owned\x07"  # set the window title
RLO = "\u202e"  # right-to-left override
C1_CSI = "\x9b2J"  # the 8-bit CSI
HOSTILE = f"acme{OSC52}{CLEAR}{TITLE}{RLO}gpj.exe{C1_CSI}"
DANGEROUS = ("\x1b", "\x07", "\u202e", "\x9b")


def test_every_terminal_control_is_escaped_visibly() -> None:
    shown = terminal_safe(HOSTILE + "\ttab\nnew line\r\x7f\u2066\u200f")
    assert not any(char in shown for char in DANGEROUS)
    assert shown == (
        "acme\\x1b]52;c;aGFja2Vk\\x07\\x1b[2J\\x1b]0;owned\\x07\\u202egpj.exe\\x9b2J"
        "\ttab\nnew line\\x0d\\x7f\\u2066\\u200f"
    )
    assert terminal_safe("plain text, ünïcode, 漢字") == "plain text, ünïcode, 漢字"
    assert safe_data({"k\x1b": [RLO, 1, None]}) == {"k\\x1b": ["\\u202e", 1, None]}


def test_stream_events_for_people_are_escaped() -> None:
    sink = io.StringIO()
    printer = StreamPrinter(as_json=False, stream=sink)
    printer(Delta(text=HOSTILE))
    printer(ToolCallDelta(name=f"t{CLEAR}", arguments_fragment=f'{{"x": "{OSC52}"}}'))
    printer(Failed(code="TQX_RUNTIME_PERMANENT", message=f"model said {TITLE}"))
    assert not any(char in sink.getvalue() for char in DANGEROUS)
    assert "\\x1b]52;c;aGFja2Vk\\x07" in sink.getvalue()
    raw = io.StringIO()
    StreamPrinter(as_json=True, stream=raw)(Delta(text=HOSTILE))
    assert json.loads(raw.getvalue())["text"] == HOSTILE  # --json: the event itself


def test_rendered_values_and_diagnostics_are_escaped_and_json_is_unchanged(
    packages_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"inputs": {"account": HOSTILE, "open_tickets": 2}}))
    base = ["--root", str(packages_root)]
    render = ["render", "welcome", "account-digest", "--capability", "text", "--values"]
    assert run([*base, *render, str(values)]) == 0
    human = capsys.readouterr()
    assert not any(char in human.out + human.err for char in DANGEROUS)
    assert "\\x1b]52;C;AGFJA2VK\\x07" in human.out  # shown (upper-cased), not obeyed
    assert run([*base, "--json", *render, str(values)]) == 0
    machine = json.loads(capsys.readouterr().out)
    assert OSC52.upper() in machine["result"][1]["content"]  # the value itself (trim, upper)
    # a diagnostic quoting a hostile value: escaped too
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"inputs": {"account": 1, f"x{CLEAR}": TITLE}}))
    assert run([*base, *render, str(bad)]) == 2
    refused = capsys.readouterr()
    assert "TQX_VALUE_UNKNOWN" in refused.out
    assert not any(char in refused.out + refused.err for char in DANGEROUS)
