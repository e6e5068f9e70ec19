"""P8: what ``execute_contract`` adds to one model call, before and after prepared contracts.

Against ``sse_server.py`` on loopback (a non-streamed answer of ten words), three clients post
the same request, interleaved:

* templiqx, prepared: ``service.execute_contract(...)`` with the contract's load kept between
  calls (the default since prepared contracts);
* templiqx, unprepared: the same call with the kept loads dropped before every call, which is
  what every call cost before (read, parse, resolve and expand the contract each time);
* the floor: a bare ``requests.post`` of the very body the runtime sends.

The overhead is the median of the per-round differences (a templiqx side minus the floor in
the same round); the target (issue #33) is at most 0.5 ms for the prepared call. P8a does the
same for ``aexecute_contract`` on an event loop against an ``httpx2.AsyncClient`` POST of the
same body on the same loop (httpx2 is the HTTP client the runtime's async twin uses; the
original ``httpx`` is not installed), also at most 0.5 ms. Before timing, each side's answer is
checked once: the envelope is ok with the expected output, and each bare POST returns the same
content.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import requests
from harness import Comparison, Settings, Side, Timing, check, interleave
from host_package import API_KEY, CONTRACT, PACKAGE, service_for
from p1_stream import _Server
from sse_server import expected_summary

from templiqx_runtime_openai import OpenAIRuntime

__all__ = ["run"]

DELTAS = 10
TARGET_OVERHEAD_S = 0.0005
INPUTS = {"topic": "the contract"}


def _forget(service: Any) -> None:
    service._ctx.loader.cache.clear()


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P8",
        what="execute_contract overhead per call (non-streamed, loopback), prepared",
        baseline="bare requests.post of the same body",
        target=None,
        goal=f"overhead <= {TARGET_OVERHEAD_S * 1000:g} ms",
    )
    with _Server(DELTAS) as server:
        service = service_for(settings.scratch / "p8", server.base_url)
        runtime = service._ctx.runtime
        assert isinstance(runtime, OpenAIRuntime)
        call = {"package": PACKAGE, "contract": CONTRACT, "inputs": INPUTS}
        envelope = service.execute_contract(**call)
        check(envelope.ok, f"execute_contract failed: {envelope.diagnostics}")
        check(
            envelope.result.output == {"summary": expected_summary(DELTAS)},
            "unexpected output",
        )
        compiled = service.compile_contract(**call, capabilities=["structured_output"])
        body = json.dumps(runtime.client.request_body(compiled.result)).encode("utf-8")
        url = server.base_url + "/chat/completions"
        headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
        session = requests.Session()

        def bare() -> object:
            answer = session.post(url, data=body, headers=headers, timeout=30)
            return answer.json()["choices"][0]["message"]["content"]

        check(
            json.loads(str(bare())) == {"summary": expected_summary(DELTAS)},
            "the bare POST got another answer",
        )

        def prepared() -> object:
            return service.execute_contract(**call)

        def unprepared() -> object:
            _forget(service)
            return service.execute_contract(**call)

        rounds = settings.rounds(15)
        repeat = 20 if not settings.quick else 5
        subject, floor, ratios = interleave(
            Side("prepared", prepared),
            Side("requests", bare),
            rounds=rounds,
            subject_repeat=repeat,
            baseline_repeat=repeat,
        )
        before, floor_again, _ = interleave(
            Side("unprepared", unprepared),
            Side("requests", bare),
            rounds=rounds,
            subject_repeat=repeat,
            baseline_repeat=repeat,
        )
        row.record(subject, floor, ratios)
        after_s = statistics.median(
            a - b for a, b in zip(subject.samples, floor.samples, strict=True)
        )
        before_s = statistics.median(
            a - b for a, b in zip(before.samples, floor_again.samples, strict=True)
        )
        row.metrics = {
            "overhead_after_ms": round(after_s * 1000, 3),
            "overhead_before_ms": round(before_s * 1000, 3),
            "target_overhead_ms": TARGET_OVERHEAD_S * 1000,
            "unprepared_median_s": before.median,
        }
        row.goal_met = after_s <= TARGET_OVERHEAD_S
        session.close()
        asynchronous = asyncio.run(
            _async_row(service, call, url, body, headers, rounds=rounds, repeat=repeat)
        )
        service.close()
        runtime.close()
    return [row, asynchronous]


async def _timed(side: Callable[[], Awaitable[object]], repeat: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeat):
        await side()
    return (time.perf_counter() - start) / repeat


async def _async_row(
    service: Any,
    call: dict[str, Any],
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    rounds: int,
    repeat: int,
) -> Comparison:
    row = Comparison(
        id="P8a",
        what="aexecute_contract overhead per call (non-streamed, loopback), prepared",
        baseline="bare httpx2.AsyncClient POST of the same body, same loop",
        target=None,
        goal=f"overhead <= {TARGET_OVERHEAD_S * 1000:g} ms",
    )
    async with httpx2.AsyncClient(timeout=30) as client:

        async def bare() -> object:
            answer = await client.post(url, content=body, headers=headers)
            return answer.json()["choices"][0]["message"]["content"]

        async def ours() -> object:
            return await service.aexecute_contract(**call)

        envelope = await ours()
        check(
            envelope.ok and envelope.result.output == {"summary": expected_summary(DELTAS)},
            f"aexecute_contract failed: {envelope.diagnostics}",
        )
        check(
            json.loads(str(await bare())) == {"summary": expected_summary(DELTAS)},
            "the bare async POST got another answer",
        )
        await _timed(ours, repeat)
        await _timed(bare, repeat)
        a: list[float] = []
        b: list[float] = []
        for index in range(rounds):
            if index % 2 == 0:
                a.append(await _timed(ours, repeat))
                b.append(await _timed(bare, repeat))
            else:
                b.append(await _timed(bare, repeat))
                a.append(await _timed(ours, repeat))
    row.record(Timing(a), Timing(b), [x / y for x, y in zip(a, b, strict=True)])
    overhead = statistics.median(x - y for x, y in zip(a, b, strict=True))
    row.metrics = {
        "overhead_ms": round(overhead * 1000, 3),
        "target_overhead_ms": TARGET_OVERHEAD_S * 1000,
    }
    row.goal_met = overhead <= TARGET_OVERHEAD_S
    return row
