"""P11: 20 concurrent async streams — does the event loop stay responsive, and how many threads?

Twenty streams of 2,000 deltas each come from ``sse_server.py`` on loopback, all at once, read
two ways in the same process, interleaved round by round:

* templiqx: ``async with service.astream_contract(...) as run: async for event in run`` over
  the OpenAI runtime (synchronous today, so it runs on the service's bounded worker pool);
* the official ``openai`` SDK: ``AsyncOpenAI().chat.completions.create(stream=True)``.

While they run, a probe task sleeps 1 ms at a time and records how late it wakes: the event
loop's lag, which is what a trivial endpoint served by the same loop would wait. Reported: the
lag's p99 per side (the target is under 50 ms for templiqx) and the most threads alive at once
beyond those before the round. Before timing, every stream of each side is checked: 2,000
deltas whose text assembles the expected summary, and for templiqx an ok envelope.
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

from templiqx_contracts import Delta

__all__ = ["run"]

STREAMS = 20
DELTAS = 2_000
TARGET_LAG_S = 0.050
INPUTS = {"topic": "the contract"}


async def _probe(done: asyncio.Event, lags: list[float], threads: list[int]) -> None:
    while not done.is_set():
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(max(0.0, time.perf_counter() - before - 0.001))
        threads.append(threading.active_count())


async def _round(streams: list[Any]) -> tuple[list[Any], float, int]:
    baseline = threading.active_count()
    done = asyncio.Event()
    lags: list[float] = []
    threads: list[int] = []
    probe = asyncio.create_task(_probe(done, lags, threads))
    results = await asyncio.gather(*(stream() for stream in streams))
    done.set()
    await probe
    lags.sort()
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else 0.0
    return results, p99, max(threads, default=baseline) - baseline


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P11",
        what="event-loop lag p99, 20 concurrent async streams (OpenAI runtime, loopback)",
        baseline="the same 20 streams through AsyncOpenAI",
        target=None,
    )
    expected = expected_summary(DELTAS)
    with _Server(DELTAS) as server:
        service = service_for(settings.scratch / "p11", server.base_url)
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=120
        )

        async def templiqx_stream() -> tuple[int, str, bool]:
            deltas: list[str] = []
            run = service.astream_contract(PACKAGE, CONTRACT, inputs=INPUTS)
            async with run:
                async for event in run:
                    if isinstance(event, Delta):
                        deltas.append(event.text)
            return len(deltas), "".join(deltas), run.envelope.ok

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

        def side(stream: Any) -> tuple[float, int]:
            results, p99, threads = asyncio.run(_round([stream] * STREAMS))
            for count, text, ok in results:
                check(ok, "a templiqx stream ended not ok")
                check(count == DELTAS, f"{count} deltas instead of {DELTAS}")
                check(text == '{"summary": "' + expected + '"}', "the deltas assemble otherwise")
            return p99, threads

        side(templiqx_stream)  # checks, and warms up
        side(sdk_stream)
        ours: list[float] = []
        theirs: list[float] = []
        our_threads = their_threads = 0
        for index in range(settings.rounds(7)):
            order = [(templiqx_stream, ours), (sdk_stream, theirs)]
            for stream, lags in order if index % 2 == 0 else reversed(order):
                p99, threads = side(stream)
                lags.append(p99)
                if stream is templiqx_stream:
                    our_threads = max(our_threads, threads)
                else:
                    their_threads = max(their_threads, threads)
        ratios = [a / b if b else float("inf") for a, b in zip(ours, theirs, strict=True)]
        row.record(Timing(ours), Timing(theirs), ratios)
        row.metrics = {
            "lag_p99_ms": round(statistics.median(ours) * 1000, 2),
            "asyncopenai_lag_p99_ms": round(statistics.median(theirs) * 1000, 2),
            "target_lag_p99_ms": TARGET_LAG_S * 1000,
            "target_met": statistics.median(ours) < TARGET_LAG_S,
            "threads_used": our_threads,
            "asyncopenai_threads_used": their_threads,
            "worker_pool_bound": service._pool.max_threads,
        }
        service.close()
    return [row]
