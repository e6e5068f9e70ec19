"""The chat-completions client: one call, streamed or not, to an assembled result.

:class:`ChatClient` is what both runtimes share: :class:`~templiqx_runtime_openai.OpenAIRuntime`
uses both paths, the Langfuse runtime reuses :meth:`ChatClient.complete`. Failures are raised as
:class:`~templiqx_ports.RuntimeFailureError` attributed to the ``source`` the client was built
with, so each adapter reports its own identity; the client adds its endpoint (``host:port``), a
remedy naming the settings to check, and the server's own error message, sanitised with every
configured secret redacted (DECISIONS 20).

The bytes are turned into events and a completion by the I/O-free
:class:`~templiqx_runtime_openai.assembler.StreamAssembler`; this module only moves bytes, calls
the sink and honours cancellation between events. A complete stream's connection goes back to
the pool (:meth:`Call.finish`); any other is discarded. Token usage, when the server reports it,
goes to the caller's usage meter (:func:`templiqx_ports.report_usage`).

Telemetry: each request carries the caller's W3C trace context (``traceparent``, when a host set
up OpenTelemetry and a span is current), so a gateway that traces joins the caller's trace; the
client reports who it asked and what answered to the meter (:func:`templiqx_ports.report_call`,
:func:`templiqx_ports.report_response`) for the application's model-call span.

Each call has an async twin for event loops — :meth:`ChatClient.acomplete` and
:meth:`ChatClient.astream` — over :class:`~.async_transport.AsyncTransport` (httpx2, no thread
per call). The twins share everything but the I/O: the request body, the status handling, the
body bound, the assembler and the final output, so they give identical results and failures.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from templiqx_contracts import CompiledInteraction, Delta, ToolCallDelta
from templiqx_ports import (
    CancelToken,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
    report_call,
    report_response,
    report_usage,
)
from templiqx_ports.telemetry import trace_headers
from templiqx_runtime_openai.advice import Advisor
from templiqx_runtime_openai.assembler import StreamAssembler, decode_completion
from templiqx_runtime_openai.completion import Assembled, final_output
from templiqx_runtime_openai.details import Detail
from templiqx_runtime_openai.failures import FailureSource, status_failure
from templiqx_runtime_openai.server_errors import ERROR_BODY_LIMIT, Redactor, server_error
from templiqx_runtime_openai.settings import OpenAISettings
from templiqx_runtime_openai.transport import Call, Transport
from templiqx_runtime_openai.wire import (
    Usage,
    build_body,
    encode_body,
    is_structured,
    sampling_problem,
    streaming_body,
    usage_of,
)

if TYPE_CHECKING:
    import asyncio

    from templiqx_runtime_openai.async_transport import AsyncCall, AsyncTransport

__all__ = ["ChatClient", "ChatResult", "ChatStream"]

_EVENT_STREAM: Final = "text/event-stream"
_CANCEL_POLL_S: Final = 0.05
"""How often a call waiting for its transport to be made looks at its cancel token (as
:data:`~.async_transport.POLL_S`, which cannot be imported here without httpx2)."""
PROVIDER: Final = "openai"
"""``gen_ai.provider.name`` of an OpenAI-compatible API (the conventions' name for it)."""


@dataclass(frozen=True, slots=True)
class ChatResult:
    """One successful completion.

    ``body`` is the non-streamed request body (the subject of the OpenAI runtime's request
    fingerprint); ``started``/``ended`` are wall-clock seconds (``time.time()``) around the
    HTTP exchange; ``first_token`` is when the first delta arrived (streams only).
    """

    output: Any
    usage: Usage | None
    finish_reason: str | None
    body: dict[str, Any]
    started: float
    ended: float
    first_token: float | None = None
    response_id: str | None = None
    response_model: str | None = None


class ChatStream:
    """The events of one streamed completion, read with ``async for``; then :attr:`result`.

    Made by :meth:`ChatClient.astream`. Iterating yields each ``Delta`` / ``ToolCallDelta``
    as it arrives and ends after ``[DONE]`` with :attr:`result` set; a failure is raised from
    the iteration. :meth:`aclose` (or leaving ``async with``) before the end cancels the call
    and closes its connection.
    """

    def __init__(
        self, events: Callable[[ChatStream], AsyncGenerator[Delta | ToolCallDelta]]
    ) -> None:
        self.result: ChatResult | None = None
        self._events = events(self)

    def __aiter__(self) -> AsyncGenerator[Delta | ToolCallDelta]:
        return self._events

    async def aclose(self) -> None:
        """Stop reading (idempotent); an unfinished call is cancelled, its connection closed."""
        await self._events.aclose()

    async def __aenter__(self) -> ChatStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _BodyLimit:
    """The non-streamed body bound: a declared length over it fails before reading."""

    __slots__ = ("_limit", "_parts", "_source", "_total")

    def __init__(self, limit: int, source: FailureSource, headers: Mapping[str, str]) -> None:
        self._limit = limit
        self._source = source
        self._parts: list[bytes] = []
        self._total = 0
        declared = headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            raise self._exceeded()

    def _exceeded(self) -> RuntimeFailureError:
        return self._source.error(
            RuntimeFailureCode.INVALID_RESPONSE, Detail.response_limit(self._limit)
        )

    def add(self, piece: bytes) -> None:
        self._total += len(piece)
        if self._total > self._limit:
            raise self._exceeded()
        self._parts.append(piece)

    def data(self) -> bytes:
        return b"".join(self._parts)


class ChatClient:
    """Calls ``POST {base_url}/chat/completions``; thread-safe; never retries.

    ``secrets``: further configured secrets (besides the API key) that must be redacted from
    any server message shown in a failure, e.g. the Langfuse keys.
    """

    def __init__(
        self, settings: OpenAISettings, source: FailureSource, *, secrets: Iterable[str] = ()
    ) -> None:
        self.settings = settings
        if source.advisor is None:
            source = dataclasses.replace(source, advisor=Advisor.of(settings))
        if source.redactor is None:
            source = dataclasses.replace(source, redactor=Redactor([settings.api_key, *secrets]))
        self.source = source
        self._transport = Transport(source)
        self._async_transport: AsyncTransport | None = None
        self._making: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Future[AsyncTransport]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._authorization = f"Bearer {settings.api_key}"
        endpoint = urlsplit(settings.completions_url)  # host and port only, never credentials
        self._server = (
            endpoint.hostname,
            endpoint.port or (443 if endpoint.scheme == "https" else 80),
        )

    def _report_call(self) -> None:
        report_call(
            provider=PROVIDER,
            model=self.settings.model,
            server_address=self._server[0],
            server_port=self._server[1],
        )

    def __repr__(self) -> str:
        return f"ChatClient({self.settings!r}, {self.source!r})"

    @property
    def transport(self) -> Transport:
        """The HTTP transport (one session per thread), reusable for other JSON POSTs."""
        return self._transport

    @property
    def async_transport(self) -> AsyncTransport:
        """The async HTTP transport (one pool per event loop), made on first use.

        Making it imports httpx2 (blocking for tenths of a second on a cold process): the
        async twins get it through :meth:`aasync_transport`, which does that off the loop.
        """
        transport = self._async_transport
        if transport is None:
            from templiqx_runtime_openai.async_transport import AsyncTransport

            with self._lock:  # httpx2 is imported only by callers of the async twins
                if self._async_transport is None:
                    self._async_transport = AsyncTransport(self.source)
                transport = self._async_transport
        return transport

    def warm_up(self) -> None:
        """Make the async transport and its SSL context now (blocking: a server's start-up),
        so the first async call does no such work at all."""
        self.async_transport.warm()

    async def aasync_transport(self) -> AsyncTransport:
        """:attr:`async_transport`, made on a worker thread the first time (the event loop
        never waits for httpx2 to be imported); calls that arrive meanwhile wait for that one."""
        transport = self._async_transport
        if transport is not None:
            return transport
        import asyncio

        loop = asyncio.get_running_loop()
        making = self._making.get(loop)
        if making is None:
            making = self._making[loop] = asyncio.ensure_future(
                asyncio.to_thread(lambda: self.async_transport)
            )
            making.add_done_callback(lambda _: self._making.pop(loop, None))
        return await asyncio.shield(making)

    async def _first_transport(self, cancel: CancelToken | None) -> AsyncTransport:
        """:meth:`aasync_transport` with ``cancel`` looked at every 50 ms while it is made (an
        import on a loaded machine can take longer than a caller is prepared to wait)."""
        import asyncio

        making = asyncio.ensure_future(self.aasync_transport())
        try:
            while True:
                done, _ = await asyncio.wait({making}, timeout=_CANCEL_POLL_S)
                if done:
                    return making.result()
                if cancel is not None and cancel.is_set():
                    raise self.source.error(RuntimeFailureCode.CANCELLED, Detail.CANCELLED)
        finally:
            making.cancel()  # the transport itself is still made (aasync_transport shields it)

    def close(self) -> None:
        """Close pooled connections (those of event loops: on their loops)."""
        self._transport.close()
        if self._async_transport is not None:
            self._async_transport.close()

    async def aclose(self) -> None:
        """Close pooled connections, the running event loop's at once."""
        self._transport.close()
        if self._async_transport is not None:
            await self._async_transport.aclose()

    def request_body(self, interaction: CompiledInteraction) -> dict[str, Any]:
        """The non-streamed request body, after checking the sampling settings."""
        problem = sampling_problem(interaction.runtime_policy)
        if problem is not None:
            raise self.source.error(RuntimeFailureCode.PERMANENT, Detail.policy(*problem))
        return build_body(interaction, self.settings.model)

    def _status_failure(
        self, status: int, headers: Mapping[str, str], body: bytes
    ) -> RuntimeFailureError:
        said = server_error(body, headers.get("content-type", ""))
        return status_failure(self.source, status, headers, said)

    def _check_event_stream(self, headers: Mapping[str, str]) -> None:
        if headers.get("content-type", "").lower().startswith("application/json"):
            raise self.source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_EVENT_STREAM)

    def _post(self, body: bytes, cancel: CancelToken | None, accept: str) -> Call:
        settings = self.settings
        self._report_call()
        call = self._transport.post(
            settings.completions_url,
            body,
            authorization=self._authorization,
            timeout_ms=settings.timeout_ms,
            cancel=cancel,
            accept=accept,
            headers=trace_headers(),
        )
        response = call.response
        assert response is not None
        status = response.status_code
        if not 200 <= status <= 299:
            try:
                data = call.read_prefix(ERROR_BODY_LIMIT)
            finally:
                call.close()
            raise self._status_failure(status, response.headers, data)
        return call

    async def _apost(self, body: bytes, cancel: CancelToken | None, accept: str) -> AsyncCall:
        settings = self.settings
        self._report_call()
        transport = self._async_transport or await self._first_transport(cancel)
        call = await transport.post(
            settings.completions_url,
            body,
            authorization=self._authorization,
            timeout_ms=settings.timeout_ms,
            cancel=cancel,
            accept=accept,
            headers=trace_headers(),
        )
        response = call.response
        assert response is not None
        status = response.status_code
        if not 200 <= status <= 299:
            try:
                data = await call.read_prefix(ERROR_BODY_LIMIT)
            finally:
                await call.aclose()
            raise self._status_failure(status, response.headers, data)
        return call

    # -- non-streamed ------------------------------------------------------------------------

    def complete(
        self, interaction: CompiledInteraction, *, cancel: CancelToken | None = None
    ) -> ChatResult:
        """One non-streamed completion (body capped at ``max_response_bytes``)."""
        body = self.request_body(interaction)
        started = time.time()
        with self._post(encode_body(body), cancel, "application/json") as call:
            response = call.response
            assert response is not None
            limited = _BodyLimit(self.settings.max_response_bytes, self.source, response.headers)
            for piece in call.chunks():
                limited.add(piece)
            if call.reason is not None:
                raise call.failure(None, reading=True)
        ended = time.time()
        assembled = decode_completion(limited.data(), self.source)
        return self._result(interaction, assembled, body, started, ended, None)

    async def acomplete(
        self, interaction: CompiledInteraction, *, cancel: CancelToken | None = None
    ) -> ChatResult:
        """The awaitable twin of :meth:`complete` (no thread; same result, same failures)."""
        body = self.request_body(interaction)
        started = time.time()
        call = await self._apost(encode_body(body), cancel, "application/json")
        try:
            response = call.response
            assert response is not None
            limited = _BodyLimit(self.settings.max_response_bytes, self.source, response.headers)
            while (piece := await call.read()) is not None:
                limited.add(piece)
        finally:
            await call.aclose()
        ended = time.time()
        assembled = decode_completion(limited.data(), self.source)
        return self._result(interaction, assembled, body, started, ended, None)

    def _result(
        self,
        interaction: CompiledInteraction,
        assembled: Assembled,
        body: dict[str, Any],
        started: float,
        ended: float,
        first_token: float | None,
    ) -> ChatResult:
        if assembled.usage is not None:
            report_usage(usage_of(assembled.usage))  # reported even if the output is unusable
        finish = assembled.finish_reason
        report_response(
            response_id=assembled.response_id,
            model=assembled.response_model,
            finish_reasons=(finish,) if finish else (),
        )
        output = final_output(assembled, structured=is_structured(interaction), source=self.source)
        return ChatResult(
            output,
            assembled.usage,
            finish,
            body,
            started,
            ended,
            first_token,
            assembled.response_id,
            assembled.response_model,
        )

    # -- streamed ----------------------------------------------------------------------------

    def stream(
        self,
        interaction: CompiledInteraction,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        """One streamed completion; ``Delta``/``ToolCallDelta`` go to ``sink`` as they arrive.

        Emits no terminal event (the runtime does); raises the failure instead. After
        ``[DONE]`` the rest of the body is read (bounded) so the connection can be reused.
        """
        body = self.request_body(interaction)
        started = time.time()
        call = self._post(encode_body(streaming_body(body)), cancel, _EVENT_STREAM)
        try:
            response = call.response
            assert response is not None
            self._check_event_stream(response.headers)
            assembled, first_token = self._read_stream(call, sink)
            call.finish()
        finally:
            call.close()
        ended = time.time()
        return self._result(interaction, assembled, body, started, ended, first_token)

    def astream(
        self, interaction: CompiledInteraction, *, cancel: CancelToken | None = None
    ) -> ChatStream:
        """The async twin of :meth:`stream`: iterate the returned :class:`ChatStream`.

        Nothing is sent until the first iteration. ``cancel`` is honoured within
        :data:`~.async_transport.POLL_S` even while the server is silent, and before each
        event; cancelling the iterating task or closing the stream stops the call at once.
        """
        return ChatStream(lambda stream: self._astream(interaction, cancel, stream))

    async def _astream(
        self, interaction: CompiledInteraction, cancel: CancelToken | None, stream: ChatStream
    ) -> AsyncGenerator[Delta | ToolCallDelta]:
        body = self.request_body(interaction)
        started = time.time()
        call = await self._apost(encode_body(streaming_body(body)), cancel, _EVENT_STREAM)
        try:
            response = call.response
            assert response is not None
            self._check_event_stream(response.headers)
            assembler = self._assembler()
            first_token: float | None = None
            while not assembler.done:
                data = await call.read()
                if data is None:
                    raise self.source.error(RuntimeFailureCode.UNAVAILABLE, Detail.NO_DONE)
                call.check_cancel()
                events = assembler.feed(data)
                if events:
                    if first_token is None:
                        first_token = time.time()
                    for event in events:
                        call.check_cancel()
                        yield event
                if assembler.failure is not None:
                    raise assembler.failure
            await call.finish()
        finally:
            await call.aclose()
        ended = time.time()
        stream.result = self._result(
            interaction, assembler.result(), body, started, ended, first_token
        )

    def _assembler(self) -> StreamAssembler:
        settings = self.settings
        return StreamAssembler(
            self.source,
            max_output=settings.max_response_bytes,
            max_line=settings.max_line_bytes,
            max_raw=settings.max_stream_bytes,
        )

    def _read_stream(self, call: Call, sink: StreamSink) -> tuple[Assembled, float | None]:
        """Feed the body to an assembler, emitting its events; checks cancel before each."""
        cancel = call.cancel
        assembler = self._assembler()
        feed = assembler.feed
        first_token: float | None = None
        for data in call.chunks():
            if cancel is not None and cancel.is_set():
                call.check_cancel()
            events = feed(data)
            if events:
                if first_token is None:
                    first_token = time.time()
                for event in events:
                    if cancel is not None and cancel.is_set():
                        call.check_cancel()
                    sink(event)
            if assembler.failure is not None:
                raise assembler.failure
            if assembler.done:
                return assembler.result(), first_token
        if call.reason is not None:
            raise call.failure(None, reading=True)
        raise self.source.error(RuntimeFailureCode.UNAVAILABLE, Detail.NO_DONE)
