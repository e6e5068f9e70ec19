"""The conformance kit's port checks against the scripted runtime.

The scripted runtime replays fixture outputs (``ScriptedRuntime.success()``, whose
``output_schema_valid`` is computed against the probe's schema) and is driven into every runtime
failure code by ``ScriptedRuntime.failure`` (single-shot, so the kit asks for a fresh runtime per
call). Every check passes; with ``tool_calling`` the kit's tool-call probe runs through every
check too.
"""

from __future__ import annotations

import pytest

from templiqx_conformance import CheckStatus, FailureCase, check_names, run_check
from templiqx_mock import ScriptedRuntime, ScriptedSuccess
from templiqx_ports import RuntimeFailureCode


def failure_cases() -> list[FailureCase]:
    return [
        FailureCase(code=code.value, factory=lambda code=code: ScriptedRuntime.failure("kit", code))
        for code in RuntimeFailureCode
    ]


@pytest.mark.parametrize("check", check_names())
def test_conformance_kit(check: str) -> None:
    result = run_check(check, ScriptedRuntime.success, failures=failure_cases())
    if result.status is CheckStatus.NOT_APPLICABLE:
        # the mock streams, holds no credential for secrets.not_exposed to look for, without
        # tool_calling is never sent the tool-call probe, and a scripted success streams no
        # delta for the kit's probes (nothing for streaming.deltas_match_output to compare)
        assert check in (
            "streaming.default_projection",
            "secrets.not_exposed",
            "tools.declared_calls",
            "streaming.deltas_match_output",
        ), result.message
        return
    assert result.status is CheckStatus.PASSED, result.message


def test_a_paced_stream_is_cancelled_mid_way() -> None:
    result = run_check("cancellation.token", lambda: ScriptedRuntime.success(pace_ms=50))
    assert result.status is CheckStatus.PASSED, result.message


@pytest.mark.parametrize("check", check_names())
def test_a_tool_calling_runtime_passes_every_check_with_the_tool_call_probe(check: str) -> None:
    result = run_check(
        check,
        lambda: ScriptedRuntime([ScriptedSuccess()], tool_calling=True),
        failures=failure_cases(),
    )
    if result.status is CheckStatus.NOT_APPLICABLE:
        assert check in (
            "streaming.default_projection",
            "secrets.not_exposed",
            "streaming.deltas_match_output",
        ), result.message
        return
    assert result.status is CheckStatus.PASSED, result.message
