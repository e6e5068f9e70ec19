"""P11: 20 concurrent async streams — does the event loop stay responsive, and how many threads?

Twenty streams of 2,000 deltas each come from ``sse_server.py`` on loopback, all at once, read
three ways in the same process, interleaved round by round:

* templiqx: ``async with service.astream_contract(...) as run: async for event in run`` over
  the OpenAI runtime, whose native async twin runs on the event loop (httpx2, no thread);
* the official ``openai`` SDK: ``AsyncOpenAI().chat.completions.create(stream=True)``;
* for comparison, templiqx over the same runtime seen only through its synchronous port (a
  wrapper without the async twin), which the service runs on its bounded worker pool — what
  every async stream cost before the runtime had its twin.

While they run, a probe task sleeps 1 ms at a time and records how late it wakes: the event
loop's lag, which is what a trivial endpoint served by the same loop would wait. Reported: the
lag's p99 per side (the target is under 50 ms for templiqx) and the most threads alive at once
beyond those of the process before the service was made, with their names (the service's
workers load and compile the contract; see the note in docs/performance.md). Before timing,
every stream of each side is checked: 2,000 deltas whose text assembles the expected summary,
and for templiqx an ok envelope.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from typing import Any

import openai
from harness import Comparison, Settings, Timing, check
from host_package import API_KEY, CONTRACT, MODEL, PACKAGE, service_for
from p1_stream import _Server
from sse_server import expected_summary

from templiqx_contracts import Delta, ExecutionReceipt, ExecutionRequest
from templiqx_local import compose
from templiqx_ports import CancelToken, RuntimeAdapter, StreamSink
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

__all__ = ["run"]

STREAMS = 20
DELTAS = 2_000
TARGET_LAG_S = 0.050
INPUTS = {"topic": "the contract"}


class _SyncOnly(RuntimeAdapter):
    """The runtime seen only through its synchronous port (no async twin)."""

    def __init__(self, inner: RuntimeAdapter) -> None:
        self._inner = inner

    def descriptor(self) -> Any:
        return self._inner.descriptor()

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._inner.execute(request)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        return self._inner.execute_streaming(request, sink, cancel=cancel)


class _Threads:
    """Threads by the side that started them: one first seen during a side's round is its.

    The sides run one after the other and a pool's threads outlive their round, so a thread
    is attributed once, to the side running when it first appeared; :attr:`most` is the most
    of a side's own threads alive at once.
    """

    def __init__(self) -> None:
        self._owner: dict[int, str] = {t.ident or 0: "process" for t in threading.enumerate()}
        self.most: dict[str, int] = {}
        self.names: dict[str, set[str]] = {}

    def look(self, side: str) -> None:
        own = []
        for thread in threading.enumerate():
            owner = self._owner.setdefault(thread.ident or 0, side)
            if owner == side:
                own.append(thread)
        self.most[side] = max(self.most.get(side, 0), len(own))
        names = self.names.setdefault(side, set())
        names.update(t.name.rstrip("0123456789_").rstrip("-") for t in own)


async def _probe(done: asyncio.Event, lags: list[float], threads: _Threads, side: str) -> None:
    while not done.is_set():
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(max(0.0, time.perf_counter() - before - 0.001))
        threads.look(side)


async def _round(streams: list[Any], threads: _Threads, side: str) -> tuple[list[Any], float]:
    done = asyncio.Event()
    lags: list[float] = []
    threads.look(side)
    probe = asyncio.create_task(_probe(done, lags, threads, side))
    results = await asyncio.gather(*(stream() for stream in streams))
    done.set()
    await probe
    lags.sort()
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else 0.0
    return results, p99


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P11",
        what="event-loop lag p99, 20 concurrent async streams (OpenAI runtime, loopback)",
        baseline="the same 20 streams through AsyncOpenAI",
        target=None,
        goal=f"lag p99 < {TARGET_LAG_S * 1000:g} ms",
    )
    expected = expected_summary(DELTAS)
    with _Server(DELTAS) as server:
        threads = _Threads()
        service = service_for(settings.scratch / "p11", server.base_url)
        sync_only = _SyncOnly(
            OpenAIRuntime(
                OpenAISettings(
                    base_url=server.base_url, api_key=API_KEY, model=MODEL, timeout_ms=600_000
                )
            )
        )
        pooled = compose(str(settings.scratch / "p11"), runtime=sync_only)
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=120
        )

        def templiqx_on(host: Any) -> Any:
            async def stream() -> tuple[int, str, bool]:
                deltas: list[str] = []
                run = host.astream_contract(PACKAGE, CONTRACT, inputs=INPUTS)
                async with run:
                    async for event in run:
                        if isinstance(event, Delta):
                            deltas.append(event.text)
                return len(deltas), "".join(deltas), run.envelope.ok

            return stream

        async def sdk_stream() -> tuple[int, str, bool]:
            deltas: list[str] = []
            stream = await client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "Summarise the contract"}],
                stream=True,
            )
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    deltas.append(chunk.choices[0].delta.content)
            return len(deltas), "".join(deltas), True

        sides = {
            "templiqx": templiqx_on(service),
            "worker_path": templiqx_on(pooled),
            "sdk": sdk_stream,
        }

        def side(name: str) -> float:
            results, p99 = asyncio.run(_round([sides[name]] * STREAMS, threads, name))
            for count, text, ok in results:
                check(ok, "a templiqx stream ended not ok")
                check(count == DELTAS, f"{count} deltas instead of {DELTAS}")
                check(text == '{"summary": "' + expected + '"}', "the deltas assemble otherwise")
            return p99

        for name in sides:  # checks, and warms up
            side(name)
        lags: dict[str, list[float]] = {name: [] for name in sides}
        for index in range(settings.rounds(7)):
            order = list(sides) if index % 2 == 0 else list(reversed(sides))
            for name in order:
                lags[name].append(side(name))
        ours, theirs = lags["templiqx"], lags["sdk"]
        ratios = [a / b if b else float("inf") for a, b in zip(ours, theirs, strict=True)]
        row.record(Timing(ours), Timing(theirs), ratios)
        row.metrics = {
            "lag_p99_ms": round(statistics.median(ours) * 1000, 2),
            "asyncopenai_lag_p99_ms": round(statistics.median(theirs) * 1000, 2),
            "worker_path_lag_p99_ms": round(statistics.median(lags["worker_path"]) * 1000, 2),
            "target_lag_p99_ms": TARGET_LAG_S * 1000,
            "target_met": statistics.median(ours) < TARGET_LAG_S,
            "threads_used": threads.most.get("templiqx", 0),
            "thread_names": sorted(threads.names.get("templiqx", ())),
            "asyncopenai_threads_used": threads.most.get("sdk", 0),
            "worker_path_threads_used": threads.most.get("worker_path", 0),
            "worker_path_thread_names": sorted(threads.names.get("worker_path", ())),
            "worker_pool_bound": service._pool.max_threads,
        }
        row.goal_met = row.metrics["target_met"]
        pooled.close()
        service.close()
    return [row]
