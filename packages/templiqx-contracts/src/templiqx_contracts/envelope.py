"""The envelope model: diagnostics and the operation envelope every surface returns."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from templiqx_contracts.contract import API_VERSION
from templiqx_contracts.quoting import bound_text
from templiqx_contracts.runtime import StreamEvent, Usage

__all__ = [
    "ArtifactContent",
    "ContentEncoding",
    "ContractDiff",
    "ContractSummary",
    "Diagnostic",
    "EvalCase",
    "Explanation",
    "OperationEnvelope",
    "Severity",
    "SourceSpan",
    "TestCaseResult",
    "TestReport",
    "WorkspaceArtifact",
    "has_errors",
]

Severity: TypeAlias = Literal["error", "warning", "info"]
ContentEncoding: TypeAlias = Literal["utf8", "base64"]


class SourceSpan(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A 1-based source location."""

    line: int
    column: int
    end_line: int
    end_column: int


class Diagnostic(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A problem report with a stable ``TQX_*`` code; optional fields are omitted when absent.

    Text fields longer than :data:`~templiqx_contracts.DIAGNOSTIC_TEXT_LIMIT` characters are cut
    when the diagnostic is built (:func:`~templiqx_contracts.bound_text`).
    """

    code: str
    severity: Severity
    message: str
    file: str | None = None
    json_pointer: str | None = None
    span: SourceSpan | None = None
    help: str | None = None

    def __post_init__(self) -> None:
        # The safety net of the quoting rule: no text field grows with the input it echoes.
        self.message = bound_text(self.message)
        if self.help is not None:
            self.help = bound_text(self.help)
        if self.file is not None:
            self.file = bound_text(self.file)
        if self.json_pointer is not None:
            self.json_pointer = bound_text(self.json_pointer)

    @classmethod
    def error(
        cls,
        code: str,
        message: str,
        json_pointer: str = "",
        *,
        help: str | None = None,
        file: str | None = None,
        span: SourceSpan | None = None,
    ) -> Diagnostic:
        """An error-severity diagnostic; ``json_pointer`` is always present (possibly ``""``)."""
        return cls(
            code=code,
            severity="error",
            message=message,
            file=file,
            json_pointer=json_pointer,
            span=span,
            help=help,
        )

    def render(self) -> str:
        """Human form: ``CODE severity pointer: message`` (no pointer part when there is none),
        then ``at`` and ``help`` lines."""
        pointer = f" {self.json_pointer}" if self.json_pointer else ""
        lines = [f"{self.code} {self.severity}{pointer}: {self.message}"]
        if self.file or self.span is not None:
            where = self.file or ""
            if self.span is not None:
                where += f":{self.span.line}:{self.span.column}"
            lines.append(f"  at {where}")
        if self.help:
            lines.append(f"  help: {self.help}")
        return "\n".join(lines)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    """Whether any diagnostic has error severity."""
    return any(d.severity == "error" for d in diagnostics)


class OperationEnvelope(
    msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """The result of one catalog operation, identical across Python, CLI and MCP.

    ``ok`` is true iff no diagnostic has error severity; ``result`` is omitted when absent,
    ``stream_events`` when empty and ``usage`` (the tokens a model execution cost, when its
    runtime reports them) when unknown; ``diagnostics`` and ``fingerprints`` are always present.
    """

    api_version: str
    operation: str
    ok: bool
    result: Any | UnsetType = UNSET
    diagnostics: list[Diagnostic]
    fingerprints: dict[str, str]
    stream_events: list[StreamEvent] = msgspec.field(default_factory=list)
    usage: Usage | None = None

    @classmethod
    def build(
        cls,
        operation: str,
        *,
        result: Any | UnsetType = UNSET,
        diagnostics: list[Diagnostic] | None = None,
        fingerprints: dict[str, str] | None = None,
        stream_events: list[StreamEvent] | None = None,
        usage: Usage | None = None,
    ) -> OperationEnvelope:
        """An envelope whose ``ok`` is computed from ``diagnostics``."""
        diags = list(diagnostics or [])
        return cls(
            api_version=API_VERSION,
            operation=operation,
            ok=not has_errors(diags),
            result=result,
            diagnostics=diags,
            fingerprints=dict(sorted((fingerprints or {}).items())),
            stream_events=list(stream_events or []),
            usage=usage,
        )

    def to_builtins(self) -> dict[str, Any]:
        """The envelope as plain JSON data (what every surface prints)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


class ContractSummary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A contract's identity and fingerprint."""

    package: str
    id: str
    version: str
    fingerprint: str


class ContractDiff(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Result of ``diff_contract``."""

    equal: bool
    left_fingerprint: str
    right_fingerprint: str
    changes: list[str]


class Explanation(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Result of ``explain_contract``.

    ``tools`` (the declared tool names, in declaration order) is present only for a contract
    that declares tools, so other explanations are unchanged.
    """

    contract_id: str
    summary: str
    inputs: list[str]
    context: list[str]
    capabilities: list[str]
    component_count: int
    components: list[str]
    unresolved_references: list[str]
    fix_hints: list[str]
    tools: list[str] | UnsetType = UNSET


class TestCaseResult(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One eval fixture's outcome; ``artifact_fingerprint`` is ``null`` without a receipt."""

    __test__ = False  # not a pytest test class

    contract_id: str
    fixture_id: str
    passed: bool
    diagnostics: list[Diagnostic]
    artifact_fingerprint: str | None


class TestReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Result of ``test_package``."""

    __test__ = False  # not a pytest test class

    package: str
    passed: int
    failed: int
    cases: list[TestCaseResult]


class EvalCase(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One entry of ``list_evals``: a fixture ``run_eval`` accepts, and the capabilities its
    contract requires (the contract's and its extensions', sorted), which the capabilities
    the eval runs with must include."""

    contract_id: str
    fixture_id: str
    required_capabilities: list[str] = msgspec.field(default_factory=list)


class WorkspaceArtifact(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One entry of ``list_workspace_artifacts``."""

    path: str
    size: int


class ArtifactContent(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Result of ``read_artifact``: text for JSON/YAML/text files that are UTF-8, else base64."""

    path: str
    content_type: str
    content_encoding: ContentEncoding
    content: str
