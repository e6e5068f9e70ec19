"""acme-templiqx-ollama: an example templiqx runtime adapter for an Ollama-style chat API."""

from acme_ollama.failures import ADAPTER_ID, ADAPTER_VERSION
from acme_ollama.runtime import CAPABILITIES, OllamaRuntime, from_env
from acme_ollama.settings import OllamaSettings, SettingsError

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CAPABILITIES",
    "OllamaRuntime",
    "OllamaSettings",
    "SettingsError",
    "from_env",
]
