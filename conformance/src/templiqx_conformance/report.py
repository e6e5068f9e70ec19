"""What a conformance run produces: one result per named check, and a report that is JSON-able.

A check *passes*, *fails* (its message names the broken invariant, says what was seen and what to
change), is *not applicable* to the adapter under test (its message says why: the port exempts
it, or the kit could not exercise it — never a pass), or is *not run* because a check it builds
on failed (its message names that check): one bug, one failure.
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
    NOT_RUN = "not_run"


class CheckResult(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """The outcome of one named check.

    ``invariant`` states what the check proves. ``message`` is empty when the check passed; when
    it failed it names the broken invariant, what the kit observed and what to change; when it
    does not apply it says why; when it was not run it names the failed check it depends on.
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

    @property
    def headline(self) -> str:
        """The message's most specific line: its first problem (what was seen, what to change),
        or its only line."""
        lines = self.message.splitlines()
        problems = [line.strip() for line in lines[1:] if line.startswith("  ")]
        return problems[0] if problems else (lines[0] if lines else "")


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
        """The checks that failed, in run order (the first is the root cause to fix first)."""
        return [check for check in self.checks if check.failed]

    @property
    def root_cause(self) -> CheckResult | None:
        """The first failed check: fix it first (checks depending on it were not run)."""
        failed = self.failed_checks
        return failed[0] if failed else None

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
    CheckStatus.NOT_RUN: "----",
}


def render_table(report: ConformanceReport) -> str:
    """A plain-text table for people: the first failure's first line (the root cause) on top,
    then one row per check with failure messages and reasons indented under it, then a summary.
    """
    adapter = (
        f"{report.adapter.id} {report.adapter.version}"
        if report.adapter is not None
        else "(descriptor unavailable)"
    )
    suite = f" over the {report.transport} transport" if report.transport else ""
    lines = [f"templiqx conformance {report.kit_version}: {adapter}{suite}", ""]
    root = report.root_cause
    if root is not None:
        lines += [f"fix first: {root.name}: {root.headline}", ""]
    width = max((len(check.name) for check in report.checks), default=10)
    for check in report.checks:
        label = _STATUS_LABEL[check.status]
        lines.append(f"  {label:<4}  {check.name:<{width}}  {check.invariant}")
        if check.message and check.status is not CheckStatus.PASSED:
            for text in check.message.splitlines():
                lines.append(f"        {'':<{width}}  {text}")
    count = dict.fromkeys(CheckStatus, 0)
    for check in report.checks:
        count[check.status] += 1
    lines.append("")
    verdict = "conformant" if report.ok else "NOT conformant"
    parts = [
        f"{count[CheckStatus.PASSED]} passed",
        f"{count[CheckStatus.FAILED]} failed",
        f"{count[CheckStatus.NOT_APPLICABLE]} not applicable",
    ]
    if count[CheckStatus.NOT_RUN]:
        parts.append(f"{count[CheckStatus.NOT_RUN]} not run")
    lines.append(f"{', '.join(parts)}: {verdict}")
    return "\n".join(lines) + "\n"
