"""The iterator and async stream APIs over the OpenAI runtime and a loopback SSE server.

The iterator runs the OpenAI runtime's synchronous port on the service's worker pool; the async
stream awaits its native async twin on the event loop. Leaving the stream early or cancelling the
consuming task must stop the runtime within 100 ms and close its HTTP connection — observed from
the server's side.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from templiqx_conformance.loopback import (
    CHAT_COMPLETIONS_PATH,
    Exchange,
    LoopbackServer,
    Reply,
    sse_frame,
)
from templiqx_conformance.wires.openai import stream_chunk
from templiqx_contracts import Delta, Failed, StreamEvent
from templiqx_local import compose
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

KEY = "sk-stream-api-test-5c1e"


def _ticking_server() -> LoopbackServer:
    tick = sse_frame(stream_chunk({"content": "tick "}))
    return LoopbackServer(routes={"/v1" + CHAT_COMPLETIONS_PATH: Reply.ticking(tick, every_s=0.01)})


def _service(root: Path, server: LoopbackServer) -> Any:
    runtime = OpenAIRuntime(
        OpenAISettings(
            base_url=server.base_url + "/v1", api_key=KEY, model="loopback", timeout_ms=30_000
        )
    )
    return compose(str(root), runtime=runtime)


def _call(harness: Any) -> dict[str, Any]:
    return {"package": "welcome", "contract": "onboarding-summary", **harness.scenario_request()}


def _closed_exchange(server: LoopbackServer) -> Exchange:
    (exchange,) = server.exchanges
    assert exchange.wait(2.0), "the server saw the exchange end"
    assert exchange.client_closed, exchange.outcome
    return exchange


def _ends_cancelled(events: list[StreamEvent]) -> None:
    terminal = events[-1]
    assert isinstance(terminal, Failed)
    assert terminal.code == "TQX_RUNTIME_CANCELLED"
    assert all(isinstance(event, Delta) for event in events[:-1])


def test_breaking_out_of_the_iterator_closes_the_connection_within_100_ms(
    welcome_root: Path, harness: Any
) -> None:
    with _ticking_server() as server:
        service = _service(welcome_root, server)
        with service.stream_contract(**_call(harness)) as run:
            assert run.ok
            for count, _ in enumerate(run, 1):
                if count == 3:
                    break
            left_at = time.monotonic()
        exchange = _closed_exchange(server)
        assert exchange.client_closed_at is not None
        assert exchange.client_closed_at - left_at < 0.1
        _ends_cancelled(run.envelope.stream_events)
        service.close()


def test_cancelling_the_task_closes_the_connection_within_100_ms(
    welcome_root: Path, harness: Any
) -> None:
    with _ticking_server() as server:
        service = _service(welcome_root, server)
        seen: list[StreamEvent] = []
        box: dict[str, Any] = {}

        async def consume() -> None:
            run = service.astream_contract(**_call(harness))
            box["run"] = run
            async with run:
                async for event in run:
                    seen.append(event)

        async def main() -> float:
            task = asyncio.create_task(consume())
            while len(seen) < 3:
                await asyncio.sleep(0.005)
            task.cancel()
            cancelled_at = time.monotonic()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return cancelled_at

        cancelled_at = asyncio.run(main())
        exchange = _closed_exchange(server)
        assert exchange.client_closed_at is not None
        assert exchange.client_closed_at - cancelled_at < 0.1
        _ends_cancelled(box["run"].envelope.stream_events)
        service.close()
