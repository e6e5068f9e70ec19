"""Printing envelopes and stream events.

The envelope goes to stdout: with ``--json`` as one compact JSON document (the machine form,
the same on every surface); without it rendered for people by :mod:`templiqx_cli.human` (a
summary line, the result as tables or text, the fingerprints, each diagnostic with its help, and
the command line's hints), every character that could drive a terminal escaped visibly
(:mod:`templiqx_cli.terminal`). Stream events go to stderr as they arrive (:class:`StreamPrinter`);
for people at a terminal, a structured answer is drawn growing in place instead of its raw
delta text (:func:`stream_operation`, :mod:`templiqx_cli.human.live`). None of this changes the
envelope.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from templiqx_cli.snippets import snippet_lines, source_text
from templiqx_cli.terminal import safe_data, terminal_safe
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

if TYPE_CHECKING:
    from templiqx_application import ContractStream, TempliqxService

__all__ = [
    "StreamPrinter",
    "dump_json",
    "exit_code",
    "failed_cases",
    "print_envelope",
    "render_diagnostic",
    "stream_operation",
]

# The arguments of a streamed execute_contract that stream_contract takes as keywords.
_STREAM_ARGUMENTS = frozenset(
    {"package", "contract", "inputs", "context", "capabilities", "fixture_output", "stream"}
)


def dump_json(data: Any, *, compact: bool) -> str:
    """``data`` as compact or pretty (2-space) JSON with raw UTF-8."""
    if compact:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(data, indent=2, ensure_ascii=False)


def exit_code(envelope: OperationEnvelope) -> int:
    """0 when the envelope is ok, 2 when it is not."""
    return 0 if envelope.ok else 2


def render_diagnostic(diagnostic: Diagnostic, files: Mapping[str, str] | None = None) -> str:
    """``diagnostic.render()``, with the source line it points at, underlined, made terminal-safe
    (:func:`~templiqx_cli.terminal.terminal_safe`: file text and messages carry what users and
    models wrote).

    ``files`` maps a stored file's label (``welcome/contracts/bad.yaml``) to the host file the
    user gave for it (``put``'s SOURCE): the line and column are in that text, and the ``at``
    line names that file. A :class:`~templiqx_cli.snippets.SourceFiles` also knows the
    packages root, where every other label's text is read for the snippet
    (:mod:`templiqx_cli.snippets`).
    """
    lines = diagnostic.render().split("\n")
    label = diagnostic.file
    if label is None:
        return terminal_safe("\n".join(lines))
    shown = files.get(label) if files else None
    at = f"  at {label}"
    text = source_text(files, label) if diagnostic.span is not None else None
    snippet = snippet_lines(diagnostic, text) if text is not None else []
    out: list[str] = []
    for line in lines:
        if line.startswith(at):
            if shown is not None:
                line = f"  at {shown}{line[len(at) :]} (the contract text given for {label})"
            out.append(line)
            out.extend(snippet)
        else:
            out.append(line)
    return terminal_safe("\n".join(out))


def failed_cases(envelope: OperationEnvelope) -> list[TestCaseResult]:
    """The failed eval cases of a ``test_package`` or ``run_eval`` envelope."""
    result = envelope.result
    cases = result.cases if isinstance(result, TestReport) else [result]
    return [case for case in cases if isinstance(case, TestCaseResult) and not case.passed]


def print_envelope(
    envelope: OperationEnvelope,
    *,
    as_json: bool,
    hints: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
    arguments: Mapping[str, Any] | None = None,
    root: str | None = None,
) -> int:
    """Print ``envelope`` on stdout, compact JSON or rendered for people; return the exit code.

    For people: ``hints`` end the rendering, ``files`` locates diagnostics in the user's own
    files (see :func:`render_diagnostic`), ``arguments`` and ``root`` name what was worked on.
    """
    if as_json:
        sys.stdout.write(dump_json(envelope.to_builtins(), compact=True) + "\n")
    else:
        # Imported here: the renderers call render_diagnostic from this module.
        from templiqx_cli.human import View, render, style_for

        view = View(
            data=safe_data(envelope.to_builtins()),
            style=style_for(sys.stdout, os.environ),
            envelope=envelope,
            arguments=safe_data(dict(arguments or {})),
            files=files or {},
            hints=[terminal_safe(hint) for hint in hints],
            root=terminal_safe(root) if root is not None else None,
        )
        sys.stdout.write(render(view))
    sys.stdout.flush()
    return exit_code(envelope)


class StreamPrinter:
    """A stream sink writing each event to ``stream`` the moment it arrives.

    For people (every text made terminal-safe, :mod:`templiqx_cli.terminal`): delta text as it
    comes; each tool call on its own line, its argument fragments after
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
            self._write(terminal_safe(event.text))
        elif isinstance(event, ToolCallDelta):
            if self._calls.feed(event.name, event.arguments_fragment):
                self._line_break()
                self._write(f"[tool {terminal_safe(event.name)}] ")
            self._write(terminal_safe(event.arguments_fragment))
        elif isinstance(event, Complete):
            self._line_break()
            self._write(f"[complete] {terminal_safe(_called(event.output))}output fingerprint ")
            self._write(f"{event.output_fingerprint}\n")
        elif isinstance(event, Failed):
            self._line_break()
            self._write(terminal_safe(f"[failed] {event.code}: {event.message}") + "\n")


def _called(output: Any) -> str:
    """``"2 tool calls (lookup_account, open_ticket); "`` for a tool-call answer, else ``""``."""
    if not is_tool_answer(output) or not isinstance(output["tool_calls"], list):
        return ""
    calls = output["tool_calls"]
    names = [str(call.get("name")) if isinstance(call, dict) else "?" for call in calls]
    noun = "tool call" if len(calls) == 1 else "tool calls"
    return f"{len(calls)} {noun} ({', '.join(names)}); "


def stream_operation(
    service: TempliqxService, operation: str, arguments: dict[str, Any], *, as_json: bool
) -> tuple[OperationEnvelope, bool]:
    """Run a streamed operation, its events on stderr as they arrive; the envelope, and whether
    Ctrl-C was pressed (which cancels the runtime call).

    For people, when stderr is a terminal that can redraw (:func:`~templiqx_cli.human.live.
    live_display`), an ``execute_contract`` of a structured-output contract shows its answer
    growing in place; everywhere else each event is printed by :class:`StreamPrinter`.
    """
    from templiqx_cli.interrupt import run_interruptible

    printer = StreamPrinter(as_json=as_json)
    if not as_json and operation == "execute_contract" and set(arguments) <= _STREAM_ARGUMENTS:
        from templiqx_cli.human.live import live_display

        if live_display(sys.stderr, os.environ):
            options = {name: value for name, value in arguments.items() if name != "stream"}
            return run_interruptible(
                lambda cancel: _shown_live(
                    service.stream_contract(**options, cancel=cancel), printer
                )
            )
    return run_interruptible(
        lambda cancel: service.invoke(operation, arguments, sink=printer, cancel=cancel)
    )


def _shown_live(run: ContractStream, printer: StreamPrinter) -> OperationEnvelope:
    """Iterate ``run``: a structured answer drawn live, other events through ``printer``.

    A display that fails (stderr gone) cancels the call, as a failing sink does; the
    envelope says why.
    """
    from templiqx_cli.human import style_for
    from templiqx_cli.human.live import LiveAnswer

    with run:
        view = run.partial
        answer = LiveAnswer(sys.stderr, style_for(sys.stderr, os.environ))
        try:
            for event in run:
                if view is not None and isinstance(event, Delta):
                    answer.update(view)
                    continue
                if view is not None and isinstance(event, (Complete, Failed)):
                    answer.finish(view)
                else:
                    answer.settle()
                printer(event)
        except Exception as exc:  # the display's own failure: stop the model, keep the envelope
            run.close(exc)
    return run.envelope
