"""Renderers of the contract operations: inspect, put, delete, validate, diff, explain."""

from __future__ import annotations

import re
from typing import Any

from templiqx_cli.human.base import Renderer, View
from templiqx_cli.human.blocks import count, listing, table

__all__ = ["RENDERERS", "schema_type"]


def schema_type(schema: Any) -> str:
    """A JSON Schema's shape in a word or two: ``string``, ``integer|null``, ``enum``, ``any``."""
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if "enum" in schema:
        return "enum"
    return "any"


def _identity(summary: Any) -> str:
    """``id version`` of a contract summary."""
    if not isinstance(summary, dict):
        return ""
    return f"{summary.get('id', '')} {summary.get('version', '')}".strip()


class InspectRenderer(Renderer):
    """The loaded contract, field by field; ``--json`` has all of it."""

    def summary(self, view: View) -> str:
        return f"contract {view.style.name(_identity(view.result))}"

    def body(self, view: View) -> list[str]:
        contract: dict[str, Any] = view.result or {}
        style = view.style
        lines = []
        if contract.get("description"):
            lines.append(f"description: {contract['description']}")
        for section in ("inputs", "context"):
            fields: dict[str, Any] = contract.get(section) or {}
            if not fields:
                lines.append(f"{section}: {style.dim('none')}")
                continue
            lines.append(f"{section}:")
            rows = [
                [
                    name,
                    "yes" if spec.get("required") else "no",
                    schema_type(spec.get("schema")),
                    str(spec.get("description") or ""),
                ]
                for name, spec in fields.items()
            ]
            lines.extend(
                "  " + row
                for row in table(["name", "required", "type", "description"], rows, style)
            )
        messages = contract.get("messages") or []
        roles = [
            f"{m.get('role')} ({count(len(m.get('content') or []), 'node')})" for m in messages
        ]
        lines.append(f"capabilities: {listing(contract.get('capabilities') or [], style)}")
        lines.append(f"messages: {', '.join(roles) if roles else style.dim('none')}")
        lines.append(f"output schema: {schema_type(contract.get('output_schema'))}")
        for name in ("extensions", "components"):
            lines.append(f"{name}: {listing(list(contract.get(name) or {}), style)}")
        evals = [str(e.get("id", "")) for e in contract.get("evals") or []]
        lines.append(f"evals: {listing(evals, style)}")
        return lines


class PutRenderer(Renderer):
    def summary(self, view: View) -> str:
        return f"contract {view.style.name(_identity(view.result))} stored"

    def body(self, view: View) -> list[str]:
        return []


class DeleteRenderer(Renderer):
    def summary(self, view: View) -> str:
        return f"contract {view.style.name(_identity(view.result))} deleted"

    def body(self, view: View) -> list[str]:
        return []


class ValidateContractRenderer(Renderer):
    def summary(self, view: View) -> str:
        return f"valid ({_identity(view.result)})"

    def body(self, view: View) -> list[str]:
        return []


class ValidatePackageRenderer(Renderer):
    """Every contract of the package with its fingerprint; when the package is not valid, a
    status column saying which contracts have errors (and rows for those that did not load)."""

    def summary(self, view: View) -> str:
        return f"{count(len(view.result or []), 'contract')} valid"

    def body(self, view: View) -> list[str]:
        contracts = [c for c in view.result or [] if isinstance(c, dict)]
        if view.ok:
            rows = [
                [str(c.get("id", "")), str(c.get("version", "")), str(c.get("fingerprint", ""))]
                for c in contracts
            ]
            return table(["contract", "version", "fingerprint"], rows, view.style)
        errors = _errors_by_contract(view)
        files = _file_names(view)
        rows = []
        for c in contracts:
            found = errors.pop(files.get(str(c.get("id", "")), str(c.get("id", ""))), 0)
            rows.append(
                [
                    str(c.get("id", "")),
                    _status(found, loaded=True),
                    str(c.get("version", "")),
                    str(c.get("fingerprint", "")),
                ]
            )
        rows.extend(
            [name, _status(found, loaded=False), "-", "-"] for name, found in errors.items()
        )
        return table(["contract", "status", "version", "fingerprint"], rows, view.style)


def _errors_by_contract(view: View) -> dict[str, int]:
    """Error diagnostics per contract id, by the contract file they are about."""
    prefix = f"{view.argument('package')}/contracts/"
    counts: dict[str, int] = {}
    for diagnostic in view.diagnostics:
        file = diagnostic.file or ""
        if diagnostic.severity == "error" and file.startswith(prefix) and file.endswith(".yaml"):
            name = file[len(prefix) : -len(".yaml")]
            counts[name] = counts.get(name, 0) + 1
    return counts


_MISNAMED = re.compile(r"^contract id '(.+)' does not match its file name contracts/(.+)\.yaml")


def _file_names(view: View) -> dict[str, str]:
    """Contract id -> the file it is in, for a contract whose id is not its file name."""
    names: dict[str, str] = {}
    for diagnostic in view.diagnostics:
        if diagnostic.code == "TQX_CONTRACT_INVENTORY_ID":
            match = _MISNAMED.match(diagnostic.message)
            if match is not None:
                names[match.group(1)] = match.group(2)
    return names


def _status(errors: int, *, loaded: bool) -> str:
    if not errors:
        return "valid"
    return count(errors, "error") + ("" if loaded else " (does not load)")


class DiffRenderer(Renderer):
    """Equal, or the top-level parts that differ."""

    def subject(self, view: View) -> str:
        left = f"{view.argument('left_package')}/{view.argument('left_contract')}"
        right = f"{view.argument('right_package')}/{view.argument('right_contract')}"
        return f"{left} {right}"

    def summary(self, view: View) -> str:
        diff = view.result or {}
        if diff.get("equal"):
            return "equal"
        return f"{count(len(diff.get('changes') or []), 'part')} differ"

    def body(self, view: View) -> list[str]:
        diff = view.result or {}
        lines = [
            f"left   {view.style.dim(str(diff.get('left_fingerprint', '')))}",
            f"right  {view.style.dim(str(diff.get('right_fingerprint', '')))}",
        ]
        if diff.get("changes"):
            lines.append(f"changed: {listing(diff['changes'], view.style)}")
        return lines


class ExplainRenderer(Renderer):
    """What the contract needs, and how to fix what it cannot resolve."""

    def summary(self, view: View) -> str:
        return str((view.result or {}).get("summary") or "explained")

    def body(self, view: View) -> list[str]:
        explanation: dict[str, Any] = view.result or {}
        style = view.style
        lines = [
            f"{name.replace('_', ' ')}: {listing(explanation.get(name) or [], style)}"
            for name in ("inputs", "context", "capabilities", "components")
        ]
        unresolved = explanation.get("unresolved_references") or []
        if unresolved:
            lines.append(f"unresolved references: {style.bad(', '.join(unresolved))}")
        hints = explanation.get("fix_hints") or []
        if hints:
            lines.append("fix hints:")
            lines.extend(f"  - {hint}" for hint in hints)
        return lines


RENDERERS: dict[str, Renderer] = {
    "inspect_contract": InspectRenderer(),
    "put_contract": PutRenderer(),
    "delete_contract": DeleteRenderer(),
    "validate_contract": ValidateContractRenderer(),
    "validate_package": ValidatePackageRenderer(),
    "diff_contract": DiffRenderer(),
    "explain_contract": ExplainRenderer(),
}
