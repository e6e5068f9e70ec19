"""Running a cancellable call so that Ctrl-C cancels it instead of killing it mid-way.

The call runs on a worker thread; the main thread waits for it. The first SIGINT (Ctrl-C) sets
the cancel token the runtime watches, and the main thread keeps waiting until the runtime has
ended the stream with its ``Failed`` event and the service has returned its envelope. A second
SIGINT stops waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["run_interruptible"]

T = TypeVar("T")

_POLL_SECONDS = 0.05


def run_interruptible(work: Callable[[threading.Event], T]) -> tuple[T, bool]:
    """``work(cancel)`` on a worker thread; its result and whether Ctrl-C was pressed.

    A second Ctrl-C re-raises :class:`KeyboardInterrupt` without waiting any longer.
    """
    cancel = threading.Event()
    results: list[T] = []
    failures: list[BaseException] = []

    def target() -> None:
        try:
            results.append(work(cancel))
        except BaseException as exc:  # handed to the main thread below
            failures.append(exc)

    worker = threading.Thread(target=target, name="templiqx-call", daemon=True)
    worker.start()
    interrupted = False
    while worker.is_alive():
        try:
            worker.join(_POLL_SECONDS)
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            cancel.set()
    if failures:
        raise failures[0]
    return results[0], interrupted
