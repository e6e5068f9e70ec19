"""The pytest plugin (registered under the ``pytest11`` entry point, so it loads by itself).

Define one fixture and run ``pytest``; the plugin adds one test per check beside it:

* ``templiqx_adapter_factory`` returns a zero-argument adapter factory (fixture suite), or an
  :class:`~templiqx_conformance.AdapterTarget`;
* ``templiqx_openai_adapter_factory`` returns a factory that receives the loopback server's base
  URL (the OpenAI transport suite, which also runs every port check);
* ``templiqx_failure_cases`` (optional) returns the :class:`~templiqx_conformance.FailureCase`
  values the adapter can be driven into.

The factory fixture may live in a ``conftest.py`` (the tests appear under it, e.g.
``tests/conftest.py::templiqx-conformance::receipt.output_fingerprint``) or in a test module.
A check that does not apply to the adapter is reported as skipped, with the reason.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from templiqx_conformance.report import CheckStatus
from templiqx_conformance.runner import check_names, run_check
from templiqx_conformance.target import AdapterTarget, FailureCase, TargetError

__all__ = [
    "FAILURES_FIXTURE",
    "FIXTURE_SUITE",
    "OPENAI_SUITE",
    "templiqx_failure_cases",
]

FIXTURE_SUITE = "templiqx_adapter_factory"
OPENAI_SUITE = "templiqx_openai_adapter_factory"
FAILURES_FIXTURE = "templiqx_failure_cases"
_SUITES = {FIXTURE_SUITE: None, OPENAI_SUITE: "openai"}
_COLLECTOR_NAME = {
    FIXTURE_SUITE: "templiqx-conformance",
    OPENAI_SUITE: "templiqx-conformance-openai",
}


@pytest.fixture
def templiqx_failure_cases() -> list[FailureCase]:
    """The failures the adapter can be driven into (none unless a conftest overrides this)."""
    return []


def _target(factory: Any, transport: str | None, failures: Any) -> AdapterTarget:
    cases = list(failures or [])
    if isinstance(factory, AdapterTarget):
        if factory.transport != transport:
            raise TargetError(
                f"the {FIXTURE_SUITE if transport is None else OPENAI_SUITE} fixture returned a "
                f"target with transport={factory.transport!r}"
            )
        return AdapterTarget(
            factory=factory.factory,
            transport=transport,
            failures=(*factory.failures, *cases),
            call_timeout=factory.call_timeout,
        )
    return AdapterTarget(factory=factory, transport=transport, failures=tuple(cases))


def _check_function(name: str, fixture: str) -> Callable[..., None]:
    transport = _SUITES[fixture]

    def check(request: pytest.FixtureRequest) -> None:
        factory = request.getfixturevalue(fixture)
        failures = request.getfixturevalue(FAILURES_FIXTURE)
        result = run_check(name, _target(factory, transport, failures))
        if result.status is CheckStatus.FAILED:
            pytest.fail(f"{name}: {result.message}", pytrace=False)
        if result.status is CheckStatus.NOT_APPLICABLE:
            pytest.skip(f"{name} does not apply: {result.message}")

    check.__doc__ = f"templiqx conformance check {name}"
    return check


class ConformanceSuite(pytest.Collector):
    """One test per check of the suite that ``fixture`` selects."""

    fixture: str = FIXTURE_SUITE

    def collect(self) -> Iterator[pytest.Item]:
        for name in check_names(_SUITES[self.fixture]):
            yield pytest.Function.from_parent(
                self, name=name, callobj=_check_function(name, self.fixture)
            )


def _suite(parent: pytest.Collector, fixture: str) -> ConformanceSuite:
    suite: ConformanceSuite = ConformanceSuite.from_parent(parent, name=_COLLECTOR_NAME[fixture])
    suite.fixture = fixture
    return suite


class ConftestSuites(pytest.File):
    """The suites whose factory fixture a ``conftest.py`` defines."""

    fixtures: tuple[str, ...] = ()

    def collect(self) -> Iterator[pytest.Collector]:
        for fixture in self.fixtures:
            yield _suite(self, fixture)


def _defined_fixtures(path: Path) -> tuple[str, ...]:
    try:
        source = path.read_text(encoding="utf-8")
    except OSError:
        return ()
    if FIXTURE_SUITE not in source and OPENAI_SUITE not in source:
        return ()
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError:
        return ()
    names = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _SUITES
    }
    return tuple(fixture for fixture in _SUITES if fixture in names)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect the conformance suites of a ``conftest.py`` that defines a factory fixture."""
    if file_path.name != "conftest.py":
        return None
    fixtures = _defined_fixtures(file_path)
    if not fixtures:
        return None
    collector: ConftestSuites = ConftestSuites.from_parent(parent, path=file_path)
    collector.fixtures = fixtures
    return collector


def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> pytest.Collector | None:
    """Add the suite beside a factory fixture defined in a test module."""
    if name in _SUITES and isinstance(collector, pytest.Module):
        return _suite(collector, name)
    return None
