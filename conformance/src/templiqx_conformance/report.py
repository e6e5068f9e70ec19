"""What a conformance run produces: one result per named check, and a report that is JSON-able.

A check *passes*, *fails* (its message names the broken invariant and says what was seen), or is
*not applicable* to the adapter under test (its message says why, e.g. an adapter that keeps the
port's default ``execute_streaming`` is not asked to honour cancellation).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from templiqx_contracts import AdapterDescriptor

__all__ = [
    "REPORT_API_VERSION",
    "CheckResult",
    "CheckStatus",
    "ConformanceReport",
    "render_table",
]

REPORT_API_VERSION = "templiqx.conformance-report/v1"
"""The ``api_version`` of every :class:`ConformanceReport`."""


class CheckStatus(StrEnum):
    """The outcome of one check."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "not_applicable"


class CheckResult(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """The outcome of one named check.

    ``invariant`` states what the check proves. ``message`` is empty when the check passed; when
    it failed it names the broken invariant and what the kit observed; when it does not apply it
    says why.
    """

    name: str
    invariant: str
    status: CheckStatus
    message: str = ""
    duration_ms: int = 0

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.status is CheckStatus.PASSED

    @property
    def failed(self) -> bool:
        """Whether the check failed."""
        return self.status is CheckStatus.FAILED


class ConformanceReport(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Every check of one run against one adapter.

    ``adapter`` is the descriptor the adapter reported (``None`` when ``descriptor()`` itself
    failed). ``transport`` names the wire when the transport suite ran, else ``None``. ``ok`` is
    true when no check failed.
    """

    api_version: str
    kit_version: str
    adapter: AdapterDescriptor | None
    transport: str | None
    ok: bool
    checks: list[CheckResult]

    @property
    def failed_checks(self) -> list[CheckResult]:
        """The checks that failed, in run order."""
        return [check for check in self.checks if check.failed]

    def check(self, name: str) -> CheckResult:
        """The result of the check called ``name`` (``KeyError`` when it did not run)."""
        for result in self.checks:
            if result.name == name:
                return result
        raise KeyError(name)

    def to_json(self) -> bytes:
        """The report as compact JSON (fields in declaration order)."""
        return msgspec.json.encode(self)


_STATUS_LABEL = {
    CheckStatus.PASSED: "PASS",
    CheckStatus.FAILED: "FAIL",
    CheckStatus.NOT_APPLICABLE: "N/A",
}


def render_table(report: ConformanceReport) -> str:
    """A plain-text pass/fail table for people, one row per check, then a summary line.

    Failure messages and not-applicable reasons are printed indented under their row.
    """
    adapter = (
        f"{report.adapter.id} {report.adapter.version}"
        if report.adapter is not None
        else "(descriptor unavailable)"
    )
    suite = f" over the {report.transport} transport" if report.transport else ""
    lines = [f"templiqx conformance {report.kit_version}: {adapter}{suite}", ""]
    width = max((len(check.name) for check in report.checks), default=10)
    for check in report.checks:
        label = _STATUS_LABEL[check.status]
        lines.append(f"  {label:<4}  {check.name:<{width}}  {check.invariant}")
        if check.message and check.status is not CheckStatus.PASSED:
            for text in check.message.splitlines():
                lines.append(f"        {'':<{width}}  {text}")
    passed = sum(1 for check in report.checks if check.status is CheckStatus.PASSED)
    failed = sum(1 for check in report.checks if check.status is CheckStatus.FAILED)
    skipped = len(report.checks) - passed - failed
    lines.append("")
    verdict = "conformant" if report.ok else "NOT conformant"
    lines.append(f"{passed} passed, {failed} failed, {skipped} not applicable: {verdict}")
    return "\n".join(lines) + "\n"
