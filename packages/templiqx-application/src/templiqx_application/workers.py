"""The service's worker threads, and the hand-off of events from a worker to its consumer.

The async API must never block the event loop, yet most of the service is synchronous: loading
and compiling read files, and a runtime without the async twin
(:class:`~templiqx_ports.AsyncRuntimeAdapter`) blocks on its socket. That work runs on a
:class:`WorkerPool` the service owns: a :class:`~concurrent.futures.ThreadPoolExecutor` with a
fixed upper bound (:data:`DEFAULT_WORKER_THREADS`), threads named ``templiqx-worker-N``, started
only when needed and shut down with the service (never the event loop's default executor, whose
small size would make concurrent streams queue behind each other).

:class:`EventChannel` carries the events of a runtime running on a worker to the one consumer
reading them — a thread (``get``) or an event loop (``aget``). It is bounded: a producer that
gets ahead of its consumer by :data:`CHANNEL_CAPACITY` events waits, so a slow consumer slows
the runtime instead of filling memory. Closing the channel from the consumer's side makes every
later ``put`` return at once, so a runtime is never left waiting for a consumer that has gone.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Generic, TypeVar

from templiqx_application.observability import carried
from templiqx_core.fuel import CallCancelledError, cancelled_by

if TYPE_CHECKING:  # asyncio is imported where it is used: blocking callers never pay for it
    import asyncio
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = [
    "CHANNEL_CAPACITY",
    "DEFAULT_WORKER_THREADS",
    "END",
    "CpuSlots",
    "End",
    "EventChannel",
    "WorkerPool",
    "default_cpu_slots",
]

T = TypeVar("T")

DEFAULT_WORKER_THREADS = 64
"""Upper bound of a service's worker threads: 64 blocking calls run at once, more wait."""

CHANNEL_CAPACITY = 256
"""Events a producer may run ahead of its consumer."""

_SLOT_POLL_S = 0.05


def default_cpu_slots() -> int:
    """CPU-bound calls run at once by default: one per CPU, at least two."""
    return max(2, os.cpu_count() or 2)


class CpuSlots:
    """At most ``size`` threads doing CPU-bound work (loading, validating, rendering) at once.

    Worker threads are many (a blocking runtime call holds one for as long as the model
    answers), but Python runs one of them at a time: 64 threads rendering at once take the GIL
    from the event loop for tens of seconds (issue #29: ``ping`` waited 29 s behind 64
    ``render_contract`` calls, and so did the cancellations that would have stopped them).
    A call takes a slot for its CPU-bound part and waits for one otherwise, off the GIL, looking
    at its fuel's cancel tokens every 50 ms: a cancelled call leaves the queue at once. A thread
    that holds a slot takes none again (evals compile inside ``test_package``'s slot).
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size if size is not None else default_cpu_slots()
        if self.size < 1:
            raise ValueError("CPU slots need at least one place")
        self._slots = threading.BoundedSemaphore(self.size)
        self._held = threading.local()

    @contextmanager
    def slot(self, cancelled: Callable[[], bool]) -> Iterator[None]:
        """Hold a slot while the block runs; :class:`CallCancelledError` when ``cancelled()``
        turns true while waiting for one."""
        if getattr(self._held, "slot", False):
            yield
            return
        while not self._slots.acquire(timeout=_SLOT_POLL_S):
            if cancelled():
                raise CallCancelledError
        self._held.slot = True
        try:
            yield
        finally:
            self._held.slot = False
            self._slots.release()


class WorkerPool:
    """A lazily started, bounded pool of named worker threads (one per service)."""

    def __init__(self, max_threads: int = DEFAULT_WORKER_THREADS) -> None:
        if max_threads < 1:
            raise ValueError("a worker pool needs at least one thread")
        self.max_threads = max_threads
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """Run ``work()`` on a worker thread.

        When the caller is being traced, the worker runs in the caller's trace context (the
        current span, the operation being traced), so work done for a traced call stays in its
        trace (:func:`~templiqx_application.observability.carried`).
        """
        with self._lock:
            if self._executor is None:
                # Imported with the first worker (with logging, ~10 ms): a blocking command
                # such as `templiqx validate` never starts one (issue #33).
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(
                    max_workers=self.max_threads, thread_name_prefix="templiqx-worker"
                )
            executor = self._executor
        return executor.submit(carried(work))

    async def run(self, work: Callable[[], T]) -> T:
        """Await ``work()`` run on a worker thread; the loop keeps running meanwhile.

        A thread cannot be interrupted, so a cancellation of the awaiting task sets a cancel
        token the work runs under (:func:`templiqx_core.fuel.cancelled_by`): every render-fuel
        budget created inside it is cancelled, and the work stops as it draws fuel (within
        milliseconds). The task still waits for the thread to finish, then the cancellation goes
        on, so no worker is ever left running for a caller that has gone (a bound on callers is
        a bound on workers).
        """
        import asyncio

        token = threading.Event()

        def guarded() -> T:
            with cancelled_by(token):
                return work()

        future = asyncio.wrap_future(self.submit(guarded))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            token.set()
            while not future.done():
                try:
                    await asyncio.wait([future])
                except asyncio.CancelledError:
                    continue  # cancelled again: still wait for the thread
            if not future.cancelled():
                future.exception()  # retrieved: nobody awaits this outcome any more
            raise

    def shutdown(self) -> None:
        """Stop accepting work and let the running calls finish (idempotent)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


class End:
    """Marks the end of a channel's items (the one instance is :data:`END`)."""


END = End()


class EventChannel(Generic[T]):
    """A bounded hand-off from one producer thread to one consumer (thread or event loop)."""

    def __init__(self, capacity: int = CHANNEL_CAPACITY) -> None:
        self._capacity = capacity
        self._items: deque[T | End] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None

    # --- producer side ---------------------------------------------------------------------

    def put(self, item: T) -> bool:
        """Hand ``item`` over, waiting while the channel is full; ``False`` once it is closed."""
        with self._cond:
            while len(self._items) >= self._capacity and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._items.append(item)
            self._wake()
        return True

    def offer(self, item: T) -> None:
        """:meth:`put` as a stream sink (an item offered after closing is dropped)."""
        self.put(item)

    def finish(self) -> None:
        """No more items will come."""
        with self._cond:
            self._items.append(END)
            self._wake()

    def _wake(self) -> None:
        self._cond.notify_all()
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            loop, future = waiter
            loop.call_soon_threadsafe(_resolve, future)

    # --- consumer side ---------------------------------------------------------------------

    def close(self) -> None:
        """The consumer has gone: drop what is queued and refuse everything after."""
        with self._cond:
            self._closed = True
            self._items.clear()
            self._cond.notify_all()

    def get(self, timeout: float | None = None) -> T | End | None:
        """The next item (:data:`END` after the last), waiting; ``None`` on timeout."""
        with self._cond:
            if not self._items and not self._cond.wait_for(lambda: bool(self._items), timeout):
                return None
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    async def aget(self) -> T | End:
        """The next item (:data:`END` after the last), awaiting it on the running loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        while True:
            with self._cond:
                if self._items:
                    item = self._items.popleft()
                    self._cond.notify_all()
                    return item
                future: asyncio.Future[None] = loop.create_future()
                self._waiter = (loop, future)
            await future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
