"""One fresh process's first async call through the OpenAI runtime, and the loop's stall.

``python first_call_child.py BASE_URL ROOT MODE`` composes a service as a host does at start-up
(the runtime with its settings, the store), starts a probe task that sleeps 1 ms at a time and
records how late it wakes, then makes the process's first ``aexecute_contract`` (streamed) and
prints ``<max lateness in s> <call seconds>``. ``MODE`` is ``now`` (the runtime as it is),
``warm`` (the runtime warmed up at start-up, as templiqx-http-server does: ``warm_up()``) or
``inline`` (first doing on the loop what the runtime's first async call did before issue #26:
importing its async transport and building the httpx2 client, SSL context included).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from host_package import CONTRACT, PACKAGE, service_for


async def _probe(stop: asyncio.Event, lateness: list[float]) -> None:
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        lateness.append(max(0.0, time.perf_counter() - before - 0.001))


def service_runtime(service: object) -> Any:
    """The runtime the service executes on (what a host composed it with)."""
    return service._ctx.runtime  # type: ignore[attr-defined]


def _old_first_call_work() -> None:
    import httpx2  # what ChatClient.async_transport imported, on the loop

    import templiqx_runtime_openai.async_transport  # noqa: F401

    client = httpx2.AsyncClient(timeout=None, follow_redirects=False, trust_env=True)
    del client


async def main(base_url: str, root: Path, mode: str) -> None:
    service = service_for(root, base_url)
    if mode == "warm":
        service_runtime(service).warm_up()
    stop = asyncio.Event()
    lateness: list[float] = []
    probe = asyncio.create_task(_probe(stop, lateness))
    await asyncio.sleep(0.05)
    lateness.clear()  # only what the call causes
    started = time.perf_counter()
    if mode == "inline":
        _old_first_call_work()
    envelope = await service.aexecute_contract(
        PACKAGE, CONTRACT, inputs={"topic": "x"}, stream=True
    )
    seconds = time.perf_counter() - started
    stop.set()
    await probe
    if not envelope.ok:
        raise SystemExit(f"the call failed: {envelope.diagnostics}")
    print(max(lateness, default=0.0), seconds)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
