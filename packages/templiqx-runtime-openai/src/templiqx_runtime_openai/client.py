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
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from templiqx_contracts import CompiledInteraction
from templiqx_ports import CancelToken, RuntimeFailureCode, StreamSink, report_usage
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
        status = response.status_code
        if not 200 <= status <= 299:
            try:
                body = call.read_prefix(ERROR_BODY_LIMIT)
            finally:
                call.close()
            said = server_error(body, response.headers.get("content-type", ""))
            raise status_failure(self.source, status, response.headers, said)
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
        return self._result(
            interaction, decode_completion(data, self.source), body, started, ended, None
        )

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
        output = final_output(assembled, structured=is_structured(interaction), source=self.source)
        return ChatResult(
            output, assembled.usage, assembled.finish_reason, body, started, ended, first_token
        )

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
            content_type = response.headers.get("content-type", "").lower()
            if content_type.startswith("application/json"):
                raise self.source.error(
                    RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_EVENT_STREAM
                )
            assembled, first_token = self._read_stream(call, sink)
            call.finish()
        finally:
            call.close()
        ended = time.time()
        return self._result(interaction, assembled, body, started, ended, first_token)

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
