"""``execute --stream`` for people on a terminal: a structured answer growing in place.

Unit tests drive :class:`~templiqx_cli.human.live.LiveAnswer` with a fake terminal and clock;
the end-to-end tests run the CLI with stderr on a pseudo-terminal (``pty``) of a known size.
Off a terminal, with ``--json`` or with ``TERM=dumb`` the events print as they always did.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import PartialView
from templiqx_cli.human.live import REDRAW_BACKOFF, LiveAnswer, live_display
from templiqx_cli.human.style import Style
from templiqx_contracts import AdapterDescriptor, Complete, Delta

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "packages"
SCENARIO = FIXTURES / "welcome" / "scenarios" / "stream-vip"
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string"},
        "tone": {"type": "string", "enum": ["warm", "neutral"]},
    },
}
UP = re.compile(r"\r\x1b\[(\d+)A\x1b\[J")  # back up N rows, clear to the end of the screen
REDRAW = re.compile(r"\r\x1b\[\d+A\x1b\[J")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _view(*texts: str) -> PartialView:
    view = PartialView(SCHEMA)
    for text in texts:
        view.read(Delta(text=text))
    return view


def _answer(columns: int = 80, lines: int = 24) -> tuple[_Terminal, _Clock, LiveAnswer]:
    terminal, clock = _Terminal(), _Clock()
    answer = LiveAnswer(terminal, Style(), size=lambda: (columns, lines), clock=clock)
    return terminal, clock, answer


def test_each_drawing_goes_back_over_the_last_one() -> None:
    terminal, clock, answer = _answer()
    view = _view('{"title": "Gr')
    answer.update(view)
    first = '{\n  "title": "Gr"\n}\n… streaming, writing /title\n'
    assert terminal.getvalue() == first
    clock.now += 1
    view.read(Delta(text='een", "tone": "warm"}'))
    answer.update(view)
    redraw = terminal.getvalue()[len(first) :]
    assert redraw == '\r\x1b[4A\x1b[J{\n  "title": "Green",\n  "tone": "warm"\n}\n… streaming\n'


def test_redraws_wait_for_the_interval_and_the_end_draws_what_was_missed() -> None:
    terminal, clock, answer = _answer()
    view = _view("{")
    answer.update(view)
    view.read(Delta(text='"title": "x"'))
    clock.now += 0.001
    answer.update(view)  # too soon: not drawn
    assert '"x"' not in terminal.getvalue()
    view.read(Delta(text="}"))
    answer.finish(view)
    assert terminal.getvalue() == '{}\n… streaming\n\r\x1b[2A\x1b[J{\n  "title": "x"\n}\n'


def test_a_slow_drawing_waits_in_proportion_before_the_next() -> None:
    """Drawing a large answer takes long: the next drawing waits REDRAW_BACKOFF times as long,
    so a fast stream of a large answer is not redrawn after every delta."""
    terminal, clock = _Terminal(), _Clock()

    def slow_size() -> tuple[int, int]:
        clock.now += 0.5  # each drawing takes half a second
        return (80, 24)

    answer = LiveAnswer(terminal, Style(), size=slow_size, clock=clock)
    view = _view('{"log": "')
    drawings = 0
    for _ in range(100):  # 100 deltas arriving 10 ms apart, over 1 s of stream time
        view.read(Delta(text="a"))
        before = terminal.getvalue()
        answer.update(view)
        drawings += terminal.getvalue() != before
        clock.now += 0.01
    assert drawings == 1  # the next may start 0.5 * (1 + REDRAW_BACKOFF) = 2.5 s after
    clock.now = 2.5
    answer.update(view)
    assert drawings + 1 == terminal.getvalue().count("streaming")
    assert REDRAW_BACKOFF == 4


def test_after_finish_the_drawing_stays_and_output_goes_below() -> None:
    terminal, clock, answer = _answer()
    view = _view('{"title": "a"}')
    answer.update(view)
    answer.finish(view)
    written = terminal.getvalue()
    clock.now += 1
    answer.update(_view("{}"))
    assert terminal.getvalue()[len(written) :] == "{}\n… streaming\n"  # no cursor movement


def test_a_drawing_taller_than_the_terminal_shows_its_bottom_live_and_whole_at_the_end() -> None:
    terminal, _, answer = _answer(columns=40, lines=6)
    items = ", ".join(f'"item {i}"' for i in range(10))
    schema_free = PartialView(None)
    schema_free.read(Delta(text=f'{{"list": [{items}], "end": tru'))
    answer.update(schema_free)
    live = terminal.getvalue().split("\n")[:-1]
    assert live == [  # five rows: one is kept free for the cursor
        "... 11 more lines above",
        '    "item 9"',
        "  ]",
        "}",
        "… streaming",
    ]
    schema_free.read(Delta(text="e}"))
    answer.finish(schema_free)
    final = REDRAW.split(terminal.getvalue())[-1]
    whole = {"list": [f"item {i}" for i in range(10)], "end": True}
    assert final == json.dumps(whole, indent=2) + "\n"


def test_wrapped_and_wide_lines_are_counted_in_screen_rows() -> None:
    terminal, clock, answer = _answer(columns=10)
    view = PartialView(None)
    view.read(Delta(text='"' + "界" * 12))  # 24 columns of text plus the quotes: 3 rows
    answer.update(view)
    clock.now += 1
    view.read(Delta(text='"'))
    answer.update(view)
    moves = [int(n) for n in UP.findall(terminal.getvalue())]
    # 26 columns of text in three rows; "… streaming, writing the answer" (31) in four
    assert moves == [7]


def test_problems_show_under_the_answer_as_they_are_seen() -> None:
    terminal, _, answer = _answer()
    view = _view('{"tone": "che')
    answer.update(view)
    assert terminal.getvalue().splitlines()[-2:] == [
        "✗ TQX_OUTPUT_SCHEMA /output/tone: no value allowed here begins with 'che'",
        "… streaming, writing /tone",
    ]


def test_an_answer_read_at_once_is_drawn_at_the_end() -> None:
    terminal, _, answer = _answer()
    view = PartialView(SCHEMA)
    receipt = Complete(
        adapter=AdapterDescriptor(id="a", version="1", capabilities=[]),
        request_fingerprint="r",
        output_fingerprint="o",
        output={"title": "t"},
        output_schema_valid=True,
    )
    view.read(receipt)
    answer.finish(view)
    assert terminal.getvalue() == '{\n  "title": "t"\n}\n'


@pytest.mark.parametrize(
    ("tty", "environ", "live"),
    [
        (True, {"TERM": "xterm"}, True),
        (True, {}, True),
        (True, {"TERM": "xterm", "NO_COLOR": "1"}, True),  # colour off, redrawing stays
        (True, {"TERM": "dumb"}, False),
        (False, {"TERM": "xterm"}, False),
    ],
)
def test_live_display_needs_a_terminal_that_can_move_the_cursor(
    tty: bool, environ: dict[str, str], live: bool
) -> None:
    stream = _Terminal() if tty else io.StringIO()
    assert live_display(stream, environ) is live


# --- the CLI on a pseudo-terminal --------------------------------------------------------------


def _run_on_pty(
    extra_env: dict[str, str],
    *args: str,
    command: list[str] | None = None,
    stdout_too: bool = False,
) -> tuple[str, str, int]:
    """Run ``templiqx ... execute --stream`` (or ``templiqx <command>``) with stderr on an
    80 x 24 pty; (stderr, stdout, rc)."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env.update(
        {
            "TERM": "xterm",
            "TEMPLIQX_MOCK_SCENARIO": str(SCENARIO / "manifest.json"),
            "TEMPLIQX_MOCK_PACE_MS": "60",
            **extra_env,
        }
    )
    argv = (
        [sys.executable, "-m", "templiqx_cli", *command]
        if command
        else [
            sys.executable,
            "-m",
            "templiqx_cli",
            "--root",
            str(FIXTURES),
            "--runtime",
            "mock",
            *args,
            "execute",
            "welcome",
            "onboarding-summary",
            "--values",
            str(SCENARIO / "request.json"),
            "--stream",
        ]
    )
    try:
        process = subprocess.Popen(
            argv, stdout=terminal if stdout_too else subprocess.PIPE, stderr=terminal, env=env
        )
        os.close(terminal)
        chunks = []
        while True:
            ready, _, _ = select.select([controller], [], [], 30)
            if not ready:
                break
            try:
                data = os.read(controller, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        stdout = process.stdout.read().decode() if process.stdout is not None else ""
        process.wait(timeout=60)
    finally:
        os.close(controller)
    return b"".join(chunks).decode().replace("\r\n", "\n"), stdout, process.returncode


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _output() -> Any:
    envelope = subprocess.run(
        [
            sys.executable,
            "-m",
            "templiqx_cli",
            "--root",
            str(FIXTURES),
            "--runtime",
            "mock",
            "--json",
            "execute",
            "welcome",
            "onboarding-summary",
            "--values",
            str(SCENARIO / "request.json"),
        ],
        env={**os.environ, "TEMPLIQX_MOCK_SCENARIO": str(SCENARIO / "manifest.json")},
        capture_output=True,
        check=True,
        text=True,
    )
    return json.loads(envelope.stdout)["result"]["output"]


@pytest.mark.parametrize("no_color", [False, True])
def test_on_a_terminal_the_object_grows_in_place(no_color: bool) -> None:
    shown, stdout, code = _run_on_pty({"NO_COLOR": "1"} if no_color else {})
    assert code == 0
    drawings = [_plain(drawing) for drawing in REDRAW.split(shown)]
    assert len(drawings) >= 6, shown  # paced deltas: the drawing was replaced many times
    assert drawings[0] == "{}\n… streaming\n"
    assert drawings[1] == '{\n  "summary": "Anouk "\n}\n… streaming, writing /summary\n'
    final, _, closing = drawings[-1].partition("[complete]")
    assert json.loads(final) == _output()
    assert closing.startswith(" output fingerprint ")
    assert '{"summary":' not in shown  # no raw delta text
    assert ("\x1b[2m" in shown) is not no_color  # the status line is dim, unless NO_COLOR
    assert "welcome" in stdout


def test_on_one_terminal_the_answer_is_shown_once() -> None:
    """Issue #28: stdout and stderr on the same terminal: the envelope rendered for people
    does not repeat the answer the live display has just drawn."""
    shown, _, code = _run_on_pty({"NO_COLOR": "1"}, stdout_too=True)
    assert code == 0
    _, _, after = _plain(shown).rpartition("[complete]")
    assert "output: shown above as it streamed" in after
    assert "next_steps" not in after
    assert "schema valid: ✓ yes" in after


def test_term_dumb_prints_the_deltas_as_they_come() -> None:
    shown, _, code = _run_on_pty({"TERM": "dumb"})
    assert code == 0
    assert "\x1b[" not in shown
    assert shown.startswith('{"summary": "Anouk de Vries ')


def test_json_lines_stay_json_lines_on_a_terminal() -> None:
    shown, _, code = _run_on_pty({}, "--json")
    assert code == 0
    assert "\x1b[" not in shown
    kinds = [json.loads(line)["kind"] for line in shown.splitlines()]
    assert kinds[0] == "Delta"
    assert kinds[-1] == "Complete"


def test_the_demo_draws_its_answer_growing_in_place_on_a_terminal() -> None:
    shown, stdout, code = _run_on_pty({}, command=["demo", "--pace-ms", "20"])
    assert code == 0, stdout
    drawings = [_plain(drawing) for drawing in REDRAW.split(shown)]
    assert len(drawings) >= 4, shown
    assert drawings[0] == "{}\n… streaming\n"
    final, _, closing = drawings[-1].partition("[complete]")
    assert json.loads(final) == _output()
    assert closing.startswith(" output fingerprint ")
    assert '{"summary":' not in shown  # no raw delta text
    assert "3/3 execute onboarding-summary" in stdout
    assert "execute: ok, 18 deltas streamed" in stdout
