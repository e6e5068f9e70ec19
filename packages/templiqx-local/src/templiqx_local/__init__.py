"""templiqx-local: the filesystem package store and artifact workspace for templiqx.

* :class:`FilesystemPackageStore` — packages as folders under one root, symlink-free confined
  reads, ``flock``-serialized atomic writes, compare-and-swap on fingerprints.
* :class:`FilesystemArtifactWorkspace` — generated artifacts per package, exclusive output
  leases, shared-locked reads and listings, confined per-call workspace overrides.
* The naming rules (:func:`check_segment`, :func:`check_relative_path`, ...) both use.

The names below are imported on first use (PEP 562): listing the installed runtimes
(``templiqx_local.compose.available_runtimes``) loads neither the store nor the YAML reader.
"""

import importlib

from templiqx_local.compose import (
    RuntimeSelectionError,
    available_runtimes,
    compose,
    load_runtime,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from templiqx_local.locking import DEFAULT_LOCK_TIMEOUT
    from templiqx_local.manifest_yaml import dump_manifest
    from templiqx_local.paths import (
        RESERVED_PREFIX,
        check_package_name,
        check_relative_path,
        check_segment,
        is_relative_path,
        is_segment,
    )
    from templiqx_local.store import PACKAGE_LOCKS_DIR, FilesystemPackageStore
    from templiqx_local.workspace import (
        DEFAULT_WORKSPACE_DIR,
        WORKSPACE_LOCKS_DIR,
        FilesystemArtifactWorkspace,
        FilesystemOutputLease,
    )

__version__ = "0.2.0"

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_WORKSPACE_DIR",
    "PACKAGE_LOCKS_DIR",
    "RESERVED_PREFIX",
    "WORKSPACE_LOCKS_DIR",
    "FilesystemArtifactWorkspace",
    "FilesystemOutputLease",
    "FilesystemPackageStore",
    "RuntimeSelectionError",
    "__version__",
    "available_runtimes",
    "check_package_name",
    "check_relative_path",
    "check_segment",
    "compose",
    "dump_manifest",
    "is_relative_path",
    "is_segment",
    "load_runtime",
]


if not TYPE_CHECKING:  # type checkers see the imports above, and no module __getattr__
    _LAZY = {
        "templiqx_local.locking": ("DEFAULT_LOCK_TIMEOUT",),
        "templiqx_local.manifest_yaml": ("dump_manifest",),
        "templiqx_local.paths": (
            "RESERVED_PREFIX",
            "check_package_name",
            "check_relative_path",
            "check_segment",
            "is_relative_path",
            "is_segment",
        ),
        "templiqx_local.store": (
            "PACKAGE_LOCKS_DIR",
            "FilesystemPackageStore",
        ),
        "templiqx_local.workspace": (
            "DEFAULT_WORKSPACE_DIR",
            "WORKSPACE_LOCKS_DIR",
            "FilesystemArtifactWorkspace",
            "FilesystemOutputLease",
        ),
    }
    _EXPORTS = {name: module for module, names in _LAZY.items() for name in names}

    def __getattr__(name):
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__():
        return list(__all__)
