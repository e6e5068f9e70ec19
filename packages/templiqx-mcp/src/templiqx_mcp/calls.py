"""Running a blocking service call from an MCP handler, cancellably and with live progress.

The service is synchronous. A call that consults a cancel token (``execute_contract``) runs
through :func:`run_cancellable`: on a worker thread while the event loop keeps serving. When the
client cancels the request (``notifications/cancelled``), the SDK cancels the handler; the
handler then sets the call's cancel token — which a streaming runtime notices within a second —
and waits, shielded, until the runtime has emitted its ``Failed`` event and the service has
returned. The worker thread is never abandoned. Other calls that leave the event loop take
:func:`run_on_worker`, a plain worker-thread call without the token and its watcher task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from templiqx_contracts import Delta, Failed, StreamEvent, ToolCallDelta, encode_stream_event

__all__ = ["ProgressSink", "run_cancellable", "run_on_worker"]

T = TypeVar("T")

ReportProgress = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]


async def run_cancellable(work: Callable[[], T], cancel: threading.Event) -> T:
    """``work()`` on a worker thread; a cancellation of the caller sets ``cancel`` first.

    The caller's cancellation is re-raised once ``work`` has returned.
    """
    results: list[T] = []
    finished = threading.Event()

    async def call() -> None:
        results.append(await anyio.to_thread.run_sync(work))
        finished.set()
        group.cancel_scope.cancel()

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            if not finished.is_set():
                cancel.set()

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        group.start_soon(watch)
    return results[0]


async def run_on_worker(work: Callable[[], T]) -> T:
    """``work()`` on a worker thread; a cancellation of the caller waits for it, then is raised.

    Like :func:`run_cancellable` for work that has no cancel token, at a third of its cost (no
    task group, no watcher task).
    """
    result = await anyio.to_thread.run_sync(work)
    await anyio.lowlevel.checkpoint_if_cancelled()
    return result


class ProgressSink:
    """A stream sink that sends each event to the client as ``notifications/progress``.

    ``Delta`` and ``ToolCallDelta`` events are sent as they arrive, the event's JSON as the
    notification's ``message`` and a running count as its ``progress``. A ``Complete`` or
    ``Failed`` event is not sent — the tool result carries it in ``stream_events`` — except a
    ``Failed`` after the client cancelled the call: the cancelled call gets no result, so that
    notification is how the client learns how the stream ended. Nothing is sent after it.

    Called on the worker thread; each notification is written before the sink returns, so the
    notifications precede the tool result.
    """

    def __init__(self, report: ReportProgress, cancel: threading.Event) -> None:
        self._report = report
        self._cancel = cancel
        self._sent = 0
        self._closed = False

    def _send(self, event: StreamEvent) -> None:
        self._sent += 1
        message = encode_stream_event(event).decode("utf-8")
        anyio.from_thread.run(self._report, float(self._sent), None, message)

    def __call__(self, event: StreamEvent) -> None:
        if self._closed:
            return
        if isinstance(event, (Delta, ToolCallDelta)):
            if not self._cancel.is_set():
                self._send(event)
        elif isinstance(event, Failed) and self._cancel.is_set():
            self._closed = True
            self._send(event)
        else:
            self._closed = True
