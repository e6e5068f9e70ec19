"""Batch runs as objects to iterate: :class:`BatchRun` (``for``) and :class:`AsyncBatchRun`
(``async for``), what ``service.batch(...)`` and ``service.abatch(...)`` return.

Both drive one :class:`~templiqx_application.batch.engine.BatchEngine`. The async run drives it
on the caller's event loop. The sync run gives it an event loop of its own on a thread named
``templiqx-batch`` (started by the first ``next``, in a copy of the caller's context) and hands
results across through a queue that holds at most ``window`` of them, so a slow consumer slows
the run instead of filling memory.

Rows come from any iterable (an async iterable too, for :class:`AsyncBatchRun`); a sync
iterable is read on a worker thread in small chunks, so reading a file never blocks the loop.

Stopping: :meth:`BatchRun.cancel` (and the ``cancel`` token) stops admitting rows and cancels
the calls in flight, and iteration goes on to hand out every result that had finished, then
ends; :meth:`BatchRun.close` (and leaving the ``with`` block) does the same and drops what
was not taken yet. :attr:`BatchRun.summary` is final once iteration has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from itertools import islice
from types import TracebackType
from typing import Any

from templiqx_application.batch.engine import BatchEngine
from templiqx_application.batch.results import BatchResult, BatchSummary
from templiqx_application.batch.rows import BatchRow, as_row
from templiqx_contracts import Diagnostic

__all__ = ["AsyncBatchRun", "BatchRun", "RowSource"]

RowSource = Iterable[BatchRow | Mapping[str, Any]] | AsyncIterable[BatchRow | Mapping[str, Any]]

_CHUNK = 64
"""Rows read from a synchronous source per worker-thread hop."""


class _Done:
    """The sync run's thread has finished (carrying what it raised, if anything)."""

    def __init__(self, failure: BaseException | None = None) -> None:
        self.failure = failure


async def _rows(source: RowSource) -> AsyncIterator[BatchRow]:
    """``source`` as rows, numbered from 0 in order (a row keeps its own index)."""
    index = 0
    if isinstance(source, AsyncIterable):
        async for value in source:
            yield as_row(value, index)
            index += 1
        return
    iterator = iter(source)
    loop = asyncio.get_running_loop()
    while True:
        chunk = await loop.run_in_executor(None, lambda: list(islice(iterator, _CHUNK)))
        if not chunk:
            return
        for value in chunk:
            yield as_row(value, index)
            index += 1


class AsyncBatchRun:
    """``async for result in service.abatch(...)`` (see the module docstring)."""

    def __init__(self, engine: BatchEngine, source: RowSource) -> None:
        self.engine = engine
        self._source = source
        self._results: AsyncIterator[BatchResult] | None = None
        self._finished = False

    def __aiter__(self) -> AsyncBatchRun:
        return self

    async def __anext__(self) -> BatchResult:
        if self._results is None:
            self._results = aiter(self.engine.results(_rows(self._source)))
        try:
            return await anext(self._results)
        except StopAsyncIteration:
            self._finished = True
            raise

    async def __aenter__(self) -> AsyncBatchRun:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def cancel(self) -> None:
        """Stop admitting rows and cancel the calls in flight; iterate on for what finished."""
        self.engine.cancel()

    async def aclose(self) -> None:
        """Stop the run and release everything (results not taken yet are dropped)."""
        if self._results is not None and not self._finished:
            self.engine.cancel()
            closer = getattr(self._results, "aclose", None)
            if closer is not None:
                await closer()
        self._finished = True

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Why the run was refused before any row ran (empty otherwise)."""
        return self.engine.setup_problems

    @property
    def summary(self) -> BatchSummary:
        """The summary (final once iteration has ended)."""
        return self.engine.summary()


class BatchRun:
    """``for result in service.batch(...)`` (see the module docstring). One consumer thread."""

    def __init__(self, engine: BatchEngine, source: RowSource) -> None:
        self.engine = engine
        self._source = source
        window = engine.options.admission
        self._queue: queue.Queue[BatchResult | _Done] = queue.Queue()
        self._room = window
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._space: asyncio.Semaphore | None = None
        self._ready = threading.Event()
        self._finished = False
        self._context = contextvars.copy_context()

    # --- the run's own thread and loop --------------------------------------------------------

    def _start(self) -> None:
        self._thread = threading.Thread(
            target=lambda: self._context.run(self._main), name="templiqx-batch", daemon=True
        )
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        failure: BaseException | None = None
        try:
            asyncio.run(self._pump())
        except BaseException as exc:  # handed to the consumer
            failure = exc
        finally:
            self._ready.set()
            self._queue.put(_Done(failure))

    async def _pump(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._space = asyncio.Semaphore(self._room)
        self._ready.set()
        async for result in self.engine.results(_rows(self._source)):
            await self._space.acquire()
            self._queue.put(result)

    def _taken(self) -> None:
        loop, space = self._loop, self._space
        if loop is not None and space is not None:
            # a closed loop raises RuntimeError: nothing waits for room any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(space.release)

    def _on_loop(self, action: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(action)

    # --- the consumer's side ------------------------------------------------------------------

    def __iter__(self) -> Iterator[BatchResult]:
        return self

    def __next__(self) -> BatchResult:
        if self._finished:
            raise StopIteration
        if self._thread is None:
            self._start()
        item = self._queue.get()
        if isinstance(item, _Done):
            self._finished = True
            if item.failure is not None:
                raise item.failure
            raise StopIteration
        self._taken()
        return item

    def __enter__(self) -> BatchRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def cancel(self) -> None:
        """Stop admitting rows and cancel the calls in flight (any thread, e.g. a signal
        handler's); iterate on to take every result that had finished."""
        self._on_loop(self.engine.cancel)

    def close(self) -> None:
        """Stop the run and wait for its thread (results not taken yet are dropped)."""
        if self._thread is None or self._finished:
            self._finished = True
            return
        self._on_loop(self.engine.cancel)
        while True:
            item = self._queue.get()
            if isinstance(item, _Done):
                break
            self._taken()
        self._thread.join()
        self._finished = True

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Why the run was refused before any row ran (empty otherwise; known after the
        first ``next``)."""
        return self.engine.setup_problems

    @property
    def summary(self) -> BatchSummary:
        """The summary (final once iteration has ended)."""
        return self.engine.summary()
