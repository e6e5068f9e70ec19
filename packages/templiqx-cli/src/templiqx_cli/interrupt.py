"""Running a cancellable call so that Ctrl-C cancels it instead of killing it mid-way.

The call runs on a worker thread; the main thread waits for it. The first SIGINT (Ctrl-C) sets
the cancel token the runtime watches, and the main thread keeps waiting until the runtime has
ended the stream with its ``Failed`` event and the service has returned its envelope. A second
SIGINT stops waiting (:class:`KeyboardInterrupt`).

On the main thread, SIGINT is handled by a temporary handler for the duration of the call (so
no :class:`KeyboardInterrupt` can surface at an arbitrary point); elsewhere, or when SIGINT is
ignored, the usual :class:`KeyboardInterrupt` is caught around the wait instead.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TypeVar

__all__ = ["run_interruptible"]

T = TypeVar("T")

_POLL_SECONDS = 0.05


class _Interrupts:
    """Counts Ctrl-C presses; the first sets the cancel token, the second gives up."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self.pressed = 0

    def press(self) -> None:
        self.pressed += 1
        self.cancel.set()
        if self.pressed > 1:
            raise KeyboardInterrupt

    def handler(self, signum: int, frame: FrameType | None) -> None:
        self.press()


def _wait(done: threading.Event, interrupts: _Interrupts) -> None:
    while not done.is_set():
        try:
            # An Event wait, not Thread.join: a KeyboardInterrupt can corrupt a joined thread's
            # state (is_alive() turning false while it still runs).
            done.wait(_POLL_SECONDS)
        except KeyboardInterrupt:
            interrupts.press()


def run_interruptible(work: Callable[[threading.Event], T]) -> tuple[T, bool]:
    """``work(cancel)`` on a worker thread; its result and whether Ctrl-C was pressed."""
    cancel = threading.Event()
    done = threading.Event()
    results: list[T] = []
    failures: list[BaseException] = []

    def target() -> None:
        try:
            results.append(work(cancel))
        except BaseException as exc:  # handed to the main thread below
            failures.append(exc)
        finally:
            done.set()

    interrupts = _Interrupts(cancel)
    own_handler = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    previous = signal.signal(signal.SIGINT, interrupts.handler) if own_handler else None
    try:
        threading.Thread(target=target, name="templiqx-call", daemon=True).start()
        _wait(done, interrupts)
    finally:
        if own_handler:
            signal.signal(signal.SIGINT, previous)
    if failures:
        raise failures[0]
    return results[0], interrupts.pressed > 0
