"""Human output: when it is coloured, the marks, the generic renderer and the registry."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from templiqx_cli.human import RENDERERS, Renderer, Style, View, register, render, style_for
from templiqx_cli.human.blocks import table
from templiqx_contracts import Diagnostic, OperationEnvelope


class _Stream(io.StringIO):
    def __init__(self, *, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self._tty = tty
        self._encoding = encoding

    @property
    def encoding(self) -> str:
        return self._encoding

    def isatty(self) -> bool:
        return self._tty


@pytest.mark.parametrize(
    ("tty", "environ", "colour"),
    [
        (True, {"TERM": "xterm"}, True),
        (True, {}, True),
        (False, {"TERM": "xterm"}, False),
        (True, {"TERM": "xterm", "NO_COLOR": "1"}, False),
        (True, {"TERM": "xterm", "NO_COLOR": ""}, True),  # no-color.org: empty means unset
        (True, {"TERM": "dumb"}, False),
    ],
)
def test_colour_only_on_a_terminal_without_no_color(
    tty: bool, environ: dict[str, str], colour: bool
) -> None:
    assert style_for(_Stream(tty=tty), environ).colour is colour


def test_marks_fall_back_to_words_where_the_encoding_has_none() -> None:
    assert style_for(_Stream(tty=False, encoding="ascii"), {}).mark(True) == "ok"
    assert style_for(_Stream(tty=False, encoding="ascii"), {}).mark(False) == "FAIL"
    assert style_for(_Stream(tty=False), {}).mark(False) == "✗"
    assert Style(colour=True).mark(True) == "\x1b[32m✓\x1b[0m"


def test_tables_align_on_plain_text_widths() -> None:
    lines = table(["a", "long header"], [["x", "1"], ["longer", "22"]], Style(colour=True))
    plain = table(["a", "long header"], [["x", "1"], ["longer", "22"]], Style())
    assert plain == ["a       long header", "x       1", "longer  22"]
    assert [len(line) for line in lines] != [len(line) for line in plain]  # colour added
    assert table(["a"], [], Style()) == []


def _envelope(operation: str, result: object, *diagnostics: Diagnostic) -> OperationEnvelope:
    return OperationEnvelope.build(operation, result=result, diagnostics=list(diagnostics))


def test_an_operation_without_a_renderer_shows_its_result_as_json() -> None:
    envelope = _envelope("summarise_package", {"b": [1, 2], "a": "ü"})
    view = View(data=envelope.to_builtins(), style=Style(), envelope=envelope)
    assert render(view) == (
        '✓ summarise-package: done\n  {\n    "b": [\n      1,\n      2\n    ],\n    "a": "ü"\n  }\n'
    )


def test_warnings_are_counted_beside_the_summary() -> None:
    warning = Diagnostic(code="TQX_X", severity="warning", message="careful", help="do this")
    envelope = _envelope("summarise_package", "text", warning)
    text = render(View(data=envelope.to_builtins(), style=Style(), envelope=envelope))
    assert text.splitlines()[0] == "✓ summarise-package: done, 1 warning"
    assert "TQX_X warning" in text
    assert "help: do this" in text


def test_a_renderer_can_be_registered_and_overrides_single_steps() -> None:
    class Shout(Renderer):
        def summary(self, view: View) -> str:
            return "LOUD"

        def body(self, view: View) -> list[str]:
            return [str(view.result).upper()]

    assert "summarise_package" not in RENDERERS
    register("summarise_package", Shout())
    try:
        envelope = _envelope("summarise_package", "quiet")
        view = View(data=envelope.to_builtins(), style=Style(), envelope=envelope)
        assert render(view) == "✓ summarise-package: LOUD\n  QUIET\n"
    finally:
        del RENDERERS["summarise_package"]


def test_every_catalog_operation_has_a_renderer() -> None:
    from templiqx_application import CATALOG

    assert {spec.name for spec in CATALOG} <= set(RENDERERS)


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


@pytest.mark.parametrize("no_color", [False, True])
def test_a_real_terminal_gets_colour_unless_no_color(packages_root: Path, no_color: bool) -> None:
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    if no_color:
        env["NO_COLOR"] = "1"
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "templiqx_cli", "--root", str(packages_root), "discover"],
            stdout=terminal,
            stderr=subprocess.PIPE,
            env=env,
        )
        os.close(terminal)
        output = _read_all(controller).decode()
        process.wait(timeout=60)
    finally:
        os.close(controller)
    assert process.returncode == 0
    assert "discover" in output
    assert ("\x1b[" in output) is not no_color
