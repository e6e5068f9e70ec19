"""Retry hints: how long a server asks to wait, from the headers of a 429 (or 5xx) answer.

Servers and gateways spell the hint several ways. In order of precedence (the first header that
parses wins; one that does not parse falls through to the next):

1. ``x-retry-after-ms`` — milliseconds (the reference's header);
2. ``retry-after-ms`` — milliseconds (what OpenAI sends);
3. ``llm_provider-retry-after-ms`` — the same, forwarded by a gateway (LiteLLM prefixes the
   upstream provider's headers with ``llm_provider-``);
4. ``retry-after`` — whole seconds, or an HTTP date (the delay until then, 0 when past);
5. ``llm_provider-retry-after`` — the same, forwarded;
6. ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (and their ``llm_provider-``
   forms) — OpenAI's Go-style durations (``1s``, ``6m0s``, ``250ms``), used only when it is
   unambiguous which limit was hit: the one whose ``x-ratelimit-remaining-*`` is ``0`` (both at
   ``0``: the later reset). Bare numbers there are ignored (some servers put an epoch time in a
   header of that name).

Hints are capped at :data:`MAX_HINT_MS` (one day): a larger value is not a hint to follow.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Final

__all__ = ["MAX_HINT_MS", "parse_duration_ms", "retry_after_ms"]

MAX_HINT_MS: Final = 86_400_000
"""The largest hint kept (24 hours); anything larger is ignored."""

_PREFIXES: Final = ("", "llm_provider-")
_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_UNIT_MS: Final = {"h": 3_600_000.0, "m": 60_000.0, "s": 1000.0, "ms": 1.0}
_UNIT_MS.update({"us": 0.001, "µs": 0.001, "ns": 0.000001})


def _whole(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip()
    if not value or not value.isascii() or not value.isdigit() or len(value) > 18:
        return None
    return int(value)


def _capped(millis: int | None) -> int | None:
    if millis is None or millis < 0 or millis > MAX_HINT_MS:
        return None
    return millis


def _http_date_ms(text: str, now: float) -> int | None:
    try:
        moment = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is not a valid hint
        return None
    return max(0, round((moment.timestamp() - now) * 1000))


def parse_duration_ms(text: str | None) -> int | None:
    """A Go-style duration (``1s``, ``6m0s``, ``1h2m``, ``250ms``, ``0.5s``) in milliseconds.

    Units are required; anything else is ``None``.
    """
    if text is None:
        return None
    value = text.strip()
    if not value or len(value) > 64:
        return None
    position = 0
    total = 0.0
    for match in _DURATION_PART.finditer(value):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_MS[match.group(2)]
        position = match.end()
    if position != len(value) or position == 0:
        return None
    return round(total)


def _reset_ms(headers: Mapping[str, str], prefix: str) -> int | None:
    resets: list[int] = []
    for limit in ("requests", "tokens"):
        remaining = _whole(headers.get(f"{prefix}x-ratelimit-remaining-{limit}"))
        if remaining != 0:
            continue
        reset = parse_duration_ms(headers.get(f"{prefix}x-ratelimit-reset-{limit}"))
        if reset is not None:
            resets.append(reset)
    return max(resets) if resets else None


def retry_after_ms(headers: Mapping[str, str], *, now: float | None = None) -> int | None:
    """The server's retry hint in milliseconds, or ``None`` (see the module docstring).

    ``headers`` must look names up case-insensitively (as ``requests`` response headers do);
    ``now`` (seconds since the epoch, default the current time) resolves HTTP dates.
    """
    for name in ("x-retry-after-ms", "retry-after-ms", "llm_provider-retry-after-ms"):
        value = _capped(_whole(headers.get(name)))
        if value is not None:
            return value
    clock = time.time() if now is None else now
    for prefix in _PREFIXES:
        raw = headers.get(f"{prefix}retry-after")
        if raw is None:
            continue
        seconds = _whole(raw)
        value = _capped(seconds * 1000 if seconds is not None else _http_date_ms(raw, clock))
        if value is not None:
            return value
    for prefix in _PREFIXES:
        value = _capped(_reset_ms(headers, prefix))
        if value is not None:
            return value
    return None
