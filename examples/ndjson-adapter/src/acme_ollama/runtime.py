"""``OllamaRuntime``: the templiqx runtime port over an Ollama-style chat API.

* ``execute`` POSTs the request with ``"stream": false`` and reads the whole JSON answer;
  ``execute_streaming`` asks for a stream and emits one ``Delta`` (or ``ToolCallDelta``) per
  line that carries something, as it arrives, then exactly one ``Complete`` — the receipt
  ``execute`` would return — or one ``Failed`` equal to the error it then raises.
* A stream ends at its ``"done": true`` line; a body that ends before it is a failure.
* ``request_fingerprint`` hashes the request body without ``stream``: what the model was asked.
* ``output_schema_valid`` is computed, never assumed: a tool-call answer by the declared tools,
  anything else by the output schema (``templiqx_contracts.interaction_output_valid``).
* Bounded: a whole body and a stream's assembled output at 2 MiB, one line at 1 MiB, the raw
  stream at 64 MiB (DECISIONS 9). One deadline per call. No retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import jsonschema_rs

from acme_ollama import failures
from acme_ollama.chat import StreamReader, build_body, output_of, reply_of
from acme_ollama.exchange import Exchange
from acme_ollama.failures import ADAPTER_ID, ADAPTER_VERSION, Code, failure
from acme_ollama.ndjson import LineTooLongError, NDJSONDecoder
from acme_ollama.settings import OllamaSettings
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
    interaction_output_valid,
)
from templiqx_ports import CancelToken, PortError, RuntimeAdapter, StreamSink, failed_event

__all__ = ["CAPABILITIES", "OllamaRuntime", "from_env", "schema_accepts"]

CAPABILITIES: Final = ("streaming", "structured_output", "text", "tool_calling")
_ERROR_BODY_BYTES: Final = 65_536


class OllamaRuntime(RuntimeAdapter):
    """One chat call per execution (see the module docstring).

    ``settings`` may be an :class:`OllamaSettings` or a function returning one, called when the
    model is first needed (how :func:`from_env` defers reading the environment).
    """

    exchange_class: type[Exchange] = Exchange
    """Makes each HTTP exchange (replaceable, e.g. to add a proxy or a custom TLS context)."""
    reader_class: type[StreamReader] = StreamReader
    """Turns stream lines into deltas and the final reply."""

    def __init__(self, settings: OllamaSettings | Callable[[], OllamaSettings]) -> None:
        self._settings = settings

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(CAPABILITIES)
        )

    @property
    def settings(self) -> OllamaSettings:
        """The settings (read from the environment on first use with :func:`from_env`)."""
        if not isinstance(self._settings, OllamaSettings):
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
        return build_body(request.interaction, self.settings.model)

    def _secrets(self) -> tuple[str, ...]:
        return (self.settings.api_key,) if self.settings.api_key else ()

    def _exchange(
        self, body: dict[str, Any], *, stream: bool, cancel: CancelToken | None
    ) -> Exchange:
        settings = self.settings
        headers = {
            "content-type": "application/json",
            "accept": "application/x-ndjson" if stream else "application/json",
        }
        if settings.api_key:
            headers["authorization"] = f"Bearer {settings.api_key}"
        exchange = self.exchange_class(
            settings.base_url + "/api/chat", headers, settings.timeout_ms / 1000, cancel
        )
        try:
            status, head = exchange.send(json.dumps({**body, "stream": stream}).encode("utf-8"))
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
        decoder = NDJSONDecoder(settings.max_line_bytes)
        reader = self.reader_class(settings.max_response_bytes, self._secrets())
        received = 0
        try:
            for chunk in exchange.chunks():
                received += len(chunk)
                if received > settings.max_stream_bytes:
                    raise failure(
                        Code.INVALID_RESPONSE,
                        f"model stream exceeded {settings.max_stream_bytes} byte limit",
                    )
                for line in self._lines(decoder, chunk):
                    for delta in reader.handle(line):
                        sink(delta)
                    exchange.check()  # a token set while a delta was handled stops us here
                    if reader.done:
                        break
                if reader.done:
                    break
        finally:
            exchange.close()
        if not reader.done:
            raise failure(Code.UNAVAILABLE, "the stream ended before its done line")
        return self._receipt(request, body, output_of(reader.reply, request.interaction))

    def _lines(self, decoder: NDJSONDecoder, chunk: bytes) -> list[Any]:
        limit = self.settings.max_line_bytes
        try:
            return decoder.feed(chunk)
        except LineTooLongError:
            raise failure(
                Code.INVALID_RESPONSE, f"model stream line exceeded {limit} byte limit"
            ) from None
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "a stream line was not JSON") from None

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


def from_env() -> OllamaRuntime:
    """The ``acme-ollama`` entry point: settings come from ``ACME_OLLAMA_*`` when needed."""
    return OllamaRuntime(OllamaSettings.from_env)
