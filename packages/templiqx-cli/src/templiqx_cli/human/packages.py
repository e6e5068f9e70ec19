"""Renderers of the package operations (and the catalog): tables and one-line outcomes."""

from __future__ import annotations

from typing import Any

from templiqx_cli.human.base import Renderer, View, command_of
from templiqx_cli.human.blocks import count, table

__all__ = ["RENDERERS"]


def _manifest_line(manifest: Any) -> str:
    """``demo 0.1.0`` from a manifest result."""
    if not isinstance(manifest, dict):
        return ""
    return f"{manifest.get('package', '')} {manifest.get('version', '')}".strip()


class CatalogRenderer(Renderer):
    """Every operation with its command and summary."""

    def summary(self, view: View) -> str:
        return count(len(view.result or []), "operation")

    def body(self, view: View) -> list[str]:
        rows = []
        for spec in view.result or []:  # objects, or only names with --view names
            name = str(spec.get("name", "")) if isinstance(spec, dict) else str(spec)
            summary = str(spec.get("summary", "")) if isinstance(spec, dict) else ""
            rows.append([name, command_of(name), summary])
        lines = table(["operation", "command", "summary"], rows, view.style)
        return [*lines, "", view.style.dim("templiqx help COMMAND shows a command's arguments.")]


class DiscoverRenderer(Renderer):
    """The packages under the root, one row each."""

    def subject(self, view: View) -> str:
        return view.root or "."

    def summary(self, view: View) -> str:
        return count(len(view.result or []), "package")

    def body(self, view: View) -> list[str]:
        rows = [
            [
                str(item.get("package", "")),
                str(item.get("version", "")),
                str(len(item.get("contracts", []))),
                str(item.get("description", "")),
            ]
            for item in view.result or []
        ]
        return table(["package", "version", "contracts", "description"], rows, view.style)


class CreateRenderer(Renderer):
    def subject(self, view: View) -> str:
        return view.argument("name")

    def summary(self, view: View) -> str:
        return f"package {view.style.name(_manifest_line(view.result))} created"

    def body(self, view: View) -> list[str]:
        return []


class UpdateRenderer(Renderer):
    def summary(self, view: View) -> str:
        return f"now {view.style.name(_manifest_line(view.result))}; signatures cleared"

    def body(self, view: View) -> list[str]:
        description = (view.result or {}).get("description")
        return [f"description: {description}"] if description else []


class DeletePackageRenderer(Renderer):
    def summary(self, view: View) -> str:
        return f"package {view.style.name(_manifest_line(view.result))} deleted"

    def body(self, view: View) -> list[str]:
        return []


class IdentityRenderer(Renderer):
    """The manifest's identity and the SHA-256 of every artifact."""

    def summary(self, view: View) -> str:
        identity = view.result or {}
        artifacts = identity.get("artifacts") or {}
        return f"{_manifest_line(identity.get('manifest'))}, {count(len(artifacts), 'artifact')}"

    def body(self, view: View) -> list[str]:
        artifacts = (view.result or {}).get("artifacts") or {}
        rows = [[path, str(digest)] for path, digest in artifacts.items()]
        return table(["artifact", "sha256"], rows, view.style)


RENDERERS: dict[str, Renderer] = {
    "catalog": CatalogRenderer(),
    "discover_packages": DiscoverRenderer(),
    "create_package": CreateRenderer(),
    "update_package": UpdateRenderer(),
    "delete_package": DeletePackageRenderer(),
    "export_package_identity": IdentityRenderer(),
}
