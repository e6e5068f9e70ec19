"""templiqx-local: the filesystem package store and artifact workspace for templiqx.

* :class:`FilesystemPackageStore` — packages as folders under one root, symlink-free confined
  reads, ``flock``-serialized atomic writes, compare-and-swap on fingerprints.
* :class:`FilesystemArtifactWorkspace` — generated artifacts per package, exclusive output
  leases, shared-locked reads and listings, confined per-call workspace overrides.
* The naming rules (:func:`check_segment`, :func:`check_relative_path`, ...) both use.
"""

from templiqx_local.compose import (
    RuntimeSelectionError,
    available_runtimes,
    compose,
    load_runtime,
)
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
