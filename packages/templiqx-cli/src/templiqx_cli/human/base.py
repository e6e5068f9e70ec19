"""The renderer: one envelope as lines for people, in small steps a subclass overrides.

A rendering is, top to bottom::

    ✓ validate welcome: 2 contracts valid        <- headline: mark, command, subject, outcome
      id                  version  fingerprint   <- body: the result (tables, text, JSON)
      ...
      fingerprints:                              <- the envelope's fingerprints (CAS tokens)
        package  596d6df7...

    TQX_... error /pointer: message             <- each diagnostic (render_diagnostic)
      help: ...

    hint: ...                                    <- what only this command line can suggest

:class:`Renderer` implements each step generically; an operation's renderer overrides the steps
it has something to say in (usually :meth:`Renderer.summary` and :meth:`Renderer.body`), the
way click's ``Command.format_help`` is split into ``format_*`` steps. Without a renderer of its
own, an operation's result is shown as indented JSON (:class:`Renderer` itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from templiqx_cli.human.blocks import count, indented, json_lines
from templiqx_cli.human.style import Style
from templiqx_cli.layout import LAYOUTS, MERGED
from templiqx_cli.output import render_diagnostic
from templiqx_contracts import Diagnostic, OperationEnvelope

__all__ = ["Renderer", "View", "command_of"]


def command_of(operation: str) -> str:
    """The CLI command that runs ``operation`` (``validate_package`` → ``validate``)."""
    for merged in MERGED:
        if operation in (merged.short, merged.long):
            return merged.command
    layout = LAYOUTS.get(operation)
    return layout.command if layout is not None else operation.replace("_", "-")


@dataclass(frozen=True)
class View:
    """What a renderer may show: the envelope, and what this command line knows about it."""

    data: Mapping[str, Any]
    """The envelope as plain JSON data: exactly what ``--json`` prints."""
    style: Style
    envelope: OperationEnvelope | None = None
    """The typed envelope, for its diagnostics (``None`` for the shipped catalog snapshot)."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The operation's arguments, as the command line built them."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Stored file label -> the host file the user gave for it (see ``render_diagnostic``)."""
    hints: Sequence[str] = ()
    root: str | None = None
    """The packages root as given on the command line."""
    answer_shown: bool = False
    """The answer was already drawn on this terminal as it streamed (not repeated)."""

    @property
    def ok(self) -> bool:
        return bool(self.data.get("ok"))

    @property
    def operation(self) -> str:
        return str(self.data.get("operation", ""))

    @property
    def result(self) -> Any:
        """The result, or ``None`` when the envelope has none."""
        return self.data.get("result")

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return list(self.envelope.diagnostics) if self.envelope is not None else []

    def argument(self, name: str) -> str:
        """A string argument, or ``""``."""
        value = self.arguments.get(name)
        return value if isinstance(value, str) else ""


def severity_counts(diagnostics: Sequence[Diagnostic]) -> str:
    """``2 errors, 1 warning`` (only the severities present); ``""`` for none."""
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = sum(1 for d in diagnostics if d.severity == "warning")
    notes = len(diagnostics) - errors - warnings
    parts = []
    if errors:
        parts.append(count(errors, "error"))
    if warnings:
        parts.append(count(warnings, "warning"))
    if notes:
        parts.append(count(notes, "note"))
    return ", ".join(parts)


class Renderer:
    """Renders one operation's envelope for people. Override the steps; keep :meth:`render`."""

    command: str = ""
    """The command named in the headline (default: the CLI command of the operation)."""

    def render(self, view: View) -> list[str]:
        """All the lines, top to bottom."""
        lines = self.headline(view)
        if "result" in view.data:
            lines.extend(indented(self.body(view)))
        lines.extend(indented(self.fingerprints(view)))
        for block in self.diagnostics(view):
            lines.extend(["", *block])
        hints = self.hints(view)
        if hints:
            lines.extend(["", *hints])
        return lines

    # -- the headline -------------------------------------------------------------------------

    def headline(self, view: View) -> list[str]:
        """``✓ command subject: outcome``."""
        title = " ".join(part for part in (self.title(view), self.subject(view)) if part)
        return [f"{view.style.mark(view.ok)} {view.style.heading(title)}: {self.outcome(view)}"]

    def title(self, view: View) -> str:
        return self.command or command_of(view.operation)

    def subject(self, view: View) -> str:
        """What the operation worked on: ``package``, ``package/contract`` …"""
        parts = [view.argument(name) for name in ("package", "contract", "fixture_id")]
        return "/".join(part for part in parts if part)

    def outcome(self, view: View) -> str:
        """The summary when ok (plus any warnings), else what went wrong, counted."""
        problems = severity_counts(view.diagnostics)
        if not view.ok:
            return view.style.bad(problems or "not ok")
        summary = self.summary(view)
        return f"{summary}, {view.style.warn(problems)}" if problems else summary

    def summary(self, view: View) -> str:
        """One phrase saying what an ok envelope means."""
        return "done"

    # -- the body -----------------------------------------------------------------------------

    def body(self, view: View) -> list[str]:
        """The result (only called when the envelope has one); here: indented JSON."""
        return json_lines(view.result)

    def fingerprints(self, view: View) -> list[str]:
        """The envelope's fingerprints, full length (they are compare-and-swap tokens)."""
        fingerprints = view.data.get("fingerprints") or {}
        if not fingerprints:
            return []
        width = max(len(name) for name in fingerprints)
        return [
            view.style.heading("fingerprints:"),
            *indented(
                f"{name.ljust(width)}  {view.style.dim(str(value))}"
                for name, value in fingerprints.items()
            ),
        ]

    # -- diagnostics and hints ----------------------------------------------------------------

    def diagnostics(self, view: View) -> list[list[str]]:
        """One block of lines per diagnostic of the envelope."""
        return [render_diagnostic(d, view.files).split("\n") for d in view.diagnostics]

    def hints(self, view: View) -> list[str]:
        return [f"{view.style.heading('hint:')} {hint}" for hint in view.hints]
