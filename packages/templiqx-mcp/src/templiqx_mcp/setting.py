"""Where the server works and what it runs on (no SDK import: the command line reads it first)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerSetting"]


@dataclass(frozen=True)
class ServerSetting:
    """Where the server works and what it runs on."""

    packages_root: str
    workspace_root: str
    workspace_is_default: bool
    runtime: str
