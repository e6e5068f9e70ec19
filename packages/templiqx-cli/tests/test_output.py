"""Stream events on stderr: raw text for people, one JSON object per line with --json."""

from __future__ import annotations

import io
import json

from templiqx_cli.output import StreamPrinter
from templiqx_contracts import AdapterDescriptor, Complete, Delta, Failed, ToolCallDelta

COMPLETE = Complete(
    adapter=AdapterDescriptor(id="a", version="1", capabilities=[]),
    request_fingerprint="r",
    output_fingerprint="f" * 8,
    output="hi",
    output_schema_valid=True,
)


def test_people_see_the_text_as_it_streams() -> None:
    sink = io.StringIO()
    printer = StreamPrinter(as_json=False, stream=sink)
    printer(Delta(text="Hel"))
    assert sink.getvalue() == "Hel"
    printer(Delta(text="lo"))
    printer(ToolCallDelta(name="lookup", arguments_fragment='{"q":'))
    printer(ToolCallDelta(name="lookup", arguments_fragment='"x"}'))
    printer(COMPLETE)
    assert sink.getvalue() == (
        'Hello\n[tool lookup] {"q":"x"}\n[complete] output fingerprint ffffffff\n'
    )


def test_failure_closes_the_line() -> None:
    sink = io.StringIO()
    printer = StreamPrinter(as_json=False, stream=sink)
    printer(Delta(text="partial\n"))
    printer(Failed(code="TQX_RUNTIME_CANCELLED", message="cancelled"))
    assert sink.getvalue() == "partial\n[failed] TQX_RUNTIME_CANCELLED: cancelled\n"


def test_json_lines() -> None:
    sink = io.StringIO()
    printer = StreamPrinter(as_json=True, stream=sink)
    for event in (Delta(text="a\nb"), ToolCallDelta(name="t", arguments_fragment="{"), COMPLETE):
        printer(event)
    lines = sink.getvalue().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["Delta", "ToolCallDelta", "Complete"]
    assert json.loads(lines[0]) == {"kind": "Delta", "text": "a\nb"}
