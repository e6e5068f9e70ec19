"""The type of each operation's ``result``: what an envelope carries when it has one.

Surfaces that describe their answers (the MCP tools' output schemas, the HTTP API's OpenAPI
document) generate the result schemas from these types, so they follow the DTOs exactly.
"""

from __future__ import annotations

from typing import Any, Final

from templiqx_application.catalog import OperationSpec
from templiqx_contracts import (
    ArtifactContent,
    CompiledInteraction,
    CompiledMessage,
    Contract,
    ContractDiff,
    ContractSummary,
    EvalCase,
    ExecutionReceipt,
    Explanation,
    PackageIdentity,
    PackageManifest,
    PackageTrustReport,
    TestCaseResult,
    TestReport,
    WorkspaceArtifact,
)

__all__ = ["RESULT_TYPES", "STREAMING"]

RESULT_TYPES: Final[dict[str, Any]] = {
    "catalog": list[OperationSpec | str],  # view=full: the specs; view=names: the names
    "discover_packages": list[PackageManifest],
    "create_package": PackageManifest,
    "update_package": PackageManifest,
    "delete_package": PackageManifest,
    "export_package_identity": PackageIdentity,
    "sign_package": PackageManifest,
    "verify_package_trust": PackageTrustReport,
    "inspect_contract": Contract,
    "put_contract": ContractSummary,
    "delete_contract": ContractSummary,
    "validate_contract": ContractSummary,
    "validate_package": list[ContractSummary],
    "compile_contract": CompiledInteraction,
    "render_contract": list[CompiledMessage],
    "execute_contract": ExecutionReceipt,
    "list_workspace_artifacts": list[WorkspaceArtifact],
    "read_artifact": ArtifactContent,
    "delete_workspace_artifact": WorkspaceArtifact,
    "test_package": TestReport,
    "list_evals": list[EvalCase],
    "run_eval": TestCaseResult,
    "diff_contract": ContractDiff,
    "explain_contract": Explanation,
}
"""Operation name -> the type of its envelope's ``result``."""

STREAMING: Final = frozenset({"execute_contract"})
"""The operations whose envelopes may carry ``stream_events``."""
