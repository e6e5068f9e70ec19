"""What only the native async twin has to prove: no thread per call, prompt stops, one loop's pool.

The behaviour both twins share (receipts, events, failures, bounds, keep-alive) is proven once
for both by the ``twin``-parametrised tests; here: a call costs no thread, task cancellation
and closing the event iterator stop the call within 100 ms and close its connection (seen from
the server), a set token does too, usage reaches the caller's meter, settings are read lazily,
connection pools are per event loop and closed when the loop shuts down, and every httpx2
error maps to a deliberate failure.
"""

from __future__ import annotations

import asyncio
import gc
import ssl
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest

from templiqx_conformance.loopback import Chunk, LoopbackServer, Reply, sse_frame
from templiqx_contracts import Complete, Delta, Failed, StreamEvent
from templiqx_ports import (
    AsyncRuntimeAdapter,
    RuntimeFailureCode,
    RuntimeFailureError,
    usage_meter,
)
from templiqx_runtime_openai import Detail, FailureSource, OpenAIRuntime
from templiqx_runtime_openai.async_transport import transport_failure

from .conftest import Twin
from .test_keep_alive import KeepAliveServer

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]


def _ticking(wire: SimpleNamespace, every_s: float = 0.01) -> Reply:
    return Reply.ticking(sse_frame(wire.chunk("tick ")), every_s=every_s)


async def _collect(events: AsyncIterator[StreamEvent], into: list[StreamEvent]) -> None:
    async for event in events:
        into.append(event)


def _threads_of_ours() -> set[threading.Thread]:
    """Live threads that are not the loopback server's (its listener and per-connection ones)."""
    return {
        thread
        for thread in threading.enumerate()
        if not thread.name.startswith("loopback-") and "process_request" not in thread.name
    }


def test_the_runtime_is_natively_async(runtime_for: RuntimeFor, serve: Serve) -> None:
    runtime = runtime_for(serve(Reply.silence()))
    assert isinstance(runtime, AsyncRuntimeAdapter)


def test_twenty_concurrent_streams_use_no_thread(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    frames = [wire.chunk("", role="assistant")]
    frames += [wire.chunk(f"t{i} ") for i in range(30)]
    frames += [wire.chunk(finish="stop"), wire.usage_chunk()]
    paced = [Chunk(sse_frame(frame), 0.04) for frame in frames] + [Chunk(sse_frame("[DONE]"))]
    server = serve(lambda _request: Reply.stream(paced))
    runtime = runtime_for(server)
    request = wire.request(structured=False, schema={"type": "string"})
    before = _threads_of_ours()
    seen: set[threading.Thread] = set()

    async def one(index: int) -> list[StreamEvent]:
        # Started 25 ms apart (the loopback server's listen backlog is 5, and it accepts on
        # one thread), and each lasts about 1.3 s: all 20 are open at once.
        await asyncio.sleep(index * 0.025)
        events: list[StreamEvent] = []
        async for event in runtime.aexecute_streaming(request):
            events.append(event)
            seen.update(_threads_of_ours() - before)
        return events

    async def main() -> list[list[StreamEvent]]:
        # The loop's first call makes its connection pool on a worker thread, once (issue #26:
        # building the client blocks for tenths of a second); the streams then need none.
        [event async for event in runtime.aexecute_streaming(request)]
        before.update(_threads_of_ours())
        return await asyncio.gather(*(one(index) for index in range(20)))

    results = asyncio.run(main())
    assert seen == set(), sorted(t.name for t in seen)  # no thread for 20 concurrent streams
    for events in results:
        assert len(events) == 31
        assert isinstance(events[-1], Complete)
        assert events[-1].receipt.output == "".join(f"t{i} " for i in range(30))


def test_task_cancellation_closes_the_connection_within_100_ms(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(_ticking(wire))
    runtime = runtime_for(server, timeout_ms=30_000)
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in runtime.aexecute_streaming(wire.request()):
            seen.append(event)

    async def main() -> float:
        task = asyncio.create_task(consume())
        while len(seen) < 3:
            await asyncio.sleep(0.002)
        task.cancel()
        cancelled_at = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled_at

    cancelled_at = asyncio.run(main())
    exchange = server.exchanges[0]
    assert exchange.wait(1.0)
    assert exchange.client_closed
    assert exchange.client_closed_at is not None
    assert exchange.client_closed_at - cancelled_at < 0.1
    assert all(isinstance(event, Delta) for event in seen)  # nothing terminal: it was stopped


def test_closing_the_iterator_closes_the_connection_within_100_ms(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(_ticking(wire))
    runtime = runtime_for(server, timeout_ms=30_000)

    async def main() -> float:
        events = runtime.aexecute_streaming(wire.request())
        count = 0
        async for _ in events:
            count += 1
            if count == 3:
                break
        await events.aclose()  # type: ignore[attr-defined]
        return time.monotonic()

    left_at = asyncio.run(main())
    exchange = server.exchanges[0]
    assert exchange.wait(1.0)
    assert exchange.client_closed
    assert exchange.client_closed_at is not None
    assert exchange.client_closed_at - left_at < 0.1


@pytest.mark.parametrize("server_state", ["silent", "ticking"])
def test_a_set_token_stops_the_call_within_100_ms(
    server_state: str, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    """The token is looked at every 50 ms on the loop (no thread): a silent server — before
    the headers — and a streaming one alike end in ``Failed{TQX_RUNTIME_CANCELLED}``."""
    server = serve(Reply.silence() if server_state == "silent" else _ticking(wire, 0.5))
    runtime = runtime_for(server, timeout_ms=30_000)
    token = threading.Event()
    events: list[StreamEvent] = []

    async def main() -> tuple[float, RuntimeFailureError]:
        loop = asyncio.get_running_loop()
        set_at: list[float] = []

        def fire() -> None:
            set_at.append(time.monotonic())
            token.set()

        loop.call_later(0.3, fire)
        with pytest.raises(RuntimeFailureError) as caught:
            await _collect(runtime.aexecute_streaming(wire.request(), cancel=token), events)
        assert time.monotonic() - set_at[0] < 0.1
        return set_at[0], caught.value

    set_at, error = asyncio.run(main())
    assert error.failure.code is RuntimeFailureCode.CANCELLED
    assert error.failure.detail == Detail.CANCELLED
    assert events[-1] == Failed(code="TQX_RUNTIME_CANCELLED", message=str(error))
    exchange = server.exchanges[0]
    assert exchange.wait(1.0)
    assert exchange.client_closed
    assert exchange.client_closed_at is not None
    assert exchange.client_closed_at - set_at < 0.1


def test_usage_reaches_the_callers_meter_on_both_async_paths(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    server = serve(
        [Reply.sse(wire.content_stream('{"ok":', "true}")), Reply.json(wire.completion('{"ok":1}'))]
    )
    runtime = runtime_for(server)

    async def main() -> tuple[Any, Any]:
        with usage_meter() as streamed:
            async for _ in runtime.aexecute_streaming(wire.request()):
                pass
        with usage_meter() as plain:
            await runtime.aexecute(wire.request())
        return streamed.usage, plain.usage

    streamed, plain = asyncio.run(main())
    assert (streamed.prompt_tokens, streamed.completion_tokens, streamed.total_tokens) == (5, 7, 12)
    assert plain == streamed


def test_settings_are_read_at_the_first_async_call(wire: SimpleNamespace) -> None:
    runtime = OpenAIRuntime.from_env({"MODEL_ID": "m"})

    async def main() -> list[StreamEvent]:
        events: list[StreamEvent] = []
        with pytest.raises(RuntimeFailureError) as caught:
            await _collect(runtime.aexecute_streaming(wire.request()), events)
        assert caught.value.failure.code is RuntimeFailureCode.PERMANENT
        assert "MODEL_BASE_URL" in caught.value.failure.detail
        assert "MODEL_API_KEY" in caught.value.failure.detail
        with pytest.raises(RuntimeFailureError) as plain:
            await runtime.aexecute(wire.request())
        assert plain.value.failure == caught.value.failure
        return events

    events = asyncio.run(main())
    assert [type(event) for event in events] == [Failed]


def test_each_event_loop_has_its_own_pool_closed_when_the_loop_ends(
    wire: SimpleNamespace,
) -> None:
    """Two ``asyncio.run`` calls: each opens one connection and closes it on the way out (no
    connection outlives its loop, and no ``ResourceWarning`` for an unclosed transport)."""
    server = KeepAliveServer()
    server.thread.start()
    try:
        runtime = OpenAIRuntime.from_env(
            {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": "sk-x", "MODEL_ID": "m"}
        )

        async def three_calls() -> None:
            for _ in range(3):
                async for _ in runtime.aexecute_streaming(wire.request()):
                    pass

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            asyncio.run(three_calls())
            asyncio.run(three_calls())
            gc.collect()
        assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
        assert (server.requests, server.connections) == (6, 2)
        runtime.close()
    finally:
        server.shutdown()
        server.server_close()


def test_aclose_closes_the_running_loops_pool(wire: SimpleNamespace) -> None:
    server = KeepAliveServer()
    server.thread.start()
    try:
        runtime = OpenAIRuntime.from_env(
            {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": "sk-x", "MODEL_ID": "m"}
        )

        async def main() -> None:
            await runtime.aexecute(wire.request())
            await runtime.aclose()
            await runtime.aexecute(wire.request())  # usable again: a new connection
            await runtime.aclose()

        asyncio.run(main())
        assert (server.requests, server.connections) == (2, 2)
    finally:
        server.shutdown()
        server.server_close()


def test_a_raising_consumer_discards_the_connection(wire: SimpleNamespace) -> None:
    server = KeepAliveServer()
    server.thread.start()
    twin = Twin("async")
    try:
        runtime = OpenAIRuntime.from_env(
            {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": "sk-x", "MODEL_ID": "m"}
        )

        def sink(event: StreamEvent) -> None:
            raise LookupError("the consumer broke")

        with pytest.raises(LookupError):
            twin.execute_streaming(runtime, wire.request(), sink)
        twin.execute_streaming(runtime, wire.request(), lambda event: None)
        assert (server.requests, server.connections) == (2, 2)
    finally:
        twin.close()
        server.shutdown()
        server.server_close()


SOURCE = FailureSource("templiqx-runtime-openai", "0.2.0")


def _chained(outer: Exception, inner: BaseException) -> Exception:
    try:
        try:
            raise inner
        except BaseException as cause:
            raise outer from cause
    except Exception as error:
        return error


def _all_subclasses(base: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    pending = [base]
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub.__module__.startswith("httpx2") and sub not in found:
                found.add(sub)
                pending.append(sub)
    return found


EXPECTED: dict[str, tuple[RuntimeFailureCode, str, str]] = {
    # class name: (code, detail before the headers, detail while reading)
    "TimeoutException": (RuntimeFailureCode.TIMEOUT, "deadline", "deadline"),
    "ConnectTimeout": (RuntimeFailureCode.TIMEOUT, "deadline", "deadline"),
    "ReadTimeout": (RuntimeFailureCode.TIMEOUT, "deadline", "deadline"),
    "WriteTimeout": (RuntimeFailureCode.TIMEOUT, "deadline", "deadline"),
    "PoolTimeout": (RuntimeFailureCode.TIMEOUT, "deadline", "deadline"),
    "DecodingError": (RuntimeFailureCode.INVALID_RESPONSE, Detail.DECODING, Detail.DECODING),
}


def test_every_httpx2_error_maps_to_a_deliberate_failure() -> None:
    """Like httpx's own all-exceptions-mapped test: each httpx2 request error class (and a TLS
    error under a connect error) gives the failure the table says, before and after headers."""
    classes = _all_subclasses(httpx2.RequestError) | {httpx2.RequestError}
    assert {cls.__name__ for cls in classes} >= {
        "ConnectError",
        "ReadError",
        "RemoteProtocolError",
        "ProxyError",
        *EXPECTED,
    }
    deadline = Detail.deadline(1000)
    for cls in classes:
        error = cls("boom")  # type: ignore[call-arg]
        code, before, during = EXPECTED.get(
            cls.__name__, (RuntimeFailureCode.UNAVAILABLE, Detail.CONNECT, Detail.DROPPED)
        )
        for reading, detail in ((False, before), (True, during)):
            failure = transport_failure(SOURCE, error, reading=reading, timeout_ms=1000).failure
            assert failure.code is code, cls
            assert failure.detail == (deadline if detail == "deadline" else detail), cls
    tls = _chained(httpx2.ConnectError("handshake"), ssl.SSLError("certificate verify failed"))
    failure = transport_failure(SOURCE, tls, reading=False, timeout_ms=1000).failure
    assert (failure.code, failure.detail) == (RuntimeFailureCode.UNAVAILABLE, Detail.TLS)


@pytest.mark.parametrize("outside", [False, True], ids=["deadline_alone", "with_outside_cancel"])
def test_the_calls_own_cancellation_is_undone_but_an_outside_one_propagates(outside: bool) -> None:
    """``AsyncCall.wait`` stops a wait by cancelling the waiting task (as ``asyncio.timeout``
    does): alone, that becomes the call's failure and the task is left uncancelled; together
    with a cancellation from elsewhere in the same loop turn, ``CancelledError`` propagates."""
    from templiqx_runtime_openai.async_transport import AsyncCall

    async def main() -> tuple[str, int]:
        call = AsyncCall(SOURCE, 30_000, None)
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def waiting() -> tuple[str, int]:
            task = asyncio.current_task()
            assert task is not None
            try:
                await call.wait(lambda: never, reading=True)
            except RuntimeFailureError as error:
                return error.failure.code.value, task.cancelling()
            return "returned", task.cancelling()

        task = asyncio.create_task(waiting())
        await asyncio.sleep(0.01)
        call.abort("deadline")
        if outside:
            task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            return "cancelled", 0
        finally:
            call.stop()

    outcome, cancelling = asyncio.run(main())
    assert outcome == ("cancelled" if outside else "TQX_RUNTIME_TIMEOUT")
    assert cancelling == 0


def test_the_first_call_builds_its_client_off_the_loop_once(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #26: importing httpx2 and building the client (an SSL context) block for tenths of
    a second; they run on a worker thread, once for any number of concurrent first calls."""
    import templiqx_runtime_openai.async_transport as async_transport

    frames = [wire.chunk("hi", role="assistant"), wire.chunk(finish="stop")]
    server = serve(lambda _request: Reply.sse(frames))
    runtime = runtime_for(server)
    request = wire.request(structured=False, schema={"type": "string"})
    made_on: list[threading.Thread] = []
    original = async_transport.new_client

    def recording(context: ssl.SSLContext) -> Any:
        made_on.append(threading.current_thread())
        return original(context)

    monkeypatch.setattr(async_transport, "new_client", recording)

    async def collect() -> list[StreamEvent]:
        return [event async for event in runtime.aexecute_streaming(request)]

    async def main() -> tuple[threading.Thread, list[list[StreamEvent]]]:
        loop_thread = threading.current_thread()
        runs = await asyncio.gather(*(collect() for _ in range(5)))
        return loop_thread, runs

    loop_thread, runs = asyncio.run(main())
    assert len(made_on) == 1, "one client per loop, made once"
    assert made_on[0] is not loop_thread, "the client was built on the event loop"
    assert all(isinstance(run[-1], Complete) for run in runs)


def test_warm_up_builds_the_shared_ssl_context_once_for_every_loop(
    serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = [wire.chunk("hi", role="assistant"), wire.chunk(finish="stop")]
    server = serve(lambda _request: Reply.sse(frames))
    runtime = runtime_for(server)
    assert isinstance(runtime, OpenAIRuntime)
    made: list[ssl.SSLContext] = []
    original = httpx2.create_ssl_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(httpx2, "create_ssl_context", counting)
    runtime.warm_up()
    assert len(made) == 1
    request = wire.request(structured=False, schema={"type": "string"})

    async def once() -> list[StreamEvent]:
        return [event async for event in runtime.aexecute_streaming(request)]

    for _ in range(2):  # two loops, two pools, one SSL context
        assert isinstance(asyncio.run(once())[-1], Complete)
    assert len(made) == 1
    unset = OpenAIRuntime.from_env({})
    unset.warm_up()  # no settings: nothing to warm, and no error (check_settings says why)
