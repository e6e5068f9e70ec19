"""The pytest plugin: one fixture in, one test per check out."""

from __future__ import annotations

import pytest

from templiqx_conformance import check_names

FIXTURE_SUITE = len(check_names())
OPENAI_SUITE = len(check_names("openai"))
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:anyio")


def test_a_conftest_fixture_yields_one_test_per_check(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from acme_echo import EchoRuntime

        @pytest.fixture
        def templiqx_adapter_factory():
            return EchoRuntime
        """
    )
    result = pytester.runpytest_inprocess(*QUIET, "-v", "-rs")
    # Without failure cases the kit drives its own failure after deltas (the token set at the
    # first delta), so failure.projection passes; the example holds no credential (secrets
    # skipped), declares no tool_calling (tools.declared_calls skipped) and streams
    # (default_projection skipped).
    result.assert_outcomes(passed=FIXTURE_SUITE - 3, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "conftest.py::templiqx-conformance::descriptor.well_formed PASSED*",
            "conftest.py::templiqx-conformance::failure.projection PASSED*",
            "*streaming.default_projection does not apply*",
            "*secrets.not_exposed does not apply: no secret to look for*",
            "*tools.declared_calls does not apply: the adapter does not declare 'tool_calling'*",
        ]
    )


def test_failure_cases_come_from_their_own_fixture(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from acme_echo import EchoRuntime
        from conformance_target import failure_cases

        @pytest.fixture
        def templiqx_adapter_factory():
            return EchoRuntime

        @pytest.fixture
        def templiqx_failure_cases():
            return failure_cases()
        """
    )
    result = pytester.runpytest_inprocess(*QUIET, "-k", "failure")
    result.assert_outcomes(passed=1)


def test_a_broken_adapter_in_a_test_module_fails_its_test_with_the_message(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_kit="""
        import pytest
        from variants import two_terminals_target

        @pytest.fixture
        def templiqx_adapter_factory():
            return two_terminals_target

        def test_own():
            pass
        """
    )
    result = pytester.runpytest_inprocess(*QUIET, "-rfs")
    # One bug, one failure: the checks building on the stream order are not run.
    not_run = [
        "streaming.complete_matches_execute",
        "streaming.deltas_match_output",
        "failure.projection",
        "cancellation.token",
        "tools.declared_calls",
    ]
    result.assert_outcomes(passed=FIXTURE_SUITE - 3 - len(not_run) + 1, failed=1, skipped=7)
    result.stdout.fnmatch_lines(
        [
            "*exactly one terminal event*",
            "*templiqx conformance: fix first*",
            "test_kit.py::templiqx-conformance::streaming.event_order: structured-valid: stream "
            "has 2 terminal events*",
            "FAILED test_kit.py::templiqx-conformance::streaming.event_order*",
            "*streaming.complete_matches_execute: not run: depends on streaming.event_order, "
            "which failed; fix streaming.event_order first*",
            "*cancellation.token: not run: depends on failure.projection, not run either; fix "
            "streaming.event_order first*",
        ]
    )


def test_the_openai_fixture_selects_the_transport_suite(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from support.mini_openai import MiniOpenAI

        @pytest.fixture
        def templiqx_openai_adapter_factory():
            return MiniOpenAI
        """
    )
    result = pytester.runpytest_inprocess(*QUIET, "-v", "-k", "request_shape or tool_calls")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            f"*collected {OPENAI_SUITE} items / {OPENAI_SUITE - 2} deselected / 2 selected",
            "conftest.py::templiqx-conformance-openai::transport.request_shape PASSED*",
        ]
    )


def test_a_target_for_the_wrong_suite_fails_and_plain_files_are_left_alone(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest
        from support.mini_openai import MiniOpenAI
        from templiqx_conformance import AdapterTarget

        @pytest.fixture
        def templiqx_adapter_factory():
            return AdapterTarget(factory=MiniOpenAI, transport="openai")
        """
    )
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_inprocess(*QUIET, "-k", "well_formed or test_one")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*returned a target with transport='openai'*"])
