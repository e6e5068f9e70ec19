"""templiqx-runtime-langfuse: an OpenAI-compatible model call per execution, traced to Langfuse.

``LangfuseRuntime(OpenAISettings(...), LangfuseSettings(...))`` — or the ``langfuse`` entry point
of ``templiqx.runtimes``, configured from ``MODEL_*``, ``LANGFUSE_HOST``, ``LANGFUSE_PUBLIC_KEY``,
``LANGFUSE_SECRET_KEY``, ``TEMPLIQX_LANGFUSE_PAYLOAD`` (``fingerprints_only`` by default, or
``full``) and ``TEMPLIQX_LANGFUSE_EXPORT``. Traces go, best effort, to the batch ingestion API
(``ingestion``, the default), to Langfuse's OpenTelemetry endpoint over OTLP/HTTP JSON
(``otlp``), or to both.
"""

from templiqx_runtime_langfuse.adapter import (
    ADAPTER_ID,
    ADAPTER_VERSION,
    CAPABILITIES,
    LangfuseRuntime,
    create_runtime,
)
from templiqx_runtime_langfuse.ingestion import TraceRecord, build_batch, emit_trace, rfc3339
from templiqx_runtime_langfuse.otlp import build_otlp, emit_otlp
from templiqx_runtime_langfuse.settings import (
    DEFAULT_TRACE_TIMEOUT_MS,
    ExportMode,
    LangfuseSettings,
    PayloadPolicy,
)

__version__ = "0.2.0"

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CAPABILITIES",
    "DEFAULT_TRACE_TIMEOUT_MS",
    "ExportMode",
    "LangfuseRuntime",
    "LangfuseSettings",
    "PayloadPolicy",
    "TraceRecord",
    "__version__",
    "build_batch",
    "build_otlp",
    "create_runtime",
    "emit_otlp",
    "emit_trace",
    "rfc3339",
]
