"""``MessagesRuntime``: the templiqx runtime port over a Messages-style HTTP API.

* ``execute`` POSTs the request and reads the whole JSON answer; ``execute_streaming`` asks for
  a stream and emits one ``Delta`` (or ``ToolCallDelta``) per fragment as it arrives, then exactly
  one ``Complete`` — the receipt ``execute`` would return — or one ``Failed`` equal to the error
  it then raises.
* ``request_fingerprint`` hashes the request body without ``stream``: what the model was asked.
* ``output_schema_valid`` is computed, never assumed: a tool-call answer by the declared tools,
  anything else by the output schema (``templiqx_contracts.interaction_output_valid``).
* Bounded: a whole body and a stream's assembled output at 2 MiB, one stream line at 1 MiB, the
  raw stream at 64 MiB (DECISIONS 9). One deadline per call. No retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import jsonschema_rs

from acme_messages import failures
from acme_messages.exchange import Exchange
from acme_messages.failures import ADAPTER_ID, ADAPTER_VERSION, Code, failure
from acme_messages.messages import StreamReader, build_body, output_of, reply_of
from acme_messages.settings import MessagesSettings
from acme_messages.sse import LineTooLongError, SSEDecoder
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
    interaction_output_valid,
)
from templiqx_ports import (
    CancelToken,
    PortError,
    RuntimeAdapter,
    StreamSink,
    failed_event,
)

__all__ = ["API_VERSION", "CAPABILITIES", "MessagesRuntime", "from_env"]

API_VERSION: Final = "2023-06-01"
CAPABILITIES: Final = ("streaming", "structured_output", "text", "tool_calling")
_ERROR_BODY_BYTES: Final = 65_536


class MessagesRuntime(RuntimeAdapter):
    """One Messages API call per execution (see the module docstring).

    ``settings`` may be a :class:`MessagesSettings` or a function returning one, called when the
    model is first needed (how :func:`from_env` defers reading the environment).
    """

    exchange_class: type[Exchange] = Exchange
    """Makes each HTTP exchange (replaceable, e.g. to add a proxy or a custom TLS context)."""
    reader_class: type[StreamReader] = StreamReader
    """Turns stream events into deltas and the final reply."""

    def __init__(self, settings: MessagesSettings | Callable[[], MessagesSettings]) -> None:
        self._settings = settings

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(CAPABILITIES)
        )

    @property
    def settings(self) -> MessagesSettings:
        """The settings (read from the environment on first use with :func:`from_env`)."""
        if not isinstance(self._settings, MessagesSettings):
            self._settings = self._settings()
        return self._settings

    # --- the port -----------------------------------------------------------------------------

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        body = self._body(request)
        exchange = self._exchange(body, stream=False, cancel=None)
        try:
            data = self._whole(exchange)
        finally:
            exchange.close()
        try:
            parsed = json.loads(data)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "the model response was not JSON") from None
        output = output_of(reply_of(parsed, self._secrets()), request.interaction)
        return self._receipt(request, body, output)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        try:
            receipt = self._stream(request, sink, cancel)
        except PortError as error:
            sink(failed_event(error))  # exactly one Failed: the error's code and text
            raise
        sink(Complete.of(receipt))
        return receipt

    # --- one call -------------------------------------------------------------------------------

    def _body(self, request: ExecutionRequest) -> dict[str, Any]:
        settings = self.settings
        return build_body(request.interaction, settings.model, settings.max_tokens)

    def _secrets(self) -> tuple[str, ...]:
        return (self.settings.api_key,)

    def _exchange(
        self, body: dict[str, Any], *, stream: bool, cancel: CancelToken | None
    ) -> Exchange:
        settings = self.settings
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
            "x-api-key": settings.api_key,
            "anthropic-version": API_VERSION,
        }
        exchange = self.exchange_class(
            settings.base_url + "/v1/messages", headers, settings.timeout_ms / 1000, cancel
        )
        payload = {**body, "stream": True} if stream else body
        try:
            status, head = exchange.send(json.dumps(payload).encode("utf-8"))
            if status >= 300:
                raise self._status_failure(exchange, status, head)
        except BaseException:
            exchange.close()
            raise
        return exchange

    def _status_failure(self, exchange: Exchange, status: int, head: dict[str, str]) -> PortError:
        data = b""
        for chunk in exchange.chunks():
            data += chunk
            if len(data) > _ERROR_BODY_BYTES:
                break
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        return failures.status(status, head, body, exchange.where, self._secrets())

    def _whole(self, exchange: Exchange) -> bytes:
        limit = self.settings.max_response_bytes
        data = b""
        for chunk in exchange.chunks():
            data += chunk
            if len(data) > limit:
                raise failure(Code.INVALID_RESPONSE, f"model response exceeded {limit} byte limit")
        return data

    def _stream(
        self, request: ExecutionRequest, sink: StreamSink, cancel: CancelToken | None
    ) -> ExecutionReceipt:
        settings = self.settings
        body = self._body(request)
        exchange = self._exchange(body, stream=True, cancel=cancel)
        decoder = SSEDecoder(settings.max_line_bytes)
        reader = self.reader_class(
            request.interaction, settings.max_response_bytes, self._secrets()
        )
        received = 0
        try:
            for chunk in exchange.chunks():
                received += len(chunk)
                if received > settings.max_stream_bytes:
                    raise failure(
                        Code.INVALID_RESPONSE,
                        f"model stream exceeded {settings.max_stream_bytes} byte limit",
                    )
                try:
                    events = decoder.feed(chunk)
                except LineTooLongError:
                    raise failure(
                        Code.INVALID_RESPONSE,
                        f"model stream line exceeded {settings.max_line_bytes} byte limit",
                    ) from None
                for event in events:
                    for delta in reader.handle(event):
                        sink(delta)
                if reader.done:
                    break
        finally:
            exchange.close()
        if not reader.done:
            raise failure(Code.UNAVAILABLE, "the stream ended before message_stop")
        return self._receipt(request, body, output_of(reader.reply, request.interaction))

    def _receipt(
        self, request: ExecutionRequest, body: dict[str, Any], output: Any
    ) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(body),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=interaction_output_valid(
                request.interaction, output, schema_accepts
            ),
        )


def schema_accepts(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema``; a schema that does not compile accepts nothing."""
    try:
        return bool(jsonschema_rs.validator_for(schema).is_valid(output))
    except (ValueError, TypeError):
        return False


def from_env() -> MessagesRuntime:
    """The ``acme-messages`` entry point: settings come from ``ACME_MESSAGES_*`` when needed."""
    return MessagesRuntime(MessagesSettings.from_env)
