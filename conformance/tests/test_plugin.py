"""The pytest plugin: one fixture in, one test per check out."""

from __future__ import annotations

import pytest

from templiqx_conformance import check_names

FIXTURE_SUITE = len(check_names())
OPENAI_SUITE = len(check_names("openai"))


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
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    # no failure cases: failure.projection does not apply; the example overrides streaming.
    result.assert_outcomes(passed=FIXTURE_SUITE - 2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*streaming.default_projection does not apply*",
            "*failure.projection does not apply: no failure cases were supplied*",
        ]
    )
    listed = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    listed.stdout.fnmatch_lines(["conftest.py::templiqx-conformance::descriptor.well_formed"])


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
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "failure")
    result.assert_outcomes(passed=1)


def test_a_broken_adapter_fails_the_matching_test_with_its_message(
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
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=FIXTURE_SUITE - 2 + 1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*exactly one terminal event*",
            "FAILED test_kit.py::templiqx-conformance::streaming.event_order*",
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
    listed = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    listed.stdout.fnmatch_lines(
        ["conftest.py::templiqx-conformance-openai::transport.fault_matrix"]
    )
    listed.stdout.fnmatch_lines([f"{OPENAI_SUITE} tests collected*"])
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-k", "request_shape or tool_calls"
    )
    result.assert_outcomes(passed=2)


def test_a_target_for_the_wrong_suite_is_an_error(pytester: pytest.Pytester) -> None:
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
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "well_formed")
    result.assert_outcomes(errors=0, failed=2)
    result.stdout.fnmatch_lines(["*returned a target with transport='openai'*"])


def test_files_without_the_fixture_are_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import pytest\n")
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
