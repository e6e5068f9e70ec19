"""templiqx-runtime-langfuse: an OpenAI-compatible model call per execution, traced to Langfuse.

``LangfuseRuntime(OpenAISettings(...), LangfuseSettings(...))`` — or the ``langfuse`` entry point
of ``templiqx.runtimes``, configured from ``MODEL_*``, ``LANGFUSE_HOST``, ``LANGFUSE_PUBLIC_KEY``,
``LANGFUSE_SECRET_KEY`` and ``TEMPLIQX_LANGFUSE_PAYLOAD`` (``fingerprints_only`` by default, or
``full``). Traces go to the batch ingestion API, best effort.
"""

from templiqx_runtime_langfuse.adapter import (
    ADAPTER_ID,
    ADAPTER_VERSION,
    CAPABILITIES,
    LangfuseRuntime,
    create_runtime,
)
from templiqx_runtime_langfuse.ingestion import TraceRecord, build_batch, emit_trace, rfc3339
from templiqx_runtime_langfuse.settings import (
    DEFAULT_TRACE_TIMEOUT_MS,
    LangfuseSettings,
    PayloadPolicy,
)

__version__ = "0.2.0"

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CAPABILITIES",
    "DEFAULT_TRACE_TIMEOUT_MS",
    "LangfuseRuntime",
    "LangfuseSettings",
    "PayloadPolicy",
    "TraceRecord",
    "__version__",
    "build_batch",
    "create_runtime",
    "emit_trace",
    "rfc3339",
]
