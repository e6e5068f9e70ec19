"""acme-templiqx-echo: an example templiqx runtime adapter that replays fixture outputs."""

from acme_echo.runtime import ADAPTER_ID, ADAPTER_VERSION, EchoRuntime

__all__ = ["ADAPTER_ID", "ADAPTER_VERSION", "EchoRuntime"]
