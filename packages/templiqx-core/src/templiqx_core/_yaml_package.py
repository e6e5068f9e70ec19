"""Readers for the package model: ``templiqx.yaml`` manifests and ``templiqx.lock`` files."""

from __future__ import annotations

from typing import Final

from templiqx_contracts import (
    LockedDependency,
    PackageLock,
    PackageManifest,
    PackageSignature,
    ToolContractRef,
)
from templiqx_core._yaml_decode import (
    Field,
    StructSpec,
    json_value,
    list_of,
    map_of,
    string,
    struct,
)

__all__ = ["LOCK", "MANIFEST"]

_STRINGS = list_of(string, "strings")
_PATHS = list_of(string, "package-relative paths")

_SIGNATURE: Final = StructSpec(
    "a package signature",
    PackageSignature,
    (Field("key_id", string), Field("algorithm", string), Field("value", string)),
)

_TOOL_CONTRACT: Final = StructSpec(
    "a tool-contract entry",
    ToolContractRef,
    (Field("fingerprint", string), Field("schema", json_value)),
)

MANIFEST: Final = StructSpec(
    "a package manifest",
    PackageManifest,
    (
        Field("api_version", string),
        Field("package", string),
        Field("version", string),
        Field("description", string, str),
        Field("contracts", list_of(string, "contract ids"), list),
        Field("components", _PATHS, list),
        Field("evals", _PATHS, list),
        Field("migrations", _PATHS, list),
        Field("templates", _PATHS, list),
        Field("provenance", map_of(string, "strings"), dict),
        Field("signatures", list_of(struct(_SIGNATURE), "signatures"), list),
        Field("dependencies", map_of(string, "package fingerprints"), dict),
        Field("tool_contracts", map_of(struct(_TOOL_CONTRACT), "tool-contract entries"), dict),
        Field("translations", list_of(string, "locale ids"), list),
        Field("definitions", _STRINGS, list),
    ),
)

_LOCKED: Final = StructSpec(
    "a locked dependency",
    LockedDependency,
    (Field("path", string), Field("fingerprint", string)),
)

LOCK: Final = StructSpec(
    "a package lock",
    PackageLock,
    (Field("dependencies", map_of(struct(_LOCKED), "locked dependencies"), dict),),
)
