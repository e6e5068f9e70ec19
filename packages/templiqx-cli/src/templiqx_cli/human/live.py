"""A structured answer drawn growing in place on a terminal (``execute --stream`` for people).

While a structured-output contract streams, :class:`LiveAnswer` shows the answer so far (the
stream's :class:`~templiqx_application.PartialView`) as indented JSON on stderr and redraws it
in place as deltas arrive: the cursor goes back up over the previous drawing, the screen is
cleared from there, and the new drawing is written. Problems the output schema can already
see are listed under it, and a dim status line says the answer is still arriving (and which
string is being written). Only the bottom of a drawing taller than the terminal is shown live
(with a line saying how many lines are above); the last drawing, once the stream ends, is the
whole answer, without the status line, and stays on screen.

It is used only when stderr is a terminal that understands cursor movement (not ``TERM=dumb``,
see :func:`live_display`); colour follows :func:`~templiqx_cli.human.style.style_for`
(``NO_COLOR`` turns it off, redrawing stays). Redraws are at most :data:`REDRAW_INTERVAL_S`
apart, so a fast stream costs one drawing per interval, not one per delta — and a drawing that
takes long (a large answer) waits :data:`REDRAW_BACKOFF` times its own duration before the next,
so drawing never takes more than a fixed share of the stream's time, however large the answer
and however many deltas it comes in. A delta itself costs nothing here: only a drawing reads
the view's value.
"""

from __future__ import annotations

import json
import os
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from templiqx_cli.human.style import Style
from templiqx_cli.terminal import terminal_safe
from templiqx_contracts import MISSING

if TYPE_CHECKING:
    from templiqx_application import PartialView

__all__ = ["REDRAW_BACKOFF", "REDRAW_INTERVAL_S", "LiveAnswer", "live_display"]

REDRAW_INTERVAL_S = 1 / 30
"""The shortest time between two live redraws."""
REDRAW_BACKOFF = 4
"""After a drawing that took ``t`` seconds, the next waits at least this many times ``t``: the
live display spends at most a fifth of the time drawing."""

_FALLBACK_SIZE = (80, 24)
_SHOWN_PROBLEMS = 5


def live_display(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether ``stream`` is a terminal the answer can be redrawn on (not ``TERM=dumb``)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) and environ.get("TERM") != "dumb" else False


def terminal_size(stream: TextIO) -> tuple[int, int]:
    """``(columns, lines)`` of the terminal ``stream`` writes to (80 x 24 when unknown)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return _FALLBACK_SIZE
    columns, lines = size.columns, size.lines
    return (columns or _FALLBACK_SIZE[0], lines or _FALLBACK_SIZE[1])


def _cells(line: str) -> int:
    """How many terminal columns ``line`` takes (wide characters two, combining marks none)."""
    if line.isascii():
        return len(line)
    width = 0
    for char in line:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _rows(line: str, columns: int) -> int:
    """The screen rows ``line`` takes once the terminal wraps it."""
    return max(1, -(-_cells(line) // columns))


class LiveAnswer:
    """Draws a :class:`~templiqx_application.PartialView` on ``stream``, redrawing in place.

    ``size`` gives the terminal's ``(columns, lines)`` (asked before every drawing, so a
    resize is followed); ``clock`` is the time source of the redraw interval.
    """

    def __init__(
        self,
        stream: TextIO,
        style: Style,
        *,
        size: Callable[[], tuple[int, int]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = REDRAW_INTERVAL_S,
    ) -> None:
        self._stream = stream
        self._style = style
        self._size = size if size is not None else (lambda: terminal_size(stream))
        self._clock = clock
        self._interval = interval
        self._drawn_rows = 0  # rows of the drawing on screen, which the next one replaces
        self._next_at: float | None = None  # when the next live drawing may start
        self._pending = False  # a change not drawn yet (the interval had not passed)

    def update(self, view: PartialView) -> None:
        """The view changed: redraw it, unless the last drawing is too recent.

        Costs a clock reading when it does not draw; the view's value is read only to draw.
        """
        now = self._clock()
        if self._next_at is not None and now < self._next_at:
            self._pending = True
            return
        self._draw(view, final=False)
        took = max(self._clock() - now, 0.0)
        self._next_at = now + max(self._interval, took * (1 + REDRAW_BACKOFF))

    def finish(self, view: PartialView) -> None:
        """The stream ended: draw the answer as it ended, whole; it stays on screen."""
        if self._drawn_rows or self._pending or view.value is not MISSING:
            self._draw(view, final=True)
        self.settle()

    def settle(self) -> None:
        """Leave the drawing on screen: what is written next goes below it."""
        self._drawn_rows = 0
        self._next_at = None
        self._pending = False

    def _lines(self, view: PartialView, *, final: bool) -> list[str]:
        value = view.value
        lines = [] if value is MISSING else _json_lines(value)
        problems = view.problems
        for problem in problems[:_SHOWN_PROBLEMS]:
            mark = self._style.mark(False)
            text = terminal_safe(f"{problem.code} {problem.json_pointer}: {problem.message}")
            lines.append(f"{mark} {text}")
        if len(problems) > _SHOWN_PROBLEMS:
            lines.append(self._style.dim(f"  and {len(problems) - _SHOWN_PROBLEMS} more"))
        if not final:
            lines.append(self._style.dim(self._status(view)))
        return lines

    def _status(self, view: PartialView) -> str:
        status = ("…" if self._style.unicode else "...") + " streaming"
        growing = view.growing
        if growing is not None:
            status += f", writing {'/' + '/'.join(map(str, growing)) if growing else 'the answer'}"
        return status

    def _draw(self, view: PartialView, *, final: bool) -> None:
        columns, height = self._size()
        lines = self._lines(view, final=final)
        if not final:
            lines = _bottom(lines, columns, max(height - 1, 2), self._style)
        out = []
        if self._drawn_rows:
            out.append(f"\r\x1b[{self._drawn_rows}A\x1b[J")  # back over the last drawing
        out.extend(f"{line}\n" for line in lines)
        self._stream.write("".join(out))
        self._stream.flush()
        self._drawn_rows = sum(_rows(line, columns) for line in lines)
        self._pending = False


def _json_lines(value: Any) -> list[str]:
    # json escapes C0 controls; C1 controls and bidirectional overrides it leaves raw
    return terminal_safe(json.dumps(value, indent=2, ensure_ascii=False)).split("\n")


def _bottom(lines: Sequence[str], columns: int, rows: int, style: Style) -> list[str]:
    """The last of ``lines`` that fit in ``rows`` screen rows, after a line counting the rest."""
    if sum(_rows(line, columns) for line in lines) <= rows:
        return list(lines)
    kept: list[str] = []
    used = 1  # the line saying how many are above
    for line in reversed(lines):
        needed = _rows(line, columns)
        if used + needed > rows:
            break
        kept.append(line)
        used += needed
    above = len(lines) - len(kept)
    noun = "line" if above == 1 else "lines"
    return [style.dim(f"... {above} more {noun} above"), *reversed(kept)]
