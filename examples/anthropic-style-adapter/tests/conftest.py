"""Wires the Messages runtime into the templiqx conformance kit's pytest plugin.

Three fixtures: the factory (it receives the kit server's base URL and, because it accepts
``api_key``, the kit's marker credential, which must never leak), the wire (the kit's own
``MessagesWire``, told which tool this adapter forces for structured output), and recorded
responses to replay. The plugin adds one test per check: every port check, then the transport
suite.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from acme_messages import MessagesRuntime
from messages_recordings import RECORDINGS
from messages_target import WIRE, make_runtime

from templiqx_conformance import MessagesWire, Recording


@pytest.fixture
def templiqx_wire() -> MessagesWire:
    return WIRE


@pytest.fixture
def templiqx_wire_adapter_factory() -> Callable[[str, str], MessagesRuntime]:
    return make_runtime


@pytest.fixture
def templiqx_recordings() -> list[Recording]:
    return RECORDINGS
