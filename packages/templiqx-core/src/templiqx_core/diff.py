"""``diff_contracts``: are two contracts the same, and which top-level fields differ."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from templiqx_contracts import (
    CanonicalJSONError,
    Contract,
    ContractDiff,
    canonical_json,
    fingerprint,
)
from templiqx_core.equality import strict_json_equal

__all__ = ["DIFF_FIELDS", "diff_contracts"]

DIFF_FIELDS: Final = (
    "id",
    "version",
    "inputs",
    "context",
    "messages",
    "output_schema",
    "capabilities",
    "api_version",
    "description",
    "runtime_policy",
    "extensions",
    "components",
    "provenance",
    "evals",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
)
"""Every contract field, in the order changes are listed (the reference's seven first)."""


def _fingerprint(contract: Contract) -> str:
    try:
        return fingerprint(contract)
    except (CanonicalJSONError, TypeError, ValueError, OverflowError):
        return ""


def _same(left: Any, right: Any) -> bool:
    if left is msgspec.UNSET or right is msgspec.UNSET:  # an unset tool field
        return left is right
    try:
        return canonical_json(left) == canonical_json(right)
    except (CanonicalJSONError, TypeError, ValueError, OverflowError):
        pass
    try:
        return strict_json_equal(msgspec.to_builtins(left), msgspec.to_builtins(right))
    except (TypeError, ValueError, OverflowError):
        return False


def diff_contracts(left: Contract, right: Contract) -> ContractDiff:
    """Compare two contracts by fingerprint and list every differing top-level field.

    Fields compare by canonical JSON (integers differ from floats, key order is irrelevant), so
    ``equal`` is true exactly when ``changes`` is empty. Unlike the reference, ``changes``
    covers every field (``description``, ``runtime_policy``, ``extensions``, ``components``,
    ``provenance``, ``evals`` and ``api_version`` follow the reference's seven).
    """
    left_fp, right_fp = _fingerprint(left), _fingerprint(right)
    changes = [name for name in DIFF_FIELDS if not _same(getattr(left, name), getattr(right, name))]
    return ContractDiff(
        equal=bool(left_fp) and left_fp == right_fp,
        left_fingerprint=left_fp,
        right_fingerprint=right_fp,
        changes=changes,
    )
