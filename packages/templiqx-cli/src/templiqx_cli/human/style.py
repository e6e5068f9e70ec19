"""How human output looks on this stream: colour or not, and the marks it can print.

Colour is for people at a terminal only: it is on when the stream is a TTY, ``NO_COLOR`` is unset
or empty (https://no-color.org) and ``TERM`` is not ``dumb``; never in a pipe or a file. The ✓/✗
marks fall back to ``ok``/``FAIL`` when the stream's encoding cannot write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

__all__ = ["Style", "style_for"]

_RESET = "\x1b[0m"
_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
}


@dataclass(frozen=True)
class Style:
    """Text decoration for one output stream (plain text when ``colour`` is off)."""

    colour: bool = False
    unicode: bool = True

    def paint(self, text: str, *names: str) -> str:
        """``text`` in the named decorations (``bold``, ``dim``, ``red`` …) when colour is on."""
        if not self.colour or not text or not names:
            return text
        codes = ";".join(_CODES[name] for name in names)
        return f"\x1b[{codes}m{text}{_RESET}"

    def good(self, text: str) -> str:
        """Something that passed or succeeded."""
        return self.paint(text, "green")

    def bad(self, text: str) -> str:
        """Something that failed."""
        return self.paint(text, "red", "bold")

    def warn(self, text: str) -> str:
        """A warning."""
        return self.paint(text, "yellow")

    def dim(self, text: str) -> str:
        """Secondary detail: fingerprints, counts in passing."""
        return self.paint(text, "dim")

    def heading(self, text: str) -> str:
        """A section label or a table header."""
        return self.paint(text, "bold")

    def name(self, text: str) -> str:
        """An identifier the reader may type back (package, contract, path)."""
        return self.paint(text, "cyan")

    def mark(self, passed: bool) -> str:
        """✓ (green) or ✗ (red); ``ok``/``FAIL`` where the encoding has no such marks."""
        if passed:
            return self.good("✓" if self.unicode else "ok")
        return self.bad("✗" if self.unicode else "FAIL")


def _writes_marks(stream: TextIO) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        "✓✗".encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return False
    return True


def style_for(stream: TextIO, environ: Mapping[str, str]) -> Style:
    """The style for human output written to ``stream`` under the environment ``environ``."""
    isatty = getattr(stream, "isatty", None)
    terminal = bool(isatty()) if callable(isatty) else False
    colour = terminal and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"
    return Style(colour=colour, unicode=_writes_marks(stream))
