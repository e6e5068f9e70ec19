"""Wires the echo runtime into the templiqx conformance kit's pytest plugin.

Defining ``templiqx_adapter_factory`` here is all it takes: the plugin adds one test per check.
``templiqx_failure_cases`` (optional) lists the failures the adapter can be driven into.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from acme_echo import EchoRuntime
from conformance_target import failure_cases

from templiqx_conformance import FailureCase


@pytest.fixture
def templiqx_adapter_factory() -> Callable[[], EchoRuntime]:
    return EchoRuntime


@pytest.fixture
def templiqx_failure_cases() -> list[FailureCase]:
    return failure_cases()
