"""What the server checks before and while it serves: the packages root and the runtime.

Both checks return the problems they find as sentences (none: fine). ``--check`` runs them
once and exits non-zero when any finds something; the readiness routes run them on every
probe, so a root that becomes unreadable, or a runtime whose settings are incomplete, takes
the server out of rotation with the reason.

A runtime that reads its settings lazily (the OpenAI-compatible and Langfuse runtimes) offers
``check_settings()``, which reads them without calling a model and raises naming every missing
or invalid one (:class:`SettingsCheck`); other runtimes have nothing to check.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["SettingsCheck", "root_problems", "runtime_problems", "workspace_problems"]


@runtime_checkable
class SettingsCheck(Protocol):
    """A runtime that can check its own settings without calling a model."""

    def check_settings(self) -> None: ...


def root_problems(root: str) -> list[str]:
    """Why ``root`` cannot serve as the packages root (a readable folder)."""
    if not os.path.exists(root):
        return [f"packages root {root} does not exist (set TEMPLIQX_ROOT or --root)"]
    if not os.path.isdir(root):
        return [f"packages root {root} is not a folder"]
    try:
        os.listdir(root)
    except OSError as exc:
        return [f"packages root {root} cannot be read: {exc.strerror}"]
    return []


def workspace_problems(workspace: str) -> list[str]:
    """Why artifacts cannot be kept in ``workspace`` (it, or the folder it will be made in,
    must be a writable folder)."""
    existing = workspace
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if not os.path.isdir(existing):
        return [f"workspace {workspace}: {existing} is not a folder"]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [f"workspace {workspace}: {existing} is not writable (artifact writes will fail)"]
    return []


def runtime_problems(name: str, runtime: object) -> list[str]:
    """Why the runtime ``name`` cannot call its model (its settings), or nothing."""
    if not isinstance(runtime, SettingsCheck):
        return []
    try:
        runtime.check_settings()
    except Exception as exc:
        detail = getattr(exc, "detail", None) or str(exc)
        fix = getattr(exc, "help", None)
        return [f"runtime {name}: {detail}" + (f" (help: {fix})" if fix else "")]
    return []


def readiness_checks(
    root: str, runtime_name: str, runtime: object
) -> list[Callable[[], list[str]]]:
    """The checks the readiness routes run."""
    return [lambda: root_problems(root), lambda: runtime_problems(runtime_name, runtime)]
