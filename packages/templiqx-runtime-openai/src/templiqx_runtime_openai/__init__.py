"""templiqx-runtime-openai: the runtime port over an OpenAI-compatible chat-completions API.

``OpenAIRuntime(OpenAISettings(...))`` (or the ``openai`` entry point of ``templiqx.runtimes``,
configured when a model is first called from ``MODEL_BASE_URL``, ``MODEL_API_KEY`` — falling
back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` — ``MODEL_ID`` and ``MODEL_TIMEOUT_MS``)
executes compiled interactions with ``POST {base_url}/chat/completions``, streamed live over
server-sent events or not, with one whole-call deadline, prompt cancellation, bounded memory,
connection reuse, and failures that carry a fixed detail (fingerprinted), the server's own
message (sanitised, secrets redacted) and a remedy naming the setting to check.
"""

from templiqx_runtime_openai.adapter import (
    ADAPTER_ID,
    ADAPTER_VERSION,
    CAPABILITIES,
    LazyClient,
    OpenAIRuntime,
    create_runtime,
    settings_failure,
)
from templiqx_runtime_openai.client import ChatClient, ChatResult
from templiqx_runtime_openai.completion import MAX_TOOL_ID_BYTES, MAX_TOOL_NAME_BYTES
from templiqx_runtime_openai.failures import Detail, FailureSource
from templiqx_runtime_openai.retry_hints import retry_after_ms
from templiqx_runtime_openai.settings import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_STREAM_BYTES,
    DEFAULT_TIMEOUT_MS,
    HELP_FOR_MODEL_SETTINGS,
    EnvReader,
    OpenAISettings,
    SettingLabels,
    SettingsError,
    check_header_value,
    check_http_url,
    env_positive_int,
    require_env,
)
from templiqx_runtime_openai.sse import DONE, LineTooLongError, SSEDecoder
from templiqx_runtime_openai.transport import Call, Transport
from templiqx_runtime_openai.validity import output_schema_valid
from templiqx_runtime_openai.wire import SAMPLING_KEYS, Usage, build_body, streaming_body

__version__ = "0.2.0"

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CAPABILITIES",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_STREAM_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "DONE",
    "MAX_TOOL_ID_BYTES",
    "MAX_TOOL_NAME_BYTES",
    "HELP_FOR_MODEL_SETTINGS",
    "SAMPLING_KEYS",
    "Call",
    "ChatClient",
    "ChatResult",
    "Detail",
    "EnvReader",
    "FailureSource",
    "LazyClient",
    "LineTooLongError",
    "OpenAIRuntime",
    "OpenAISettings",
    "SSEDecoder",
    "SettingLabels",
    "SettingsError",
    "Transport",
    "Usage",
    "__version__",
    "build_body",
    "check_header_value",
    "check_http_url",
    "create_runtime",
    "env_positive_int",
    "output_schema_valid",
    "require_env",
    "retry_after_ms",
    "settings_failure",
    "streaming_body",
]
