"""Worker-thread calls and their cancellation (``templiqx_mcp.calls``)."""

from __future__ import annotations

import threading
import time

import anyio

from templiqx_mcp.calls import run_on_worker


def test_run_on_worker_returns_the_result_off_the_loop() -> None:
    async def main() -> tuple[int, bool]:
        loop_thread = threading.get_ident()
        return await run_on_worker(lambda: (42, threading.get_ident() != loop_thread))

    assert anyio.run(main) == (42, True)


def test_a_cancelled_call_waits_for_the_work_then_is_cancelled() -> None:
    finished = threading.Event()
    seen: dict[str, object] = {}

    def work() -> str:
        time.sleep(0.3)
        finished.set()
        return "done"

    async def main() -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    seen["result"] = await run_on_worker(work)

                group.start_soon(call)
                await anyio.sleep(0.05)
                scope.cancel()
                cancelled_at = time.monotonic()
        seen["waited"] = time.monotonic() - cancelled_at
        seen["cancelled"] = scope.cancelled_caught

    anyio.run(main)
    assert finished.is_set(), "the worker thread is never abandoned"
    assert seen["cancelled"] is True
    assert "result" not in seen, "the cancellation is raised once the work has returned"
    assert isinstance(seen["waited"], float)
    assert seen["waited"] >= 0.2
