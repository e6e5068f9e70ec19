"""A streamed ``execute_contract`` with live progress, over the service's public async API.

The server keeps no bridge of its own between the event loop and the service: every call that
leaves the loop is ``await service.ainvoke_bound(...)`` (the service's bounded worker pool, or
a natively async runtime awaited on the loop), and a streamed execution is read with
``service.astream_contract(...)`` here.

:func:`stream_with_progress` sends each ``Delta`` and ``ToolCallDelta`` to the client as
``notifications/progress`` (the event's JSON as ``message``, a running count as ``progress``)
as it arrives, awaiting each notification before reading the next event. The terminal event is
not sent — the tool result carries it in ``stream_events`` — except when the client cancels the
call (``notifications/cancelled``): the SDK cancels the handler, the stream cancels the runtime,
and the ``Failed`` event is sent as the last notification, since a cancelled call gets no
result. Nothing is sent after it.

For a structured-output contract a ``Delta``'s message also carries ``partial``: the answer so
far (``run.partial``'s value, unfinished strings as they grow) whenever it changed since the
last message that carried it (DECISIONS 17, 22). Messages stay bounded: a value whose JSON
would exceed :data:`PARTIAL_LIMIT` bytes is not sent; the first message where that happens
carries ``"partial_omitted": true`` instead, and later ones carry neither (the value only
grows). The tool result holds the whole answer.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import msgspec

from templiqx_application import PartialView, TempliqxService
from templiqx_contracts import (
    MISSING,
    Delta,
    Failed,
    OperationEnvelope,
    StreamEvent,
    ToolCallDelta,
    encode_stream_event,
)

__all__ = ["PARTIAL_LIMIT", "ReportProgress", "stream_with_progress"]

ReportProgress = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]

PARTIAL_LIMIT = 16_384
"""The largest ``partial`` value a progress message carries: UTF-8 bytes of its JSON."""

_encode = msgspec.json.encode


def _message(event: StreamEvent, extra: bytes = b"") -> str:
    """The event's JSON, with ``extra`` members (``,"name":value...``) added at its end."""
    encoded = encode_stream_event(event)
    if extra:
        encoded = encoded[:-1] + extra + b"}"
    return encoded.decode("utf-8")


class _PartialMembers:
    """The ``partial`` member each progress message carries (see the module docstring)."""

    def __init__(self, view: PartialView | None) -> None:
        self._view = view
        self._sent: bytes | None = None
        self._omitted = view is None

    def after(self, event: StreamEvent) -> bytes:
        """The members to add to ``event``'s message (``b""``: none)."""
        if self._omitted or not isinstance(event, Delta):
            return b""
        assert self._view is not None
        value = self._view.value
        if value is MISSING:
            return b""
        encoded = _encode(value)
        if len(encoded) > PARTIAL_LIMIT:
            self._omitted = True
            return b',"partial_omitted":true'
        if encoded == self._sent:
            return b""
        self._sent = encoded
        return b',"partial":' + encoded


async def stream_with_progress(
    service: TempliqxService, bound: Mapping[str, Any], report: ReportProgress
) -> OperationEnvelope:
    """Run a streamed ``execute_contract`` (``bound``: its bound arguments), reporting deltas.

    A notification that cannot be sent (the client went away) cancels the runtime call, and
    the envelope says so (``TQX_STREAM_SINK_FAILED``).
    """
    arguments = {name: value for name, value in bound.items() if name != "stream"}
    run = service.astream_contract(**arguments)
    sent = 0
    try:
        await run.open()
        partial = _PartialMembers(run.partial)
        async for event in run:
            if isinstance(event, (Delta, ToolCallDelta)):
                sent += 1
                await report(float(sent), None, _message(event, partial.after(event)))
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await run.aclose()
            terminal = run.envelope.stream_events[-1:] if run.finished else []
            if terminal and isinstance(terminal[0], Failed):
                await report(float(sent + 1), None, _message(terminal[0]))
        raise
    except Exception as exc:  # reporting failed: stop the runtime, the envelope says why
        with anyio.CancelScope(shield=True):
            await run.aclose(exc)
    finally:
        with anyio.CancelScope(shield=True):
            await run.aclose()
    return run.envelope
