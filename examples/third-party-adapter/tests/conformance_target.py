"""The conformance target of the echo runtime: its factory and the failures it can be driven into.

Used by ``conftest.py`` (the pytest plugin) and by the command:
``templiqx-conformance run conformance_target:target`` (run from this folder).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from acme_echo import EchoRuntime

from templiqx_conformance import AdapterTarget, FailureCase, without_fixture_output
from templiqx_ports import RuntimeFailureCode

DRIVABLE_CODES = (
    RuntimeFailureCode.TIMEOUT,
    RuntimeFailureCode.RATE_LIMITED,
    RuntimeFailureCode.UNAVAILABLE,
    RuntimeFailureCode.INVALID_RESPONSE,
    RuntimeFailureCode.PERMANENT,
)


def failure_cases(runtime: Callable[..., EchoRuntime] = EchoRuntime) -> list[FailureCase]:
    """One case per runtime failure code, plus the missing-fixture refusal."""
    cases = [
        FailureCase(code=code.value, factory=functools.partial(runtime, fail_with=code))
        for code in DRIVABLE_CODES
    ]
    cases.append(
        FailureCase(
            code="TQX_DATA_INVALID",
            factory=runtime,
            name="missing fixture_output",
            prepare=without_fixture_output,
        )
    )
    return cases


target = AdapterTarget(factory=EchoRuntime, failures=failure_cases())
