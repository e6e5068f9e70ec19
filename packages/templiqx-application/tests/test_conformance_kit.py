"""The conformance kit's port checks against the deterministic fake runtime (``templiqx.fake``).

Defining ``templiqx_adapter_factory`` is all the kit's pytest plugin needs: it adds one test per
check beside this module. The fake can be driven into one failure: without a fixture output it
refuses with ``TQX_DATA_INVALID``. It keeps the port's default streaming, so the cancellation
check does not apply (DECISIONS 5) and the default-projection check does.
"""

from __future__ import annotations

import pytest

from templiqx_application import DeterministicFakeRuntime
from templiqx_conformance import FailureCase, without_fixture_output


@pytest.fixture
def templiqx_adapter_factory() -> type[DeterministicFakeRuntime]:
    return DeterministicFakeRuntime


@pytest.fixture
def templiqx_failure_cases() -> list[FailureCase]:
    return [
        FailureCase(
            code="TQX_DATA_INVALID",
            factory=DeterministicFakeRuntime,
            name="no fixture_output",
            prepare=without_fixture_output,
        )
    ]
