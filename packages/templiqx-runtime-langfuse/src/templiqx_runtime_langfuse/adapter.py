"""``LangfuseRuntime``: one OpenAI-compatible model call per execution, traced to Langfuse."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from templiqx_contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_ports import (
    LIVE_RUNTIME,
    AsyncRuntimeAdapter,
    RuntimeAdapter,
    RuntimeFailureError,
    RuntimeReach,
)
from templiqx_runtime_langfuse.ingestion import (
    TraceRecord,
    aemit_trace,
    async_trace_transport,
    emit_trace,
    trace_transport,
)
from templiqx_runtime_langfuse.otlp import aemit_otlp, emit_otlp
from templiqx_runtime_langfuse.settings import HELP_FOR_LANGFUSE_SETTINGS, LangfuseSettings
from templiqx_runtime_openai import (
    HELP_FOR_MODEL_SETTINGS,
    SAMPLING_KEYS,
    ChatClient,
    ChatResult,
    EnvReader,
    FailureSource,
    LazyClient,
    OpenAISettings,
    output_schema_valid,
)

if TYPE_CHECKING:
    from templiqx_runtime_openai.async_transport import AsyncTransport

__all__ = ["ADAPTER_ID", "ADAPTER_VERSION", "CAPABILITIES", "LangfuseRuntime", "create_runtime"]

ADAPTER_ID: Final = "templiqx-runtime-langfuse"
ADAPTER_VERSION: Final = "0.2.0"
CAPABILITIES: Final = ("structured_output", "chat_completion")
"""The reference's capability list, in its order."""


@dataclass(frozen=True, slots=True)
class _Endpoints:
    model: OpenAISettings
    langfuse: LangfuseSettings


def _read_env(environ: Mapping[str, str] | None) -> _Endpoints:
    """Both settings from the environment; every problem of either in one error."""
    reader = EnvReader(environ)
    model = OpenAISettings.read(reader)
    langfuse = LangfuseSettings.read(reader)
    reader.raise_problems(
        "runtime settings are missing or invalid",
        help=f"{HELP_FOR_MODEL_SETTINGS}; {HELP_FOR_LANGFUSE_SETTINGS}",
    )
    assert model is not None
    assert langfuse is not None
    return _Endpoints(model, langfuse)


class LangfuseRuntime(RuntimeAdapter, AsyncRuntimeAdapter):
    """Executes with the OpenAI runtime's non-streamed client, then traces to Langfuse.

    * ``request_fingerprint`` is the fingerprint of the whole :class:`ExecutionRequest` (the
      reference recipe for this adapter, so ``fixture_output`` takes part in it).
    * Failures are those of the OpenAI client, attributed to ``templiqx-runtime-langfuse``; a
      server's message shown in one has the Langfuse keys redacted as well as the model key.
    * After every execution — success, schema-invalid output or failure — one best-effort trace
      is sent to the ingestion API (:mod:`templiqx_runtime_langfuse.ingestion`), to Langfuse's
      OTLP endpoint (:mod:`templiqx_runtime_langfuse.otlp`), or to both, as
      ``langfuse.export`` says; each can delay the call by at most ``langfuse.timeout_ms`` and
      never changes its outcome. Token usage goes into the trace and to the caller's usage
      meter.
    * Streaming keeps the port's default projection: one ``Complete`` or one ``Failed``.
    * Natively async too: :meth:`aexecute` awaits the client's ``acomplete`` and sends the
      trace with the async transport (no thread, same trace, same bound); ``aexecute_streaming``
      is the async port's default projection of it.

    :meth:`from_env` reads nothing until a model is called (see ``OpenAIRuntime.from_env``).
    """

    def __init__(
        self,
        model: OpenAISettings | None = None,
        langfuse: LangfuseSettings | None = None,
        *,
        load: Callable[[], tuple[OpenAISettings, LangfuseSettings]] | None = None,
    ) -> None:
        source = FailureSource(ADAPTER_ID, ADAPTER_VERSION)
        if load is None:
            if model is None or langfuse is None:
                raise TypeError("LangfuseRuntime needs both settings, or load=")
            fixed = (model, langfuse)
            load = lambda: fixed  # noqa: E731
        self._endpoints: tuple[OpenAISettings, LangfuseSettings] | None = None
        self._tracing = trace_transport()
        self._async_tracing: AsyncTransport | None = None  # made (importing httpx2) on first use
        self._lock = threading.Lock()

        def read() -> OpenAISettings:
            endpoints = load()
            self._endpoints = endpoints
            return endpoints[0]

        def make(settings: OpenAISettings) -> ChatClient:
            assert self._endpoints is not None
            langfuse = self._endpoints[1]
            return ChatClient(
                settings,
                source,
                secrets=(langfuse.public_key, langfuse.secret_key, langfuse.authorization),
            )

        self._lazy = LazyClient(read, make, source)
        if model is not None and langfuse is not None:
            self._lazy.get()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LangfuseRuntime:
        """A runtime that reads ``MODEL_*`` and ``LANGFUSE_*`` variables at its first call."""

        def load() -> tuple[OpenAISettings, LangfuseSettings]:
            endpoints = _read_env(environ)
            return endpoints.model, endpoints.langfuse

        return cls(load=load)

    def __repr__(self) -> str:
        if self._endpoints is None or self._lazy.ready is None:
            return "LangfuseRuntime(<settings unread>)"
        return f"LangfuseRuntime({self._endpoints[0]!r}, {self._endpoints[1]!r})"

    def _ready(self) -> tuple[ChatClient, LangfuseSettings]:
        client = self._lazy.get()
        assert self._endpoints is not None
        return client, self._endpoints[1]

    def check_settings(self) -> None:
        """Read the model and Langfuse settings now (a server's start-up and readiness checks).

        Raises :class:`~templiqx_ports.RuntimeFailureError` (``TQX_RUNTIME_PERMANENT``) naming
        every missing or invalid setting; never calls a model or Langfuse.
        """
        self._ready()

    def warm_up(self) -> None:
        """Do the blocking part of the first async call now (the async HTTP stack of the model
        call and of the trace), for a server's start-up; nothing when the settings cannot be
        read."""
        try:
            client, _ = self._ready()
        except RuntimeFailureError:
            return
        client.warm_up()
        self._async_tracer().warm()

    @property
    def model_settings(self) -> OpenAISettings:
        """The model endpoint settings (read now if not yet read)."""
        return self._ready()[0].settings

    @property
    def langfuse_settings(self) -> LangfuseSettings:
        """The Langfuse settings (read now if not yet read)."""
        return self._ready()[1]

    def close(self) -> None:
        """Close pooled connections (the runtime stays usable; see ``OpenAIRuntime.close``)."""
        client = self._lazy.ready
        if client is not None:
            client.close()
        self._tracing.close()
        if self._async_tracing is not None:
            self._async_tracing.close()

    async def aclose(self) -> None:
        """Close pooled connections, the running event loop's at once."""
        client = self._lazy.ready
        if client is not None:
            await client.aclose()
        self._tracing.close()
        if self._async_tracing is not None:
            await self._async_tracing.aclose()

    def reach(self) -> RuntimeReach:
        """Live and paid: every call asks the model service and writes a trace to Langfuse."""
        return LIVE_RUNTIME

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(CAPABILITIES)
        )

    def request_fingerprint(self, request: ExecutionRequest) -> str:
        """The fingerprint of the whole execution request (what the receipt carries)."""
        return fingerprint(request)

    def _record(self, request: ExecutionRequest, client: ChatClient) -> TraceRecord:
        """The trace of ``request`` before the call (its outcome is filled in after)."""
        interaction = request.interaction
        return TraceRecord(
            adapter_id=ADAPTER_ID,
            adapter_version=ADAPTER_VERSION,
            contract_id=interaction.contract_id,
            contract_version=interaction.contract_version,
            model=client.settings.model,
            request_fingerprint=fingerprint(request),
            messages=[{"role": m.role, "content": m.content} for m in interaction.messages],
            model_parameters={
                key: interaction.runtime_policy[key]
                for key in SAMPLING_KEYS
                if key in interaction.runtime_policy
            },
            started=time.time(),
            ended=0.0,
        )

    def _concluded(
        self, request: ExecutionRequest, base: TraceRecord, result: ChatResult
    ) -> tuple[ExecutionReceipt, TraceRecord]:
        """The receipt of a successful call, and its trace."""
        output = result.output
        receipt = ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=base.request_fingerprint,
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=output_schema_valid(request.interaction.output_schema, output),
        )
        done = replace(
            base,
            started=result.started,
            ended=result.ended,
            usage=result.usage,
            output=output,
            output_fingerprint=receipt.output_fingerprint,
            output_schema_valid=receipt.output_schema_valid,
            response_id=result.response_id,
            response_model=result.response_model,
            finish_reason=result.finish_reason,
        )
        return receipt, done

    def _send(self, langfuse: LangfuseSettings, record: TraceRecord) -> None:
        if langfuse.export.ingestion:
            emit_trace(self._tracing, langfuse, record, time.time())
        if langfuse.export.otlp:
            emit_otlp(self._tracing, langfuse, record)

    async def _asend(self, langfuse: LangfuseSettings, record: TraceRecord) -> None:
        if langfuse.export.ingestion:
            await aemit_trace(self._async_tracer(), langfuse, record, time.time())
        if langfuse.export.otlp:
            await aemit_otlp(self._async_tracer(), langfuse, record)

    def _async_tracer(self) -> AsyncTransport:
        tracing = self._async_tracing
        if tracing is None:
            with self._lock:
                if self._async_tracing is None:
                    self._async_tracing = async_trace_transport()
                tracing = self._async_tracing
        return tracing

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        client, langfuse = self._ready()
        base = self._record(request, client)
        try:
            result = client.complete(request.interaction)
        except RuntimeFailureError as error:
            self._send(langfuse, replace(base, ended=time.time(), failure=error.failure))
            raise
        receipt, done = self._concluded(request, base, result)
        self._send(langfuse, done)
        return receipt

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        client, langfuse = self._ready()
        base = self._record(request, client)
        try:
            result = await client.acomplete(request.interaction)
        except RuntimeFailureError as error:
            await self._asend(langfuse, replace(base, ended=time.time(), failure=error.failure))
            raise
        receipt, done = self._concluded(request, base, result)
        await self._asend(langfuse, done)
        return receipt


def create_runtime() -> LangfuseRuntime:
    """The ``langfuse`` entry point: ``MODEL_*`` plus ``LANGFUSE_*`` environment variables,
    read when a model is first called (the factory itself never fails)."""
    return LangfuseRuntime.from_env()
