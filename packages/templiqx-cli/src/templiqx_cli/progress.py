"""How a batch run shows its progress on stderr: a bar on a terminal, plain lines elsewhere.

* **bar** (stderr is a terminal): one line redrawn in place at most ten times a second — done
  of total, percent, rows a second, time left, and failures by code;
* **lines** (piped, or ``--progress lines``): one line every ``interval`` seconds and one at
  the end, e.g. ``templiqx batch: 1200/2000 rows (60%), 410.2 rows/s, ETA 2s, 3 failed
  (TQX_OUTPUT_SCHEMA 3)``;
* **none**: nothing.

What is shown comes from counts and stable ``TQX_*`` codes only, never from row values or model
output, so nothing a dataset or a model says reaches the terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the engine (and asyncio) load when a batch runs, not with the CLI
    from templiqx_application.batch import BatchResult

__all__ = ["MODES", "Progress", "format_duration"]

MODES = ("auto", "bar", "lines", "none")

_BAR_REDRAW_S = 0.1
_BAR_WIDTH = 24


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts results and draws them (see the module docstring)."""

    def __init__(
        self,
        stream: TextIO,
        mode: str = "auto",
        *,
        interval: float = 5.0,
        label: str = "templiqx batch",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if mode == "auto":
            mode = "bar" if stream.isatty() else "lines"
        self.mode = mode
        self._stream = stream
        self._interval = interval
        self._label = label
        self._clock = clock
        self.total: int | None = None
        self.before = 0
        self.done = 0
        self.failed = 0
        self.by_code: dict[str, int] = {}
        self._started = clock()
        self._drawn = 0.0
        self._bar_shown = False

    def start(self, total: int | None, already_done: int) -> None:
        self.total = total
        self.before = already_done
        self._started = self._clock()
        self._drawn = self._started
        if self.mode == "lines" and already_done:
            self._write_line(f"{self._label}: resuming, {already_done} rows already done")
        self._draw(force=self.mode == "bar")

    def update(self, result: BatchResult) -> None:
        self.done += 1
        if not result.ok:
            self.failed += 1
            code = result.error_code or "(no code)"
            self.by_code[code] = self.by_code.get(code, 0) + 1
        self._draw(force=False)

    def finish(self) -> None:
        if self.mode == "bar":
            self._draw(force=True)
            if self._bar_shown:
                self._stream.write("\n")
                self._stream.flush()
        elif self.mode == "lines":
            self._write_line(self.text())

    # --- drawing ------------------------------------------------------------------------------

    def _rate(self) -> float | None:
        elapsed = self._clock() - self._started
        return self.done / elapsed if elapsed > 0 and self.done else None

    def _failures(self, limit: int = 3) -> str:
        if not self.failed:
            return ""
        ranked = sorted(self.by_code.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{code} {count}" for code, count in ranked[:limit])
        more = ", ..." if len(ranked) > limit else ""
        return f", {self.failed} failed ({shown}{more})"

    def text(self) -> str:
        """The progress as one plain line."""
        finished = self.before + self.done
        rate = self._rate()
        parts = [f"{self._label}: {finished}"]
        if self.total is not None:
            parts[0] += f"/{self.total} rows"
            if self.total:
                parts[0] += f" ({100 * finished // self.total}%)"
        else:
            parts[0] += " rows"
        if rate is not None:
            parts.append(f"{rate:.1f} rows/s")
            if self.total is not None:
                parts.append(f"ETA {format_duration(max(0, self.total - finished) / rate)}")
        return ", ".join(parts) + self._failures()

    def _bar(self) -> str:
        finished = self.before + self.done
        if self.total:
            filled = min(_BAR_WIDTH, _BAR_WIDTH * finished // self.total)
            bar = "[" + "#" * filled + "." * (_BAR_WIDTH - filled) + "] "
        else:
            bar = ""
        rate = self._rate()
        text = f"{bar}{finished}" + (f"/{self.total}" if self.total is not None else "")
        if rate is not None:
            text += f"  {rate:.1f} rows/s"
            if self.total is not None:
                text += f"  ETA {format_duration(max(0, self.total - finished) / rate)}"
        text += self._failures(2).replace(", ", "  ", 1)
        return text

    def _draw(self, *, force: bool) -> None:
        now = self._clock()
        if self.mode == "bar":
            if not force and now - self._drawn < _BAR_REDRAW_S:
                return
            import shutil  # not at start-up: only a drawn bar needs it (issue #33)

            width = shutil.get_terminal_size((100, 24)).columns
            line = self._bar()[: max(10, width - 1)]
            self._stream.write("\r\x1b[2K" + line)
            self._stream.flush()
            self._bar_shown = True
            self._drawn = now
        elif self.mode == "lines" and now - self._drawn >= self._interval:
            self._write_line(self.text())
            self._drawn = now

    def _write_line(self, text: str) -> None:
        self._stream.write(text + "\n")
        self._stream.flush()
