"""Printing envelopes and stream events.

The envelope goes to stdout as one JSON document (pretty, or compact with ``--json``); nothing
else is ever written to stdout. Without ``--json``, the envelope's diagnostics are also shown on
stderr in their human form (``CODE severity pointer: message`` and the help line), so a person
does not have to read them out of JSON: then every failed eval case with its own diagnostics,
then the command line's hints (:mod:`templiqx_cli.hints`). None of this changes the envelope.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from templiqx_contracts import (
    Complete,
    Delta,
    Diagnostic,
    Failed,
    OperationEnvelope,
    StreamEvent,
    TestCaseResult,
    TestReport,
    ToolCallDelta,
    ToolCallSplitter,
    encode_stream_event,
    is_tool_answer,
)

__all__ = [
    "StreamPrinter",
    "dump_json",
    "exit_code",
    "failed_cases",
    "print_envelope",
    "render_diagnostic",
]


def dump_json(data: Any, *, compact: bool) -> str:
    """``data`` as compact or pretty (2-space) JSON with raw UTF-8."""
    if compact:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(data, indent=2, ensure_ascii=False)


def exit_code(envelope: OperationEnvelope) -> int:
    """0 when the envelope is ok, 2 when it is not."""
    return 0 if envelope.ok else 2


def render_diagnostic(diagnostic: Diagnostic, files: Mapping[str, str] | None = None) -> str:
    """``diagnostic.render()``, locating it in the user's own file when ``files`` maps its file.

    ``files`` maps a stored file's label (``welcome/contracts/bad.yaml``) to the host file the
    user gave for it (``put``'s SOURCE): the line and column are in that text.
    """
    shown = files.get(diagnostic.file) if files and diagnostic.file else None
    if shown is None:
        return diagnostic.render()
    at = f"  at {diagnostic.file}"
    return "\n".join(
        f"  at {shown}{line[len(at) :]} (the contract text given for {diagnostic.file})"
        if line.startswith(at)
        else line
        for line in diagnostic.render().split("\n")
    )


def failed_cases(envelope: OperationEnvelope) -> list[TestCaseResult]:
    """The failed eval cases of a ``test_package`` or ``run_eval`` envelope."""
    result = envelope.result
    cases = result.cases if isinstance(result, TestReport) else [result]
    return [case for case in cases if isinstance(case, TestCaseResult) and not case.passed]


def _case_lines(case: TestCaseResult, files: Mapping[str, str] | None) -> list[str]:
    if case.fixture_id:
        title = f"failed case {case.contract_id}/{case.fixture_id}:"
    else:
        title = f"failed contract {case.contract_id} (its fixtures did not run):"
    lines = [title]
    for diagnostic in case.diagnostics:
        lines.extend("  " + line for line in render_diagnostic(diagnostic, files).split("\n"))
    return lines


def print_envelope(
    envelope: OperationEnvelope,
    *,
    as_json: bool,
    hints: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> int:
    """Print ``envelope`` (and, for people, its diagnostics and ``hints``); return the exit code.

    ``files``: see :func:`render_diagnostic`.
    """
    sys.stdout.write(dump_json(envelope.to_builtins(), compact=as_json) + "\n")
    sys.stdout.flush()
    if not as_json and (envelope.diagnostics or hints):
        errors = sum(1 for d in envelope.diagnostics if d.severity == "error")
        status = "ok" if envelope.ok else "not ok"
        lines = [
            f"templiqx: {envelope.operation} {status}: {errors} error(s), "
            f"{len(envelope.diagnostics) - errors} other diagnostic(s)"
        ]
        lines.extend(render_diagnostic(d, files) for d in envelope.diagnostics)
        for case in failed_cases(envelope):
            lines.extend(_case_lines(case, files))
        lines.extend(f"hint: {hint}" for hint in hints)
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
    return exit_code(envelope)


class StreamPrinter:
    """A stream sink writing each event to ``stream`` the moment it arrives.

    For people: delta text as is; each tool call on its own line, its argument fragments after
    a ``[tool NAME]`` marker (a new call starts when the name changes or the previous call's
    arguments are complete, see :class:`~templiqx_contracts.ToolCallSplitter`); and a closing
    line for the terminal event, naming the tools a tool-call answer calls. With ``as_json``:
    one compact JSON object per event.
    """

    def __init__(self, *, as_json: bool, stream: TextIO | None = None) -> None:
        self._as_json = as_json
        self._stream = stream if stream is not None else sys.stderr
        self._calls = ToolCallSplitter()
        self._column = 0

    def _write(self, text: str) -> None:
        if text:
            self._stream.write(text)
            self._stream.flush()
            newline = text.rfind("\n")
            self._column = len(text) - newline - 1 if newline >= 0 else self._column + len(text)

    def _line_break(self) -> None:
        if self._column:
            self._write("\n")

    def __call__(self, event: StreamEvent) -> None:
        if self._as_json:
            self._write(encode_stream_event(event).decode("utf-8") + "\n")
            return
        if isinstance(event, Delta):
            self._calls = ToolCallSplitter()
            self._write(event.text)
        elif isinstance(event, ToolCallDelta):
            if self._calls.feed(event.name, event.arguments_fragment):
                self._line_break()
                self._write(f"[tool {event.name}] ")
            self._write(event.arguments_fragment)
        elif isinstance(event, Complete):
            self._line_break()
            self._write(f"[complete] {_called(event.output)}output fingerprint ")
            self._write(f"{event.output_fingerprint}\n")
        elif isinstance(event, Failed):
            self._line_break()
            self._write(f"[failed] {event.code}: {event.message}\n")


def _called(output: Any) -> str:
    """``"2 tool calls (lookup_account, open_ticket); "`` for a tool-call answer, else ``""``."""
    if not is_tool_answer(output) or not isinstance(output["tool_calls"], list):
        return ""
    calls = output["tool_calls"]
    names = [str(call.get("name")) if isinstance(call, dict) else "?" for call in calls]
    noun = "tool call" if len(calls) == 1 else "tool calls"
    return f"{len(calls)} {noun} ({', '.join(names)}); "
