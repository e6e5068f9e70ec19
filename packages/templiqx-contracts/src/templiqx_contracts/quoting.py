"""Quoting user input inside diagnostic messages: one bound for every surface.

A diagnostic that echoes what the user sent (a source, a value, a name, a path) must stay
small: agent hosts put whole tool results into a model's context, and a 5 MB contract source
must not come back as a 10 MB error. :func:`quote_input` is the one place that decides how much
of a value a message may show.

:func:`bound_text` is the safety net behind it: every :class:`~templiqx_contracts.Diagnostic`
cuts its ``message``, ``help``, ``file`` and ``json_pointer`` to
:data:`DIAGNOSTIC_TEXT_LIMIT` characters when it is built, so a message that echoes input
without :func:`quote_input` still cannot grow with the input.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DIAGNOSTIC_TEXT_LIMIT", "QUOTE_LIMIT", "bound_text", "elide", "quote_input"]

QUOTE_LIMIT: Final = 120
"""Most characters of user input a diagnostic message shows."""

DIAGNOSTIC_TEXT_LIMIT: Final = 1000
"""Most characters of a diagnostic's ``message``, ``help``, ``file`` or ``json_pointer``."""

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


def bound_text(text: str, limit: int = DIAGNOSTIC_TEXT_LIMIT) -> str:
    """``text`` when it has at most ``limit`` characters, else its first ``limit`` characters
    and a note of the total: ``'abc… (5000000 characters)'``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def elide(text: str, keep: int = QUOTE_LIMIT) -> str:
    """A message written by someone else (a schema engine) that may embed input, with its
    middle cut when it is longer than ``2 * keep`` characters: the start and the end stay, so
    ``"yyyy…" is not one of 1 or 2`` still says which rule failed."""
    if len(text) <= 2 * keep:
        return text
    return f"{text[:keep]}… ({len(text) - 2 * keep} characters cut) …{text[-keep:]}"
