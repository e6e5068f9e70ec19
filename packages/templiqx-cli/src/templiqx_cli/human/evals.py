"""Renderers of the eval operations: ✓/✗ per case, with each failed case's diagnostics."""

from __future__ import annotations

from templiqx_cli.human.base import Renderer, View
from templiqx_cli.human.blocks import count, indented, table
from templiqx_cli.output import render_diagnostic
from templiqx_cli.terminal import terminal_safe
from templiqx_contracts import TestCaseResult, TestReport

__all__ = ["RENDERERS", "case_lines"]


def _cases(view: View) -> list[TestCaseResult]:
    result = view.envelope.result if view.envelope is not None else None
    if isinstance(result, TestReport):
        return list(result.cases)
    return [result] if isinstance(result, TestCaseResult) else []


def case_lines(case: TestCaseResult, view: View) -> list[str]:
    """``✓ contract/fixture``; a failed case also shows its diagnostics, indented."""
    name = f"{case.contract_id}/{case.fixture_id}" if case.fixture_id else case.contract_id
    name = terminal_safe(name)
    lines = [f"{view.style.mark(case.passed)} {name}"]
    if not case.fixture_id and not case.passed:
        lines[0] += " (the contract did not load; its fixtures did not run)"
    for diagnostic in case.diagnostics:
        lines.extend(indented(render_diagnostic(diagnostic, view.files).split("\n"), 2))
    return lines


class PackageTestRenderer(Renderer):
    """Every case of the package, passed or failed."""

    def outcome(self, view: View) -> str:
        report = view.result
        if not isinstance(report, dict):
            return super().outcome(view)
        passed, failed = int(report.get("passed", 0)), int(report.get("failed", 0))
        text = f"{passed} passed, {failed} failed"
        return view.style.bad(text) if failed or not view.ok else view.style.good(text)

    def body(self, view: View) -> list[str]:
        lines: list[str] = []
        for case in _cases(view):
            lines.extend(case_lines(case, view))
        return lines or [view.style.dim("no eval fixtures")]


class RunEvalRenderer(Renderer):
    """The one case."""

    def summary(self, view: View) -> str:
        return view.style.good("passed")

    def outcome(self, view: View) -> str:
        case = view.result
        if isinstance(case, dict) and not case.get("passed"):
            return view.style.bad("failed")
        return super().outcome(view)

    def body(self, view: View) -> list[str]:
        lines: list[str] = []
        for case in _cases(view):
            lines.extend(case_lines(case, view))
        return lines


class ListEvalsRenderer(Renderer):
    def summary(self, view: View) -> str:
        return count(len(view.result or []), "eval fixture")

    def body(self, view: View) -> list[str]:
        rows = [
            [str(case.get("contract_id", "")), str(case.get("fixture_id", ""))]
            for case in view.result or []
        ]
        return table(["contract", "fixture"], rows, view.style)


RENDERERS: dict[str, Renderer] = {
    "test_package": PackageTestRenderer(),
    "run_eval": RunEvalRenderer(),
    "list_evals": ListEvalsRenderer(),
}
