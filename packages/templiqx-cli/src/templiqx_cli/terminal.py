"""Terminal safety: what the CLI shows people never drives their terminal.

Values, model output, file text and diagnostics reach the human output, and a terminal obeys
control characters: ``ESC ] 52`` writes the clipboard, ``ESC [ 2 J`` clears the screen,
``ESC ] 0`` sets the window title, and the bidirectional overrides (U+202E) make text read
differently from what it is (issue #29: all of them reached the terminal from input values and
from a hostile model server). :func:`terminal_safe` escapes every such character *visibly*:
C0 controls except tab and newline, DEL, the C1 controls, the bidirectional embeddings,
overrides, isolates and marks, and the line and paragraph separators become ``\\x1b``,
``\\u202e`` and so on, in place. ``--json`` output is never passed through it: it is the
envelope byte for byte, and JSON escapes control characters itself.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["safe_data", "terminal_safe"]

_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every character that could drive a terminal escaped visibly."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def safe_data(value: Any) -> Any:
    """A copy of JSON data with :func:`terminal_safe` applied to every string and key."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {terminal_safe(str(key)): safe_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_data(item) for item in value]
    return value
