"""The pytest plugin (registered under the ``pytest11`` entry point, so it loads by itself).

Define one fixture and run ``pytest``; the plugin adds one test per check beside it:

* ``templiqx_adapter_factory`` returns a zero-argument adapter factory (fixture suite), or an
  :class:`~templiqx_conformance.AdapterTarget`;
* ``templiqx_openai_adapter_factory`` returns a factory that receives the loopback server's base
  URL (the OpenAI transport suite, which also runs every port check);
* ``templiqx_wire_adapter_factory`` does the same for any other HTTP provider, whose
  :class:`~templiqx_conformance.Wire` the ``templiqx_wire`` fixture returns;
* ``templiqx_failure_cases``, ``templiqx_secrets`` and ``templiqx_recordings`` (optional) return
  the :class:`~templiqx_conformance.FailureCase` values the adapter can be driven into, the
  credentials it holds, and the :class:`~templiqx_conformance.Recording` values to replay.

A factory that accepts a keyword argument ``api_key`` receives the kit's marker credential.

The factory fixture may live in a ``conftest.py`` (the tests appear under it, e.g.
``tests/conftest.py::templiqx-conformance::receipt.output_fingerprint``) or in a test module.
A check that does not apply to the adapter is reported as skipped, with the reason; so is a
check that was not run because one it builds on failed earlier in the session (the terminal
summary then names the failure to fix first).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from templiqx_conformance.errors import TargetError
from templiqx_conformance.report import CheckResult, CheckStatus
from templiqx_conformance.runner import checks_for, make_rig, run_one
from templiqx_conformance.target import AdapterTarget, FailureCase
from templiqx_conformance.wires.wire import Recording, Wire

__all__ = [
    "FAILURES_FIXTURE",
    "FIXTURE_SUITE",
    "OPENAI_SUITE",
    "RECORDINGS_FIXTURE",
    "SECRETS_FIXTURE",
    "WIRE_FIXTURE",
    "WIRE_SUITE",
    "templiqx_failure_cases",
    "templiqx_recordings",
    "templiqx_secrets",
    "templiqx_wire",
]

FIXTURE_SUITE = "templiqx_adapter_factory"
OPENAI_SUITE = "templiqx_openai_adapter_factory"
WIRE_SUITE = "templiqx_wire_adapter_factory"
FAILURES_FIXTURE = "templiqx_failure_cases"
SECRETS_FIXTURE = "templiqx_secrets"
RECORDINGS_FIXTURE = "templiqx_recordings"
WIRE_FIXTURE = "templiqx_wire"
_SUITES: dict[str, str | None] = {FIXTURE_SUITE: None, OPENAI_SUITE: "openai", WIRE_SUITE: "wire"}
_ROOTS = pytest.StashKey[list[tuple[str, CheckResult]]]()
_COLLECTOR_NAME = {
    FIXTURE_SUITE: "templiqx-conformance",
    OPENAI_SUITE: "templiqx-conformance-openai",
    WIRE_SUITE: "templiqx-conformance-wire",
}


@pytest.fixture
def templiqx_failure_cases() -> list[FailureCase]:
    """The failures the adapter can be driven into (none unless a conftest overrides this)."""
    return []


@pytest.fixture
def templiqx_secrets() -> list[str]:
    """Credentials the adapter holds, never to be exposed (none unless overridden)."""
    return []


@pytest.fixture
def templiqx_recordings() -> list[Recording]:
    """Provider responses to replay through the wire suite (none unless overridden)."""
    return []


@pytest.fixture
def templiqx_wire() -> Wire:
    """The provider's :class:`~templiqx_conformance.Wire`: a conftest beside a
    ``templiqx_wire_adapter_factory`` must define it."""
    raise TargetError(
        f"{WIRE_SUITE} needs a {WIRE_FIXTURE} fixture returning the provider's Wire "
        "(or a registered transport name)"
    )


def _target(factory: Any, fixture: str, request: pytest.FixtureRequest) -> AdapterTarget:
    suite = _SUITES[fixture]
    transport: str | Wire | None = suite
    if suite == "wire":
        transport = request.getfixturevalue(WIRE_FIXTURE)
    extra: dict[str, Any] = {
        "failures": tuple(request.getfixturevalue(FAILURES_FIXTURE) or ()),
        "secrets": tuple(request.getfixturevalue(SECRETS_FIXTURE) or ()),
    }
    if transport is not None:
        extra["recordings"] = tuple(request.getfixturevalue(RECORDINGS_FIXTURE) or ())
    if isinstance(factory, AdapterTarget):
        if (factory.transport is None) != (transport is None):
            raise TargetError(
                f"the {fixture} fixture returned a target with transport={factory.transport!r}"
            )
        return replace(
            factory,
            transport=factory.transport if factory.transport is not None else transport,
            failures=(*factory.failures, *extra["failures"]),
            secrets=(*factory.secrets, *extra["secrets"]),
            recordings=(*factory.recordings, *extra.get("recordings", ())),
        )
    return AdapterTarget(factory=factory, transport=transport, **extra)


def _check_function(name: str, suite: ConformanceSuite) -> Callable[..., None]:
    def check(request: pytest.FixtureRequest) -> None:
        fixture = suite.fixture
        factory = request.getfixturevalue(fixture)
        target = _target(factory, fixture, request)
        by_name = {c.name: c for c in checks_for(target.transport)}
        rig = make_rig(target)
        try:
            result = run_one(by_name[name], rig, suite.results)
        finally:
            rig.close()
        suite.results[name] = result
        if result.status is CheckStatus.FAILED:
            roots = request.config.stash.setdefault(_ROOTS, [])
            if not any(parent == suite.nodeid for parent, _ in roots):
                roots.append((suite.nodeid, result))
            pytest.fail(f"{name}: {result.message}", pytrace=False)
        if result.status is CheckStatus.NOT_APPLICABLE:
            pytest.skip(f"{name} does not apply: {result.message}")
        if result.status is CheckStatus.NOT_RUN:
            pytest.skip(f"{name}: {result.message}")

    check.__doc__ = f"templiqx conformance check {name}"
    return check


class ConformanceSuite(pytest.Collector):
    """One test per check of the suite that ``fixture`` selects; results are kept so that a
    check whose dependency failed earlier in the session is not run."""

    fixture: str = FIXTURE_SUITE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results: dict[str, CheckResult] = {}

    def collect(self) -> Iterator[pytest.Item]:
        for check in checks_for(_SUITES[self.fixture]):
            yield pytest.Function.from_parent(
                self, name=check.name, callobj=_check_function(check.name, self)
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
    if not any(fixture in source for fixture in _SUITES):
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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Lead with the first failed check of each suite: the root cause to fix first."""
    roots = terminalreporter.config.stash.get(_ROOTS, [])
    if not roots:
        return
    terminalreporter.section("templiqx conformance: fix first")
    for suite, result in roots:
        terminalreporter.line(f"{suite}::{result.name}: {result.headline}")


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
