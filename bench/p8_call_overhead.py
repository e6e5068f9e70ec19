"""P8: what ``execute_contract`` adds to one model call, before and after prepared contracts.

Against ``sse_server.py`` on loopback (a non-streamed answer of ten words), three clients post
the same request, interleaved:

* templiqx, prepared: ``service.execute_contract(...)`` with the contract's load kept between
  calls (the default since prepared contracts);
* templiqx, unprepared: the same call with the kept loads dropped before every call, which is
  what every call cost before (read, parse, resolve and expand the contract each time);
* the floor: a bare ``requests.post`` of the very body the runtime sends.

The overhead is a templiqx side's median minus the floor's median; the target is at most 1 ms
for the prepared call. Before timing, each side's answer is checked once: the envelope is ok
with the expected output, and the bare POST returns the same content.
"""

from __future__ import annotations

import json
from typing import Any

import requests
from harness import Comparison, Settings, Side, check, interleave
from host_package import API_KEY, CONTRACT, PACKAGE, service_for
from p1_stream import _Server
from sse_server import expected_summary

from templiqx_runtime_openai import OpenAIRuntime

__all__ = ["run"]

DELTAS = 10
TARGET_OVERHEAD_S = 0.001
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
        after_s = subject.median - floor.median
        before_s = before.median - floor_again.median
        row.metrics = {
            "overhead_after_ms": round(after_s * 1000, 3),
            "overhead_before_ms": round(before_s * 1000, 3),
            "target_overhead_ms": TARGET_OVERHEAD_S * 1000,
            "target_met": after_s <= TARGET_OVERHEAD_S,
            "unprepared_median_s": before.median,
        }
        row.goal_met = after_s <= TARGET_OVERHEAD_S
        service.close()
        runtime.close()
    return [row]
