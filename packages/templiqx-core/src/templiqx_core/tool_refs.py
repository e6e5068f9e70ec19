"""Inlining of tool-contract references in extension schemas.

An extension schema may be a stub ``{"$ref": "tool_contract:<name>", "fingerprint": "<pin>"}``.
It is replaced by the schema of the package manifest's ``tool_contracts`` entry ``<name>`` when
the pin equals that entry's declared fingerprint (an opaque string; nothing recomputes it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from templiqx_contracts import Contract, Diagnostic, ToolContractRef
from templiqx_core import codes

__all__ = ["TOOL_CONTRACT_PREFIX", "resolve_tool_contract_refs"]

TOOL_CONTRACT_PREFIX: Final = "tool_contract:"


def resolve_tool_contract_refs(
    contract: Contract, table: Mapping[str, ToolContractRef]
) -> list[Diagnostic]:
    """Inline every ``tool_contract:`` reference of ``contract``'s extensions.

    Extensions are visited in sorted key order. Any unknown name, stale pin or missing pin is
    ``TQX_TOOL_CONTRACT_REF_UNRESOLVED`` at ``/extensions/{key}/schema``. The contract is changed
    only when every reference resolves (all or nothing); each inlined schema is a copy of the
    table's. Never raises.
    """
    out: list[Diagnostic] = []
    replacements: dict[str, Any] = {}
    for key in sorted(contract.extensions):
        schema = contract.extensions[key].schema
        if not isinstance(schema, dict):
            continue
        reference = schema.get("$ref")
        if not isinstance(reference, str) or not reference.startswith(TOOL_CONTRACT_PREFIX):
            continue
        name = reference[len(TOOL_CONTRACT_PREFIX) :]
        pointer = f"/extensions/{key}/schema"
        pin = schema.get("fingerprint")
        entry = table.get(name)
        if entry is None:
            message = f"extension '{key}' references unknown tool_contract '{name}'"
        elif not isinstance(pin, str):
            message = (
                f"extension '{key}' references tool_contract '{name}' without a fingerprint pin"
            )
        elif pin != entry.fingerprint:
            message = (
                f"extension '{key}' pins fingerprint '{pin}' but tool_contract '{name}' "
                f"has '{entry.fingerprint}'"
            )
        else:
            replacements[key] = entry.schema
            continue
        out.append(codes.problem(codes.TOOL_CONTRACT_REF_UNRESOLVED, message, pointer))
    if not out:
        for key, replacement in replacements.items():
            contract.extensions[key].schema = copy.deepcopy(replacement)
    return out
