"""Renderers of the workspace artifact operations: list, read and delete."""

from __future__ import annotations

from templiqx_cli.human.base import Renderer, View
from templiqx_cli.human.blocks import count, table, text_lines

__all__ = ["RENDERERS"]


def _subject(view: View) -> str:
    path = view.argument("path")
    return f"{view.argument('package')}/{path}" if path else view.argument("package")


def _size(size: object) -> str:
    return count(size, "byte") if isinstance(size, int) else "?"


class ListArtifactsRenderer(Renderer):
    def summary(self, view: View) -> str:
        return count(len(view.result or []), "artifact")

    def body(self, view: View) -> list[str]:
        rows = [[str(item.get("path", "")), _size(item.get("size"))] for item in view.result or []]
        return table(["path", "size"], rows, view.style)


class ReadArtifactRenderer(Renderer):
    """A text artifact as it is; a binary one by type and size (``--json`` has the base64)."""

    def subject(self, view: View) -> str:
        return _subject(view)

    def summary(self, view: View) -> str:
        artifact = view.result or {}
        return f"{artifact.get('content_type', 'unknown type')}, {artifact.get('content_encoding')}"

    def body(self, view: View) -> list[str]:
        artifact = view.result or {}
        if artifact.get("content_encoding") == "utf8":
            return text_lines(str(artifact.get("content", "")).removesuffix("\n"))
        return [view.style.dim("binary content: use --json for the base64 text")]


class DeleteArtifactRenderer(Renderer):
    def subject(self, view: View) -> str:
        return _subject(view)

    def summary(self, view: View) -> str:
        return f"deleted ({_size((view.result or {}).get('size'))})"

    def body(self, view: View) -> list[str]:
        return []


RENDERERS: dict[str, Renderer] = {
    "list_workspace_artifacts": ListArtifactsRenderer(),
    "read_artifact": ReadArtifactRenderer(),
    "delete_workspace_artifact": DeleteArtifactRenderer(),
}
