"""Stream events on stderr: raw text for people, one JSON object per line with --json."""

from __future__ import annotations

import io
import json

import msgspec

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


def test_each_tool_call_gets_its_own_line_and_the_closing_line_names_them() -> None:
    sink = io.StringIO()
    printer = StreamPrinter(as_json=False, stream=sink)
    # two calls of the same tool, then another: a call ends when its arguments are complete
    for fragment in ('{"email": "a@x', '.io"}', '{"email":', ' "b}{@x.io"}'):
        printer(ToolCallDelta(name="lookup_account", arguments_fragment=fragment))
    printer(ToolCallDelta(name="open_ticket", arguments_fragment='{"subject": "x"}'))
    calls = {
        "tool_calls": [
            {"id": "1", "name": "lookup_account", "arguments": {"email": "a@x.io"}},
            {"id": "2", "name": "lookup_account", "arguments": {"email": "b}{@x.io"}},
            {"id": "3", "name": "open_ticket", "arguments": {"subject": "x"}},
        ]
    }
    printer(Complete.of(msgspec.structs.replace(COMPLETE.receipt, output=calls)))
    assert sink.getvalue().splitlines() == [
        '[tool lookup_account] {"email": "a@x.io"}',
        '[tool lookup_account] {"email": "b}{@x.io"}',
        '[tool open_ticket] {"subject": "x"}',
        "[complete] 3 tool calls (lookup_account, lookup_account, open_ticket); "
        "output fingerprint ffffffff",
    ]
