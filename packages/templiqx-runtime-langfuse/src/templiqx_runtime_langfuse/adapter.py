"""``LangfuseRuntime``: one OpenAI-compatible model call per execution, traced to Langfuse."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Final

from templiqx_contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_ports import RuntimeAdapter, RuntimeFailureError
from templiqx_runtime_langfuse.ingestion import TraceRecord, emit_trace, trace_transport
from templiqx_runtime_langfuse.settings import LangfuseSettings
from templiqx_runtime_openai import (
    SAMPLING_KEYS,
    ChatClient,
    FailureSource,
    OpenAISettings,
    output_schema_valid,
)

__all__ = ["ADAPTER_ID", "ADAPTER_VERSION", "CAPABILITIES", "LangfuseRuntime", "create_runtime"]

ADAPTER_ID: Final = "templiqx-runtime-langfuse"
ADAPTER_VERSION: Final = "0.2.0"
CAPABILITIES: Final = ("structured_output", "chat_completion")
"""The reference's capability list, in its order."""


class LangfuseRuntime(RuntimeAdapter):
    """Executes with the OpenAI runtime's non-streamed client, then traces to Langfuse.

    * ``request_fingerprint`` is the fingerprint of the whole :class:`ExecutionRequest` (the
      reference recipe for this adapter, so ``fixture_output`` takes part in it).
    * Failures are those of the OpenAI client, attributed to ``templiqx-runtime-langfuse``.
    * After every execution — success, schema-invalid output or failure — one best-effort trace
      is sent (see :mod:`templiqx_runtime_langfuse.ingestion`); it can delay the call by at
      most ``langfuse.timeout_ms`` and never changes its outcome.
    * Streaming keeps the port's default projection: one ``Complete`` or one ``Failed``.
    """

    def __init__(self, model: OpenAISettings, langfuse: LangfuseSettings) -> None:
        self._model = model
        self._langfuse = langfuse
        self._client = ChatClient(model, FailureSource(ADAPTER_ID, ADAPTER_VERSION))
        self._tracing = trace_transport()

    def __repr__(self) -> str:
        return f"LangfuseRuntime({self._model!r}, {self._langfuse!r})"

    @property
    def model_settings(self) -> OpenAISettings:
        """The model endpoint settings."""
        return self._model

    @property
    def langfuse_settings(self) -> LangfuseSettings:
        """The Langfuse settings."""
        return self._langfuse

    def close(self) -> None:
        """Close pooled connections (the runtime stays usable)."""
        self._client.close()
        self._tracing.close()

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=list(CAPABILITIES)
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        interaction = request.interaction
        request_fingerprint = fingerprint(request)
        base = TraceRecord(
            adapter_id=ADAPTER_ID,
            adapter_version=ADAPTER_VERSION,
            contract_id=interaction.contract_id,
            contract_version=interaction.contract_version,
            model=self._model.model,
            request_fingerprint=request_fingerprint,
            messages=[{"role": m.role, "content": m.content} for m in interaction.messages],
            model_parameters={
                key: interaction.runtime_policy[key]
                for key in SAMPLING_KEYS
                if key in interaction.runtime_policy
            },
            started=time.time(),
            ended=0.0,
        )
        try:
            result = self._client.complete(interaction)
        except RuntimeFailureError as error:
            failed = replace(base, ended=time.time(), failure=error.failure)
            emit_trace(self._tracing, self._langfuse, failed, time.time())
            raise
        output = result.output
        receipt = ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=request_fingerprint,
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=output_schema_valid(interaction.output_schema, output),
        )
        done = replace(
            base,
            started=result.started,
            ended=result.ended,
            usage=result.usage,
            output=output,
            output_fingerprint=receipt.output_fingerprint,
            output_schema_valid=receipt.output_schema_valid,
        )
        emit_trace(self._tracing, self._langfuse, done, time.time())
        return receipt


def create_runtime() -> LangfuseRuntime:
    """The ``langfuse`` entry point: ``MODEL_*`` plus ``LANGFUSE_*`` environment variables."""
    return LangfuseRuntime(OpenAISettings.from_env(), LangfuseSettings.from_env())
