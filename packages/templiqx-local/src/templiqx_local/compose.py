"""Composition: a ready :class:`~templiqx_application.TempliqxService` over a folder.

``compose(root)`` is what every surface calls: the filesystem store at ``root`` (an existing
folder), the workspace at ``root/.templiqx-workspace`` (created by its first write) and the
deterministic fake runtime, so everything works offline. Composing writes nothing.
``load_runtime(name)`` builds a runtime adapter by its entry-point name in the
``templiqx.runtimes`` group (``fake``, ``mock``, ``openai``, ``langfuse`` or any third-party
adapter), so surfaces select runtimes without importing adapters.

Listing runtimes imports neither the service nor the store (``templiqx --help`` lists them);
``compose`` imports both when it is called.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from templiqx_local.locking import DEFAULT_LOCK_TIMEOUT
from templiqx_ports import RuntimeAdapter

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from templiqx_application import Clock, TempliqxService

__all__ = [
    "RUNTIME_ENTRY_POINT_GROUP",
    "RuntimeSelectionError",
    "available_runtimes",
    "compose",
    "load_runtime",
    "unknown_runtime_message",
]

RUNTIME_ENTRY_POINT_GROUP = "templiqx.runtimes"

OUR_RUNTIMES = {
    "openai": "templiqx-runtime-openai",
    "langfuse": "templiqx-runtime-langfuse",
    "mock": "templiqx-mock",
}
"""Runtimes that templiqx distributions provide, by the distribution to install for each."""


class RuntimeSelectionError(ValueError):
    """A runtime name is unknown, or its factory could not build the adapter."""


def compose(
    root: str | os.PathLike[str],
    workspace: str | os.PathLike[str] | None = None,
    runtime: RuntimeAdapter | None = None,
    *,
    workspace_override_roots: Iterable[str | os.PathLike[str]] | None = None,
    clock: Clock | None = None,
    create_root: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> TempliqxService:
    """A service over the packages under ``root``.

    ``root`` must be an existing folder: a missing one raises the store's
    :class:`~templiqx_ports.InvalidPathError` (``TQX_PATH_INVALID``), unless ``create_root``
    asks for it to be created. ``workspace`` defaults to ``root/.templiqx-workspace`` and is
    created by the first write to it, never before; ``runtime`` defaults to the deterministic
    fake. ``workspace_override_roots`` lists the folders a per-call ``workspace`` argument may
    lie in (default: only the workspace itself). ``lock_timeout`` is how long a write waits
    for another writer of the same package before it ends in ``TQX_BUSY``. A
    ``TEMPLIQX_RENDER_FUEL`` outside 1 to ``MAX_RENDER_FUEL`` raises ``ValueError`` naming it.
    """
    from templiqx_application import DeterministicFakeRuntime, TempliqxService
    from templiqx_local.store import FilesystemPackageStore
    from templiqx_local.workspace import DEFAULT_WORKSPACE_DIR, FilesystemArtifactWorkspace

    store = FilesystemPackageStore(root, create=create_root, lock_timeout=lock_timeout)
    workspace_root = (
        Path(workspace) if workspace is not None else store.root / DEFAULT_WORKSPACE_DIR
    )
    artifacts = FilesystemArtifactWorkspace(
        workspace_root, override_roots=workspace_override_roots, lock_timeout=lock_timeout
    )
    return TempliqxService(
        store,
        artifacts,
        runtime if runtime is not None else DeterministicFakeRuntime(),
        clock=clock,
    )


def _runtime_entry_points() -> dict[str, EntryPoint]:
    from importlib.metadata import entry_points  # ~40 ms of imports: only when runtimes are listed

    found: dict[str, EntryPoint] = {}
    for entry in entry_points(group=RUNTIME_ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry)
    return found


def available_runtimes() -> list[str]:
    """The names of the installed runtimes, sorted."""
    return sorted(_runtime_entry_points())


def unknown_runtime_message(name: str) -> str:
    """``unknown runtime 'NAME'``, the installed names, and the distribution to install when
    ``name`` is one that a templiqx distribution provides."""
    names = ", ".join(available_runtimes()) or "none"
    message = f"unknown runtime '{name}'; installed runtimes: {names}"
    distribution = OUR_RUNTIMES.get(name)
    if distribution is not None:
        message += f"; '{name}' is provided by {distribution} (pip install {distribution})"
    return message


def load_runtime(name: str) -> RuntimeAdapter:
    """Build the runtime registered as ``name`` in ``templiqx.runtimes``.

    Raises :class:`RuntimeSelectionError` naming the installed runtimes when ``name`` is
    unknown, and when the factory fails (e.g. the mock without its scenario file), with the
    factory's own message.
    """
    entry = _runtime_entry_points().get(name)
    if entry is None:
        raise RuntimeSelectionError(unknown_runtime_message(name))
    try:
        factory = entry.load()
        adapter = factory()
    except Exception as exc:
        raise RuntimeSelectionError(f"runtime '{name}' could not be created: {exc}") from exc
    if not isinstance(adapter, RuntimeAdapter):
        raise RuntimeSelectionError(
            f"runtime '{name}' factory returned a {type(adapter).__name__}, not a RuntimeAdapter"
        )
    return adapter
