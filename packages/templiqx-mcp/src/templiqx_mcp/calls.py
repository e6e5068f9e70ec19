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
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio

from templiqx_application import TempliqxService
from templiqx_contracts import (
    Delta,
    Failed,
    OperationEnvelope,
    StreamEvent,
    ToolCallDelta,
    encode_stream_event,
)

__all__ = ["ReportProgress", "stream_with_progress"]

ReportProgress = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]


def _message(event: StreamEvent) -> str:
    return encode_stream_event(event).decode("utf-8")


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
        async for event in run:
            if isinstance(event, (Delta, ToolCallDelta)):
                sent += 1
                await report(float(sent), None, _message(event))
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
