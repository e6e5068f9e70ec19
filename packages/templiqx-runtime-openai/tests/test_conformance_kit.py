"""The conformance kit's OpenAI transport suite (and every port check) against this runtime.

Defining ``templiqx_openai_adapter_factory`` is all the kit's pytest plugin needs: it adds one
test per check beside this module (``test_conformance_kit.py::templiqx-conformance-openai::…``).
The factory receives the base URL of the kit's loopback server, which plays the model.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from templiqx_conformance import CheckStatus, run_check, run_conformance
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings, wire

KIT_KEY = "sk-kit-canary-2f9c81d0"


def make_runtime(base_url: str) -> OpenAIRuntime:
    return OpenAIRuntime(
        OpenAISettings(base_url=base_url, api_key=KIT_KEY, model="kit-model", timeout_ms=10_000)
    )


@pytest.fixture
def templiqx_openai_adapter_factory() -> Callable[[str], OpenAIRuntime]:
    return make_runtime


def test_no_kit_report_repeats_the_api_key() -> None:
    report = run_conformance(
        make_runtime,
        transport="openai",
        checks=["failure.projection", "transport.fault_matrix", "transport.in_band_error"],
    )
    assert report.ok, [check.message for check in report.failed_checks]
    assert KIT_KEY.encode() not in report.to_json()


def test_the_tool_call_probe_runs_and_passes() -> None:
    result = run_check("tools.declared_calls", make_runtime, transport="openai")
    assert result.status is CheckStatus.PASSED, result.message


def test_the_tool_call_probe_catches_tools_that_are_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "tool_fields", lambda interaction: {})
    result = run_check("tools.declared_calls", make_runtime, transport="openai")
    assert result.status is CheckStatus.FAILED
    assert "tool-calls via execute: tools is null; expected the declared tools" in result.message
