"""``OpenAIRuntime``: the templiqx runtime port over an OpenAI-compatible chat-completions API."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Final

import msgspec

from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    StreamEvent,
    fingerprint,
)
from templiqx_ports import (
    LIVE_RUNTIME,
    AsyncRuntimeAdapter,
    CancelToken,
    RuntimeAdapter,
    RuntimeFailureCode,
    RuntimeFailureError,
    RuntimeReach,
    StreamSink,
    failed_event,
)
from templiqx_runtime_openai.client import ChatClient, ChatResult
from templiqx_runtime_openai.details import Detail
from templiqx_runtime_openai.failures import FailureSource
from templiqx_runtime_openai.settings import OpenAISettings, SettingsError
from templiqx_runtime_openai.validity import interaction_valid

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CAPABILITIES",
    "LazyClient",
    "OpenAIRuntime",
    "create_runtime",
    "settings_failure",
]

ADAPTER_ID: Final = "templiqx-runtime-openai"
ADAPTER_VERSION: Final = "0.2.0"
CAPABILITIES: Final = ("chat_completion", "streaming", "structured_output", "text", "tool_calling")
"""Sorted. ``text``: plain-text interactions return the content string; ``streaming``: live
deltas from the server (not the default single-event projection); ``tool_calling``: declared
tools are sent, and tool calls come back as ``{"tool_calls": [...]}``."""


def settings_failure(source: FailureSource, error: SettingsError) -> RuntimeFailureError:
    """The runtime failure of settings that could not be read when a model was called.

    ``TQX_RUNTIME_PERMANENT`` (retrying will not help until the environment changes); the
    detail lists the problems (variable names only, never a value), the remedy says what to
    set.
    """
    failure = source.error(RuntimeFailureCode.PERMANENT, Detail.settings("; ".join(error.problems)))
    return RuntimeFailureError(msgspec.structs.replace(failure.failure, remedy=error.help))


class LazyClient:
    """A :class:`ChatClient` made on first use from settings read then (thread-safe).

    Reading fails again on every use until it succeeds (the environment may be fixed
    meanwhile); once made, the client is kept.
    """

    def __init__(
        self,
        load: Callable[[], OpenAISettings],
        make: Callable[[OpenAISettings], ChatClient],
        source: FailureSource,
    ) -> None:
        self._load = load
        self._make = make
        self._source = source
        self._client: ChatClient | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> ChatClient | None:
        """The client if it has been made."""
        return self._client

    def get(self) -> ChatClient:
        """The client; a :class:`RuntimeFailureError` when the settings cannot be read."""
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                try:
                    settings = self._load()
                except SettingsError as error:
                    raise settings_failure(self._source, error) from None
                self._client = self._make(settings)
            return self._client


class OpenAIRuntime(RuntimeAdapter, AsyncRuntimeAdapter):
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
    * Token usage goes to the caller's usage meter (:func:`templiqx_ports.usage_meter`).
    * Natively async too (:class:`~templiqx_ports.AsyncRuntimeAdapter`): :meth:`aexecute` and
      :meth:`aexecute_streaming` run on the event loop over httpx2 — no thread per call — and
      give the same receipts, events and failures as their synchronous twins. Closing the
      event iterator or cancelling the task stops the call and closes its connection.

    :meth:`from_env` builds the runtime without reading anything: the settings are read when a
    model is first called, so operations that never call one (render, compile) need none, and
    a missing setting is a ``TQX_RUNTIME_PERMANENT`` failure of that call naming every problem.
    """

    def __init__(self, settings: OpenAISettings | Callable[[], OpenAISettings]) -> None:
        source = FailureSource(ADAPTER_ID, ADAPTER_VERSION)
        if isinstance(settings, OpenAISettings):
            fixed = settings
            self._lazy = LazyClient(lambda: fixed, lambda s: ChatClient(s, source), source)
            self._lazy.get()
        else:
            self._lazy = LazyClient(settings, lambda s: ChatClient(s, source), source)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAIRuntime:
        """A runtime that reads ``MODEL_*`` (and ``OPENAI_*``) variables at its first call."""
        return cls(lambda: OpenAISettings.from_env(environ))

    def __repr__(self) -> str:
        client = self._lazy.ready
        return (
            f"OpenAIRuntime({client.settings!r})" if client else "OpenAIRuntime(<settings unread>)"
        )

    @property
    def settings(self) -> OpenAISettings:
        """The settings this runtime calls the model with (read now if not yet read).

        Raises :class:`~templiqx_ports.RuntimeFailureError` when they cannot be read.
        """
        return self._lazy.get().settings

    @property
    def client(self) -> ChatClient:
        """The underlying chat-completions client (made now if not yet made)."""
        return self._lazy.get()

    def check_settings(self) -> None:
        """Read the settings now (a server's start-up and readiness checks call this).

        Raises :class:`~templiqx_ports.RuntimeFailureError` (``TQX_RUNTIME_PERMANENT``) naming
        every missing or invalid setting, as the first model call would; never calls a model.
        """
        self._lazy.get()

    def warm_up(self) -> None:
        """Do the blocking part of the first async call now (importing the async HTTP stack,
        building its SSL context), for a server's start-up; nothing when the settings cannot be
        read (:meth:`check_settings` says why)."""
        try:
            client = self._lazy.get()
        except RuntimeFailureError:
            return
        client.warm_up()

    def close(self) -> None:
        """Close pooled connections (the runtime stays usable).

        Event loops' pools are closed on their loops; from a coroutine, :meth:`aclose` closes
        the running loop's at once.
        """
        client = self._lazy.ready
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close pooled connections, the running event loop's at once (the runtime stays usable)."""
        client = self._lazy.ready
        if client is not None:
            await client.aclose()

    def reach(self) -> RuntimeReach:
        """Live and paid: every call asks the configured model service."""
        return LIVE_RUNTIME

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(CAPABILITIES)
        )

    def request_fingerprint(self, request: ExecutionRequest) -> str:
        """The fingerprint of the request body a call would send (settings are read now)."""
        return fingerprint(self._lazy.get().request_body(request.interaction))

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
        return self._receipt(request, self._lazy.get().complete(request.interaction))

    def execute_streaming(
        self,
        request: ExecutionRequest,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ExecutionReceipt:
        try:
            result = self._lazy.get().stream(request.interaction, sink, cancel=cancel)
            receipt = self._receipt(request, result)
        except RuntimeFailureError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._receipt(request, await self._lazy.get().acomplete(request.interaction))

    async def aexecute_streaming(
        self,
        request: ExecutionRequest,
        *,
        cancel: CancelToken | None = None,
    ) -> AsyncIterator[StreamEvent]:
        try:
            async with self._lazy.get().astream(request.interaction, cancel=cancel) as stream:
                async for event in stream:
                    yield event
            assert stream.result is not None
            receipt = self._receipt(request, stream.result)
        except RuntimeFailureError as error:
            yield failed_event(error)
            raise
        yield Complete.of(receipt)


def create_runtime() -> OpenAIRuntime:
    """The ``openai`` entry point: a runtime that reads its settings when a model is called.

    ``MODEL_BASE_URL``, ``MODEL_API_KEY`` (falling back to ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY``), ``MODEL_ID`` and ``MODEL_TIMEOUT_MS``; nothing is read or checked
    here, so the factory never fails.
    """
    return OpenAIRuntime.from_env()
