"""Calling an adapter under observation: deadlines, recorded events, late sink calls.

Every adapter call the kit makes runs on a worker thread (which is then "the caller's thread"
from the adapter's point of view) so that a hung adapter fails its check instead of hanging the
kit. Streaming calls record every event the sink receives, and separately every event that
arrives after ``execute_streaming`` returned or raised (which the port forbids).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from templiqx_contracts import ExecutionReceipt, ExecutionRequest
from templiqx_ports import CancelToken, RuntimeAdapter

__all__ = ["Outcome", "describe_error", "run_execute", "run_streaming"]

_POLL_S = 0.02


@dataclass
class Outcome:
    """What one adapter call did.

    ``result`` is what the call returned (normally an :class:`ExecutionReceipt`), ``error`` what
    it raised, ``events`` what the sink received while the call ran, ``late_events`` what it
    received afterwards. ``timed_out`` means the call had not finished after the deadline.
    ``elapsed`` is in seconds, measured from the call's start.
    """

    result: Any = None
    error: Exception | None = None
    events: list[Any] = field(default_factory=list)
    late_events: list[Any] = field(default_factory=list)
    timed_out: bool = False
    elapsed: float = 0.0
    finished_at: float = 0.0

    @property
    def receipt(self) -> ExecutionReceipt | None:
        """The returned receipt, when the call returned one."""
        return self.result if isinstance(self.result, ExecutionReceipt) else None


def describe_error(error: BaseException) -> str:
    """``ClassName [CODE]: text`` for people reading a failure message."""
    code = getattr(error, "code", None)
    code_part = f" [{code}]" if isinstance(code, str) else ""
    return f"{type(error).__name__}{code_part}: {error}"


def _run(
    call: Callable[[], Any],
    outcome: Outcome,
    timeout: float,
    done: threading.Event,
    cutoff: Callable[[], float | None] | None = None,
) -> None:
    start = time.monotonic()

    def work() -> None:
        try:
            outcome.result = call()
        except Exception as exc:  # the kit reports whatever the adapter raised
            outcome.error = exc
        finally:
            outcome.finished_at = time.monotonic()
            outcome.elapsed = outcome.finished_at - start
            done.set()

    worker = threading.Thread(target=work, name="templiqx-conformance-call", daemon=True)
    worker.start()
    if cutoff is None:
        finished = done.wait(timeout)
    else:
        finished = False
        while not finished:
            finished = done.wait(_POLL_S)
            now = time.monotonic()
            limit = cutoff()
            if now - start > timeout or (limit is not None and now > limit):
                finished = done.is_set()
                break
    if not finished:
        outcome.timed_out = True
        outcome.elapsed = time.monotonic() - start


def run_execute(adapter: RuntimeAdapter, request: ExecutionRequest, timeout: float) -> Outcome:
    """Call ``adapter.execute(request)`` with a deadline."""
    outcome = Outcome()
    _run(lambda: adapter.execute(request), outcome, timeout, threading.Event())
    return outcome


def run_streaming(
    adapter: RuntimeAdapter,
    request: ExecutionRequest,
    timeout: float,
    *,
    cancel: CancelToken | None = None,
    on_event: Callable[[Any], None] | None = None,
    grace: float = 0.0,
    cutoff: Callable[[], float | None] | None = None,
) -> Outcome:
    """Call ``adapter.execute_streaming(request, sink, cancel=cancel)`` with a deadline.

    ``on_event`` is called after each event is recorded (e.g. to set a cancel token). After the
    call ends the kit waits ``grace`` seconds so that events sent late are observed. ``cutoff``
    may return an earlier deadline once one is known (``time.monotonic()`` value), e.g. a
    moment after a cancel token was set.
    """
    outcome = Outcome()
    done = threading.Event()
    lock = threading.Lock()

    def sink(event: Any) -> None:
        with lock:
            if done.is_set():
                outcome.late_events.append(event)
                return
            outcome.events.append(event)
        if on_event is not None:
            on_event(event)

    def call() -> Any:
        if cancel is None:
            return adapter.execute_streaming(request, sink)
        return adapter.execute_streaming(request, sink, cancel=cancel)

    _run(call, outcome, timeout, done, cutoff)
    if grace > 0 and not outcome.timed_out:
        time.sleep(grace)
    return outcome
