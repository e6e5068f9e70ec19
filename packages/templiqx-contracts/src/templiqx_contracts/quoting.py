"""Quoting user input inside diagnostic messages: one bound for every surface.

A diagnostic that echoes what the user sent (a source, a value, a name, a path) must stay
small: agent hosts put whole tool results into a model's context, and a 5 MB contract source
must not come back as a 10 MB error. :func:`quote_input` is the one place that decides how much
of a value a message may show.
"""

from __future__ import annotations

from typing import Final

__all__ = ["QUOTE_LIMIT", "quote_input"]

QUOTE_LIMIT: Final = 120
"""Most characters of user input a diagnostic message shows."""

_CONTROL = {code: f"\\x{code:02x}" for code in range(0x20)} | {0x7F: "\\x7f"}
_CONTROL |= {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"}


def quote_input(value: str, limit: int = QUOTE_LIMIT) -> str:
    """``value`` in single quotes for a message, control characters escaped, at most ``limit``
    characters of it shown.

    A longer value is cut and says so: ``'abc…' (5000000 characters)``. The quoted text is at
    most ``limit`` characters of ``value`` plus escapes, quotes and the length note, so a
    message built from a few quoted values stays a few hundred bytes whatever the input.
    """
    shown = value[:limit].translate(_CONTROL).replace("'", "\\'")
    if len(value) <= limit:
        return f"'{shown}'"
    return f"'{shown}…' ({len(value)} characters)"
