"""Tool results of bounded size: a large envelope is sent once, and what was left out is said.

A result carries the envelope as ``structuredContent`` and, for clients that read only text, as
compact JSON text. That is two copies, and a streamed execution's ``stream_events`` end in a
``Complete`` event holding the output once more: a 5 MB output came back as 20 MB, above the
server's own 8 MiB line limit. :func:`bounded_result` keeps small envelopes exactly as they were
and bounds the large ones:

* **One copy of the envelope.** When its JSON text exceeds :data:`ABRIDGE_BYTES`, a client that
  speaks MCP 2025-06-18 or later (which defined ``structuredContent``) gets it there only, with a
  short text saying so; an older client gets the text only. (A small envelope comes both ways
  to every client, as before: the reference's own clients of 2024-11-05 read
  ``structuredContent``.)
* **One copy of the output.** When the output exceeds :data:`ABRIDGE_BYTES`, the ``Complete``
  event in ``stream_events`` leaves it out — it is the receipt's output, ``result.output`` — and
  says so with ``"output_omitted": true`` (its ``output_fingerprint`` is kept).
* **Under the line limit.** If the answer would still exceed ``budget`` bytes (the server reads
  lines up to :data:`~templiqx_mcp.wire.MAX_LINE_BYTES`, and answers no longer), the latest
  deltas are dropped from ``stream_events`` (the terminal event stays) with the
  ``TQX_STREAM_EVENTS_TRUNCATED`` warning the service gives a stream longer than it keeps.

Only the MCP result changes: the envelope the service returned is untouched, and the same call on
another surface is unchanged.
"""

from __future__ import annotations

from typing import Any, Final

import mcp.types as types

from templiqx_application import fix_hint
from templiqx_contracts import OperationEnvelope

__all__ = [
    "ABRIDGE_BYTES",
    "STRUCTURED_SINCE",
    "bounded_result",
]

ABRIDGE_BYTES: Final = 65_536
"""An envelope's text, or an output, longer than this (UTF-8 bytes of JSON) is sent once."""

STRUCTURED_SINCE: Final = "2025-06-18"
"""The first MCP version with ``structuredContent`` (versions are dates: they sort as text)."""

FRAMING_BYTES: Final = 4096
"""Room for the JSON-RPC answer around a result (id, content list, ``isError``, ...)."""

_TRUNCATED = "TQX_STREAM_EVENTS_TRUNCATED"

TextOf = Any  # Callable[[Any], str]: compact, key-sorted JSON text of JSON data


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _leave_out_complete_output(data: dict[str, Any], text_of: TextOf) -> int:
    """Drop a large output from the ``Complete`` event when it is ``result.output``; the
    bytes left out (0 when nothing was)."""
    events = data.get("stream_events")
    result = data.get("result")
    if not events or not isinstance(result, dict):
        return 0
    last = events[-1]
    if (
        not isinstance(last, dict)
        or last.get("kind") != "Complete"
        or "output" not in last
        or last.get("output_fingerprint") != result.get("output_fingerprint")
    ):
        return 0
    size = _size(text_of(last["output"]))
    if size <= ABRIDGE_BYTES:
        return 0
    complete = {key: value for key, value in last.items() if key != "output"}
    complete["output_omitted"] = True
    events[-1] = complete
    return size


def _trim_events(data: dict[str, Any], over: int, text_of: TextOf) -> int:
    """Drop the latest deltas of ``stream_events`` until about ``over`` bytes are gone (the
    terminal event stays); how many events were dropped."""
    events: list[Any] = data["stream_events"]
    terminal = events[-1:] if events and events[-1].get("kind") in ("Complete", "Failed") else []
    deltas = events[: len(events) - len(terminal)]
    dropped = 0
    freed = 0
    while deltas and freed < over:
        freed += _size(text_of(deltas.pop())) + 1
        dropped += 1
    data["stream_events"] = deltas + terminal
    return dropped


def _warn_truncated(data: dict[str, Any], dropped: int, budget: int) -> None:
    data["diagnostics"].append(
        {
            "code": _TRUNCATED,
            "severity": "warning",
            "message": (
                f"stream_events leaves out its last {dropped} deltas: the answer would "
                f"exceed the {budget}-byte limit of one MCP message; the result holds the "
                "whole output, and progress notifications carried every event"
            ),
            "help": fix_hint(_TRUNCATED) or "",
        }
    )


def _summary(data: dict[str, Any], size: int, omitted_output: int) -> str:
    state = "ok" if data.get("ok") else "not ok"
    errors = [d["code"] for d in data.get("diagnostics", []) if d.get("severity") == "error"]
    text = f"{data.get('operation')}: {state}"
    if errors:
        text += f" ({', '.join(errors[:10])}{', ...' if len(errors) > 10 else ''})"
    text += (
        f". The envelope ({size} bytes of JSON) is in structuredContent; it is not repeated "
        "here, to keep the answer small."
    )
    if omitted_output:
        text += (
            f" stream_events' Complete event leaves out the output ({omitted_output} bytes): "
            "it is result.output."
        )
    return text


def bounded_result(
    envelope: OperationEnvelope,
    text_of: TextOf,
    *,
    structured: bool = True,
    budget: int,
) -> types.CallToolResult:
    """The tool result of ``envelope`` (see the module docstring).

    ``text_of`` writes JSON data as compact, key-sorted text; ``structured`` is whether the
    client's protocol has ``structuredContent``; ``budget`` the most bytes the answer may take.
    """
    data = envelope.to_builtins()
    text = text_of(data)
    size = _size(text)
    if size <= ABRIDGE_BYTES:  # small: both, whatever the protocol (older clients ignore it)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=data,
            is_error=False,
        )
    omitted = _leave_out_complete_output(data, text_of)
    if omitted:
        text = text_of(data)
        size = _size(text)
    limit = budget - FRAMING_BYTES
    if size > limit and data.get("stream_events"):
        dropped = _trim_events(data, size - limit + 1024, text_of)
        if dropped:
            _warn_truncated(data, dropped, budget)
        text = text_of(data)
        size = _size(text)
    if not structured:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=False
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_summary(data, size, omitted))],
        structured_content=data,
        is_error=False,
    )
