"""templiqx-runtime-langfuse: templiqx runtime adapter that calls an OpenAI-compatible model and traces it to Langfuse."""

__version__ = "0.2.0"

__all__ = ["__version__"]
