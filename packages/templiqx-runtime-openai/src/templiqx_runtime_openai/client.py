"""The chat-completions client: one call, streamed or not, to an assembled result.

:class:`ChatClient` is what both runtimes share: :class:`~templiqx_runtime_openai.OpenAIRuntime`
uses both paths, the Langfuse runtime reuses :meth:`ChatClient.complete`. Failures are raised as
:class:`~templiqx_ports.RuntimeFailureError` attributed to the ``source`` the client was built
with, so each adapter reports its own identity.

The streamed path is the hot loop: per read it does one ``SSEDecoder.feed`` (C-level line
splitting), per event one msgspec decode into the minimal Structs of :mod:`.wire`, and per
content fragment one ``Delta`` and one sink call. Nothing is copied per delta except the
fragment string itself; the output bound is counted as fragments arrive.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from templiqx_contracts import CompiledInteraction, Delta, ToolCallDelta
from templiqx_ports import CancelToken, RuntimeFailureCode, RuntimeFailureError, StreamSink
from templiqx_runtime_openai.completion import Assembled, AssembledToolCall, final_output
from templiqx_runtime_openai.failures import Detail, FailureSource, in_band_code, status_failure
from templiqx_runtime_openai.settings import OpenAISettings
from templiqx_runtime_openai.sse import DONE, LineTooLongError, SSEDecoder
from templiqx_runtime_openai.transport import Call, Transport
from templiqx_runtime_openai.wire import (
    ToolCallPart,
    Usage,
    build_body,
    chunk_decoder,
    encode_body,
    is_structured,
    response_decoder,
    sampling_problem,
    streaming_body,
)

__all__ = ["ChatClient", "ChatResult"]

_EVENT_STREAM: Final = "text/event-stream"


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


class ChatClient:
    """Calls ``POST {base_url}/chat/completions``; thread-safe; never retries."""

    def __init__(self, settings: OpenAISettings, source: FailureSource) -> None:
        self.settings = settings
        self.source = source
        self._transport = Transport(source)
        self._authorization = f"Bearer {settings.api_key}"

    def __repr__(self) -> str:
        return f"ChatClient({self.settings!r}, {self.source!r})"

    @property
    def transport(self) -> Transport:
        """The HTTP transport (one session per thread), reusable for other JSON POSTs."""
        return self._transport

    def close(self) -> None:
        """Close pooled connections."""
        self._transport.close()

    def request_body(self, interaction: CompiledInteraction) -> dict[str, Any]:
        """The non-streamed request body, after checking the sampling settings."""
        problem = sampling_problem(interaction.runtime_policy)
        if problem is not None:
            raise self.source.error(RuntimeFailureCode.PERMANENT, Detail.policy(*problem))
        return build_body(interaction, self.settings.model)

    def _post(self, body: bytes, cancel: CancelToken | None, accept: str) -> Call:
        settings = self.settings
        call = self._transport.post(
            settings.completions_url,
            body,
            authorization=self._authorization,
            timeout_ms=settings.timeout_ms,
            cancel=cancel,
            accept=accept,
        )
        response = call.response
        assert response is not None
        if not 200 <= response.status_code <= 299:
            call.close(discard=True)
            raise status_failure(self.source, response.status_code, response.headers)
        return call

    # -- non-streamed ------------------------------------------------------------------------

    def complete(
        self, interaction: CompiledInteraction, *, cancel: CancelToken | None = None
    ) -> ChatResult:
        """One non-streamed completion (body capped at ``max_response_bytes``)."""
        body = self.request_body(interaction)
        started = time.time()
        with self._post(encode_body(body), cancel, "application/json") as call:
            data = self._read_limited(call)
        ended = time.time()
        assembled = self._decode_response(data)
        output = final_output(assembled, structured=is_structured(interaction), source=self.source)
        return ChatResult(output, assembled.usage, assembled.finish_reason, body, started, ended)

    def _read_limited(self, call: Call) -> bytes:
        limit = self.settings.max_response_bytes
        response = call.response
        assert response is not None
        declared = response.headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            raise self.source.error(
                RuntimeFailureCode.INVALID_RESPONSE, Detail.response_limit(limit)
            )
        parts: list[bytes] = []
        total = 0
        for piece in call.chunks():
            total += len(piece)
            if total > limit:
                raise self.source.error(
                    RuntimeFailureCode.INVALID_RESPONSE, Detail.response_limit(limit)
                )
            parts.append(piece)
        if call.reason is not None:
            raise call.failure(None, reading=True)
        return b"".join(parts)

    def _decode_response(self, data: bytes) -> Assembled:
        source = self.source
        try:
            response = response_decoder.decode(data)
        except msgspec.DecodeError:
            raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION) from None
        if response.error is not None and not response.choices:
            raise source.error(in_band_code(response.error), Detail.IN_BAND_ERROR)
        choice = next((c for c in response.choices or () if c.index == 0), None)
        if choice is None:
            raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NO_CHOICES)
        message = choice.message
        if message is None:
            raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION)
        calls = [
            AssembledToolCall(
                id=call.id,
                name=(call.function.name or "") if call.function else "",
                arguments=[(call.function.arguments or "") if call.function else ""],
            )
            for call in message.tool_calls or ()
        ]
        return Assembled(
            message.content, message.refusal, calls, choice.finish_reason, response.usage
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

        Emits no terminal event (the runtime does); raises the failure instead.
        """
        body = self.request_body(interaction)
        started = time.time()
        call = self._post(encode_body(streaming_body(body)), cancel, _EVENT_STREAM)
        try:
            response = call.response
            assert response is not None
            content_type = response.headers.get("content-type", "").lower()
            if content_type.startswith("application/json"):
                raise self.source.error(
                    RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_EVENT_STREAM
                )
            assembled, first_token = _StreamReader(self.settings, self.source, call, sink).run()
        except BaseException:
            call.close(discard=True)
            raise
        call.close(discard=True)
        ended = time.time()
        output = final_output(assembled, structured=is_structured(interaction), source=self.source)
        return ChatResult(
            output, assembled.usage, assembled.finish_reason, body, started, ended, first_token
        )


class _StreamReader:
    """The state of one stream being read (see :meth:`ChatClient.stream`)."""

    __slots__ = (
        "call",
        "calls",
        "last_index",
        "max_output",
        "out_total",
        "settings",
        "sink",
        "source",
    )

    def __init__(
        self, settings: OpenAISettings, source: FailureSource, call: Call, sink: StreamSink
    ) -> None:
        self.settings = settings
        self.source = source
        self.call = call
        self.sink = sink
        self.calls: dict[int, AssembledToolCall] = {}
        self.last_index = 0
        self.out_total = 0
        self.max_output = settings.max_response_bytes

    def _fail(self, code: RuntimeFailureCode, detail: str) -> RuntimeFailureError:
        return self.source.error(code, detail)

    def run(self) -> tuple[Assembled, float | None]:
        settings, call, sink = self.settings, self.call, self.sink
        cancel = call.cancel
        decoder = SSEDecoder(settings.max_line_bytes)
        feed = decoder.feed
        decode = chunk_decoder.decode
        decode_error = msgspec.DecodeError
        max_raw = settings.max_stream_bytes
        max_output = self.max_output
        raw_total = 0
        out_total = 0
        parts: list[str] = []
        append = parts.append
        content_seen = False
        refusal: list[str] = []
        finish: str | None = None
        usage: Usage | None = None
        saw_choice = False
        first_token: float | None = None
        for data in call.chunks():
            raw_total += len(data)
            if raw_total > max_raw:
                raise self._fail(RuntimeFailureCode.INVALID_RESPONSE, Detail.stream_limit(max_raw))
            if cancel is not None and cancel.is_set():
                call.check_cancel()
            try:
                payloads = feed(data)
            except LineTooLongError:
                raise self._fail(
                    RuntimeFailureCode.INVALID_RESPONSE, Detail.line_limit(settings.max_line_bytes)
                ) from None
            for payload in payloads:
                if payload == DONE:
                    content = "".join(parts) if content_seen else None
                    assembled = Assembled(
                        content,
                        "".join(refusal) if refusal else None,
                        [self.calls[index] for index in sorted(self.calls)],
                        finish,
                        usage,
                    )
                    if not saw_choice:
                        raise self._fail(RuntimeFailureCode.INVALID_RESPONSE, Detail.NO_CHOICES)
                    return assembled, first_token
                try:
                    chunk = decode(payload)
                except decode_error:
                    raise self._fail(
                        RuntimeFailureCode.INVALID_RESPONSE, Detail.MALFORMED_EVENT
                    ) from None
                if chunk.error is not None:
                    raise self._fail(in_band_code(chunk.error), Detail.IN_BAND_ERROR)
                if chunk.usage is not None:
                    usage = chunk.usage
                choices = chunk.choices
                if not choices:
                    continue
                for choice in choices:
                    if choice.index:
                        continue
                    saw_choice = True
                    delta = choice.delta
                    if delta is not None:
                        text = delta.content
                        if text:
                            out_total += len(text) if text.isascii() else len(text.encode())
                            if out_total > max_output:
                                raise self._fail(
                                    RuntimeFailureCode.INVALID_RESPONSE,
                                    Detail.response_limit(max_output),
                                )
                            append(text)
                            if cancel is not None and cancel.is_set():
                                call.check_cancel()
                            sink(Delta(text=text))
                            content_seen = True
                            if first_token is None:
                                first_token = time.time()
                        elif text is not None:
                            content_seen = True
                        if delta.tool_calls:
                            if first_token is None:
                                first_token = time.time()
                            self.out_total = out_total
                            self._tool_parts(delta.tool_calls)
                            out_total = self.out_total
                        if delta.refusal:
                            refusal.append(delta.refusal)
                    if choice.finish_reason is not None:
                        finish = choice.finish_reason
        if call.reason is not None:
            raise call.failure(None, reading=True)
        raise self._fail(RuntimeFailureCode.UNAVAILABLE, Detail.NO_DONE)

    def _tool_parts(self, parts: list[ToolCallPart]) -> None:
        calls = self.calls
        cancel = self.call.cancel
        for part in parts:
            index = part.index
            if index is None:
                known = part.id is not None and any(c.id == part.id for c in calls.values())
                index = len(calls) if part.id is not None and not known else self.last_index
            self.last_index = index
            state = calls.get(index)
            if state is None:
                state = calls[index] = AssembledToolCall()
            if part.id and state.id is None:
                state.id = part.id
            function = part.function
            if function is None:
                continue
            if function.name and not state.name:
                state.name = function.name  # the first fragment names the call (DECISIONS 7)
            fragment = function.arguments
            if not fragment:
                continue
            self.out_total += len(fragment) if fragment.isascii() else len(fragment.encode("utf-8"))
            if self.out_total > self.max_output:
                raise self._fail(
                    RuntimeFailureCode.INVALID_RESPONSE, Detail.response_limit(self.max_output)
                )
            state.arguments.append(fragment)
            if cancel is not None and cancel.is_set():
                self.call.check_cancel()
            self.sink(ToolCallDelta(name=state.name, arguments_fragment=fragment))
