"""Wires the Ollama runtime into the templiqx conformance kit's pytest plugin.

Three fixtures: the factory (it receives the kit server's base URL and, because it accepts
``api_key``, the kit's marker credential, which must never leak), the wire (the kit's own
``OllamaWire``) and recorded answers to replay. The plugin adds one test per check: every port
check, then the transport suite played in NDJSON.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from acme_ollama import OllamaRuntime
from ollama_recordings import RECORDINGS
from ollama_target import WIRE, make_runtime

from templiqx_conformance import OllamaWire, Recording


@pytest.fixture
def templiqx_wire() -> OllamaWire:
    return WIRE


@pytest.fixture
def templiqx_wire_adapter_factory() -> Callable[[str, str], OllamaRuntime]:
    return make_runtime


@pytest.fixture
def templiqx_recordings() -> list[Recording]:
    return RECORDINGS
