"""The Ollama runtime's conformance target: its factory and the kit's wire for its API.

The kit ships the wire for Ollama's ``/api/chat`` (``OllamaWire``: newline-delimited JSON, tool
calls sent whole, errors as ``{"error": ...}``), so there is nothing provider-specific to write
here: the factory points the runtime at the kit's server, and the kit plays the model.

``target`` is the same setup for the command::

    templiqx-conformance run ollama_target:target      (from this folder)
    templiqx-conformance run ollama_target:make_runtime --transport ollama
"""

from __future__ import annotations

from typing import Final

from acme_ollama import OllamaRuntime, OllamaSettings
from ollama_recordings import RECORDINGS

from templiqx_conformance import AdapterTarget, OllamaWire

__all__ = ["MODEL", "WIRE", "make_runtime", "target"]

MODEL: Final = "llama3.2:3b"
WIRE: Final = OllamaWire()


def make_runtime(base_url: str, api_key: str) -> OllamaRuntime:
    """The kit's factory: a runtime at the kit's server; ``api_key`` is the kit's marker, sent
    as a bearer token (it must never show up in anything the runtime produces)."""
    return OllamaRuntime(
        OllamaSettings(base_url=base_url, model=MODEL, api_key=api_key, timeout_ms=10_000)
    )


target = AdapterTarget(factory=make_runtime, transport=WIRE, recordings=RECORDINGS)
