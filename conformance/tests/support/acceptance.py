"""One bug, one message: the assertion every planted-bug test of issue #27 makes.

A planted bug must make exactly one check of the full suite fail — every other check passes,
does not apply, or is not run because it builds on the failed one — and the report must lead
with that failure, its first problem line naming what to change.
"""

from __future__ import annotations

from templiqx_conformance import CheckStatus, ConformanceReport, render_table


def assert_caught_alone(report: ConformanceReport, check: str, fix: str) -> None:
    """``check`` is the report's only failure and its leading line contains ``fix``."""
    failed = [result.name for result in report.failed_checks]
    assert failed == [check], "\n\n".join(
        f"{result.name}: {result.message}" for result in report.failed_checks
    )
    root = report.root_cause
    assert root is not None
    assert fix in root.headline, root.message
    table = render_table(report)
    assert table.splitlines()[2] == f"fix first: {check}: {root.headline}"
    for result in report.checks:
        if result.status is CheckStatus.NOT_RUN:
            assert result.message.startswith("not run: depends on "), result.message
            assert result.message.endswith(f"fix {check} first"), result.message
