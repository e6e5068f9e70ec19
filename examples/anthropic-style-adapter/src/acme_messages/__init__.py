"""acme-templiqx-messages: an example templiqx runtime adapter for a Messages-style HTTP API."""

from acme_messages.failures import ADAPTER_ID, ADAPTER_VERSION
from acme_messages.messages import OUTPUT_TOOL
from acme_messages.runtime import CAPABILITIES, MessagesRuntime, from_env
from acme_messages.settings import MessagesSettings, SettingsError

__all__ = [
    "ADAPTER_ID",
    "ADAPTER_VERSION",
    "CAPABILITIES",
    "OUTPUT_TOOL",
    "MessagesRuntime",
    "MessagesSettings",
    "SettingsError",
    "from_env",
]
