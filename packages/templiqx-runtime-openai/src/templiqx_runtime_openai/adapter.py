"""``OpenAIRuntime``: the templiqx runtime port over an OpenAI-compatible chat-completions API."""

from __future__ import annotations

from typing import Final

from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_ports import (
    CancelToken,
    RuntimeAdapter,
    RuntimeFailureError,
    StreamSink,
    failed_event,
)
from templiqx_runtime_openai.client import ChatClient, ChatResult
from templiqx_runtime_openai.failures import FailureSource
from templiqx_runtime_openai.settings import OpenAISettings
from templiqx_runtime_openai.validity import interaction_valid

__all__ = ["ADAPTER_ID", "ADAPTER_VERSION", "CAPABILITIES", "OpenAIRuntime", "create_runtime"]

ADAPTER_ID: Final = "templiqx-runtime-openai"
ADAPTER_VERSION: Final = "0.2.0"
CAPABILITIES: Final = ("chat_completion", "streaming", "structured_output", "text", "tool_calling")
"""Sorted. ``text``: plain-text interactions return the content string; ``streaming``: live
deltas from the server (not the default single-event projection); ``tool_calling``: declared
tools are sent, and tool calls come back as ``{"tool_calls": [...]}``."""


class OpenAIRuntime(RuntimeAdapter):
    """One chat completion per execution against ``settings.base_url``; no retries.

    * ``request_fingerprint`` is the fingerprint of the non-streamed request body (model,
      messages, ``response_format``, declared tools, forwarded sampling settings) — so it names
      what the model was asked, and is the same for ``execute`` and ``execute_streaming``.
    * ``output`` is the parsed JSON (structured-output interactions), the text (otherwise), or
      ``{"tool_calls": [...]}``; ``output_schema_valid`` checks it against the contract's schema
      (a tool-call answer against the declared tools).
    * ``execute_streaming`` emits a ``Delta`` per content fragment and a ``ToolCallDelta`` per
      arguments fragment as they arrive, then exactly one ``Complete`` (the receipt ``execute``
      would return) or one ``Failed`` (then raises the same error). ``cancel`` is honoured
      within about 50 ms, even while the server is silent.
    """

    def __init__(self, settings: OpenAISettings) -> None:
        self._settings = settings
        self._client = ChatClient(settings, FailureSource(ADAPTER_ID, ADAPTER_VERSION))

    def __repr__(self) -> str:
        return f"OpenAIRuntime({self._settings!r})"

    @property
    def settings(self) -> OpenAISettings:
        """The settings this runtime was built with."""
        return self._settings

    @property
    def client(self) -> ChatClient:
        """The underlying chat-completions client."""
        return self._client

    def close(self) -> None:
        """Close pooled connections (the runtime stays usable)."""
        self._client.close()

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(CAPABILITIES)
        )

    def _receipt(self, request: ExecutionRequest, result: ChatResult) -> ExecutionReceipt:
        output = result.output
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(result.body),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=interaction_valid(request.interaction, output),
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._receipt(request, self._client.complete(request.interaction))

    def execute_streaming(
        self,
        request: ExecutionRequest,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ExecutionReceipt:
        try:
            result = self._client.stream(request.interaction, sink, cancel=cancel)
            receipt = self._receipt(request, result)
        except RuntimeFailureError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt


def create_runtime() -> OpenAIRuntime:
    """The ``openai`` entry point: a runtime configured from ``MODEL_*`` environment variables."""
    return OpenAIRuntime(OpenAISettings.from_env())
