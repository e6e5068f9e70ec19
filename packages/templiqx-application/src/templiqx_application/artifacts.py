"""Workspace artifacts: list, read and delete (compare-and-swap on the bytes' SHA-256)."""

from __future__ import annotations

import base64

from templiqx_application.context import ServiceContext, envelope, port_failure
from templiqx_contracts import (
    ArtifactContent,
    ContentEncoding,
    OperationEnvelope,
    WorkspaceArtifact,
    fingerprint_bytes,
)
from templiqx_ports import PortError

__all__ = [
    "artifact_content",
    "delete_workspace_artifact",
    "list_workspace_artifacts",
    "read_artifact",
]

_CONTENT_TYPES: dict[str, str] = {
    "json": "application/json",
    "txt": "text/plain",
    "yaml": "application/yaml",
    "yml": "application/yaml",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
_TEXT_EXTENSIONS = frozenset({"json", "txt", "yaml", "yml"})


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def artifact_content(path: str, data: bytes) -> ArtifactContent:
    """Text for UTF-8 JSON/YAML/text files, base64 for everything else."""
    extension = _extension(path)
    content_type = _CONTENT_TYPES.get(extension, "application/octet-stream")
    encoding: ContentEncoding = "base64"
    content: str | None = None
    if extension in _TEXT_EXTENSIONS:
        try:
            content = data.decode("utf-8")
            encoding = "utf8"
        except UnicodeDecodeError:
            content = None
    if content is None:
        content = base64.b64encode(data).decode("ascii")
    return ArtifactContent(
        path=path, content_type=content_type, content_encoding=encoding, content=content
    )


def list_workspace_artifacts(
    ctx: ServiceContext, package: str, workspace: str | None, prefix: str | None
) -> OperationEnvelope:
    """The package's workspace artifacts, sorted by path."""
    operation = "list_workspace_artifacts"
    try:
        artifacts = ctx.workspace.list_artifacts(package, workspace=workspace, prefix=prefix)
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(operation, result=sorted(artifacts, key=lambda artifact: artifact.path))


def read_artifact(
    ctx: ServiceContext, package: str, path: str, workspace: str | None
) -> OperationEnvelope:
    """One artifact's content; fingerprint ``artifact`` (SHA-256 of its bytes)."""
    operation = "read_artifact"
    try:
        data = ctx.workspace.read_artifact(package, path, workspace=workspace)
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(
        operation,
        result=artifact_content(path, data),
        fingerprints={"artifact": fingerprint_bytes(data)},
    )


def delete_workspace_artifact(
    ctx: ServiceContext,
    package: str,
    path: str,
    expected_fingerprint: str,
    workspace: str | None,
) -> OperationEnvelope:
    """Delete an artifact whose bytes still hash to ``expected_fingerprint``."""
    operation = "delete_workspace_artifact"
    try:
        data = ctx.workspace.delete_artifact(
            package, path, expected_fingerprint=expected_fingerprint, workspace=workspace
        )
    except PortError as exc:
        return port_failure(operation, exc)
    return envelope(
        operation,
        result=WorkspaceArtifact(path=path, size=len(data)),
        fingerprints={"artifact": fingerprint_bytes(data)},
    )
