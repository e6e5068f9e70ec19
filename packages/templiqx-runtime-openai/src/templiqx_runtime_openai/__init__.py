"""templiqx-runtime-openai: templiqx runtime adapter for OpenAI-compatible chat-completions servers, with live SSE streaming."""

__version__ = "0.2.0"

__all__ = ["__version__"]
