"""The reliability suites (issue #9): counts, the figures table and shared fixtures.

Each ``test_rN_*.py`` module measures suite ``RN``; the measured figures are printed as a table
at the end of the session (and written as JSON to ``$TEMPLIQX_RELIABILITY_REPORT`` when set).
A suite whose tests fail is reported as not met, whatever its counters say, and a figure that
is not met fails the pytest session (exit status 1) even when every test passed — unless the run
was narrowed on purpose (``-k``, ``-m``, a node id, or deselected tests), where partial counts
are expected and the table only reports them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import reliability_kit as kit

_SUITE = re.compile(r"test_(r\d+)_")


def _suite_of(nodeid: str) -> str | None:
    match = _SUITE.search(nodeid.split("::", 1)[0].rsplit("/", 1)[-1])
    return match.group(1).upper() if match else None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    suite = _suite_of(report.nodeid)
    if suite is None:
        return
    if report.when == "call" and report.passed:
        kit.FIGURES.ran_suites.add(suite)
    if report.failed:
        kit.FIGURES.ran_suites.add(suite)
        kit.FIGURES.failed_suites.add(suite)


_NARROWED: list[str] = []


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        _NARROWED.append(f"{len(items)} test(s) deselected")


def _narrowed(config: pytest.Config) -> list[str]:
    reasons = list(_NARROWED)
    if config.getoption("keyword", default=""):
        reasons.append("-k given")
    if config.getoption("markexpr", default=""):
        reasons.append("-m given")
    if any("::" in arg for arg in config.args):
        reasons.append("a node id selected")
    return reasons


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A missed figure fails the session, so "every figure met" is checked, not only printed."""
    figures = kit.FIGURES
    if not figures.values or figures.all_met() or _narrowed(session.config):
        return
    if exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    figures = kit.FIGURES
    if not figures.values and not figures.failed_suites:
        return
    terminalreporter.section("templiqx reliability figures (issue #9)")
    for line in figures.table().splitlines():
        terminalreporter.write_line(line)
    narrowed = _narrowed(terminalreporter.config)
    if not figures.all_met():
        if narrowed:
            terminalreporter.write_line(
                f"figures not enforced: the run was narrowed ({'; '.join(narrowed)})"
            )
        else:
            terminalreporter.write_line("a figure was missed: the session fails")
    report = os.environ.get(kit.REPORT_ENV)
    if report:
        figures.write_json(Path(report))
        terminalreporter.write_line(f"figures written to {report}")


@pytest.fixture(scope="session")
def figures() -> kit.Figures:
    """The session's figures (see :mod:`reliability_kit`)."""
    return kit.FIGURES
