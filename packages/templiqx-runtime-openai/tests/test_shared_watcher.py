"""One watcher thread for every call in flight: deadlines and cancellations still act in time.

The watcher sleeps until the earliest limit it knows of; these tests hold the cases where it
must be woken sooner (a call with a nearer deadline or a cancel token arriving while it sleeps
towards a far one), that calls never start a thread each, and that a forked child gets a
watcher of its own.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply, sse_frame
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai import OpenAIRuntime

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]

WATCHER = "templiqx-http-watch"


def _watchers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == WATCHER]


def _code_of(action: Callable[[], object]) -> RuntimeFailureCode:
    with pytest.raises(RuntimeFailureError) as caught:
        action()
    return caught.value.failure.code


def test_calls_share_one_watcher_thread(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(Reply.json(wire.completion('{"ok":true}')))
    runtime = runtime_for(server)
    for _ in range(30):
        assert runtime.execute(wire.request()).output == {"ok": True}
    with ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(lambda _: runtime.execute(wire.request()).output, range(20)))
    assert outputs == [{"ok": True}] * 20
    assert len(_watchers()) == 1


def _ticking(wire: SimpleNamespace) -> Reply:
    """A stream that never ends but never goes silent: each read gets bytes well within any
    per-read timeout, so only the watcher can hold the call to its deadline."""
    return Reply.ticking(sse_frame(wire.chunk("tick ")), every_s=0.05)


def _stream(runtime: OpenAIRuntime, wire: SimpleNamespace, cancel: Any = None) -> object:
    return runtime.execute_streaming(wire.request(), lambda _event: None, cancel=cancel)


def _slow(wire: SimpleNamespace) -> Reply:
    """An answer that takes a second: a call without a deadline problem ends by itself."""
    return Reply.json(wire.completion('{"ok":true}'), delay_s=1.0)


def test_a_nearer_deadline_wakes_a_watcher_sleeping_towards_a_far_one(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    far = runtime_for(serve(_slow(wire)), timeout_ms=30_000)
    near = runtime_for(serve(_ticking(wire)), timeout_ms=300)
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(lambda: far.execute(wire.request()))
        time.sleep(0.2)  # the watcher now sleeps towards the far call's deadline, 30 s away
        started = time.monotonic()
        assert _code_of(lambda: _stream(near, wire)) is RuntimeFailureCode.TIMEOUT
        assert time.monotonic() - started < 0.8
        assert slow.result(timeout=5).output == {"ok": True}


def test_a_cancel_token_is_looked_at_while_the_watcher_sleeps_towards_a_far_deadline(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    far = runtime_for(serve(_slow(wire)), timeout_ms=30_000)
    silent = runtime_for(serve(Reply.silence()), timeout_ms=30_000)
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(lambda: far.execute(wire.request()))
        time.sleep(0.2)  # the watcher now sleeps towards the far call's deadline, 30 s away
        cancel = threading.Event()
        timer = threading.Timer(0.2, cancel.set)
        timer.start()
        started = time.monotonic()
        code = _code_of(lambda: _stream(silent, wire, cancel))
        assert code is RuntimeFailureCode.CANCELLED
        assert time.monotonic() - started < 0.2 + 0.4
        assert slow.result(timeout=5).output == {"ok": True}


def _timed_out_in_child(base_url: str, request: Any, results: Any) -> None:
    """A ticking stream with a 300 ms deadline, in a forked child (only a watcher ends it)."""
    from templiqx_runtime_openai import OpenAISettings

    runtime = OpenAIRuntime(
        OpenAISettings(base_url=base_url, api_key="sk-fork-test-1", model="m", timeout_ms=300)
    )
    started = time.monotonic()
    try:
        runtime.execute_streaming(request, lambda _event: None)
        results.put("no-failure 0")
    except RuntimeFailureError as error:
        results.put(f"{error.failure.code.value} {time.monotonic() - started:.2f}")


def test_a_forked_child_gets_a_watcher_of_its_own(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    answers = serve(Reply.json(wire.completion('{"ok":true}')))
    runtime_for(answers).execute(wire.request())  # the parent's watcher is running
    ticking = serve(_ticking(wire))
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(
        target=_timed_out_in_child, args=(ticking.base_url, wire.request(), results)
    )
    child.start()
    child.join(10)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0, "the child's call was never cut off"
    code, elapsed = results.get(timeout=5).split()
    assert code == RuntimeFailureCode.TIMEOUT.value
    assert float(elapsed) < 2.0


class _BrokenToken:
    """A cancel token that fails when asked (a host's bug), from the watcher's second look on."""

    def __init__(self) -> None:
        self.asked = 0

    def is_set(self) -> bool:
        self.asked += 1
        if self.asked > 1:
            raise RuntimeError("token backend is gone")
        return False


def test_a_failing_cancel_token_ends_its_call_and_the_watcher_keeps_watching(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    silent = runtime_for(serve(Reply.silence()), timeout_ms=30_000)
    started = time.monotonic()
    assert _code_of(lambda: _stream(silent, wire, _BrokenToken())) is RuntimeFailureCode.CANCELLED
    assert time.monotonic() - started < 1.0
    ticking = runtime_for(serve(_ticking(wire)), timeout_ms=300)
    started = time.monotonic()
    assert _code_of(lambda: _stream(ticking, wire)) is RuntimeFailureCode.TIMEOUT
    assert time.monotonic() - started < 1.0
    assert len(_watchers()) == 1
