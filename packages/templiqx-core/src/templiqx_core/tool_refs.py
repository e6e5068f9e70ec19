"""Inlining of tool-contract references in extension schemas and tool arguments.

An extension schema, or a declared tool's ``arguments``, may be a stub
``{"$ref": "tool_contract:<name>", "fingerprint": "<pin>"}``. It is replaced by the schema of
the package manifest's ``tool_contracts`` entry ``<name>`` when the pin equals that entry's
declared fingerprint (an opaque string; nothing recomputes it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from templiqx_contracts import Contract, Diagnostic, ToolContractRef, declared_tools
from templiqx_core import codes
from templiqx_core.tools import (
    TOOL_CONTRACT_PREFIX,
    resolve_reference,
    resolve_tool_argument_refs,
    tool_contract_name,
)

__all__ = ["TOOL_CONTRACT_PREFIX", "resolve_tool_contract_refs"]


def resolve_tool_contract_refs(
    contract: Contract, table: Mapping[str, ToolContractRef]
) -> list[Diagnostic]:
    """Inline every ``tool_contract:`` reference of ``contract``'s extensions and tools.

    Extensions are visited in sorted key order, then tools in declaration order. Any unknown
    name, stale pin or missing pin is ``TQX_TOOL_CONTRACT_REF_UNRESOLVED`` at
    ``/extensions/{key}/schema`` or ``/tools/{index}/arguments``. The contract is changed only
    when every reference resolves (all or nothing); each inlined schema is a copy of the
    table's. Never raises.
    """
    out: list[Diagnostic] = []
    replacements: dict[str, Any] = {}
    for key in sorted(contract.extensions):
        schema = contract.extensions[key].schema
        name = tool_contract_name(schema)
        if name is None:
            continue
        resolved, problem = resolve_reference(f"extension '{key}'", schema, name, table)
        if problem is None:
            replacements[key] = resolved
        else:
            out.append(
                codes.problem(
                    codes.TOOL_CONTRACT_REF_UNRESOLVED, problem, f"/extensions/{key}/schema"
                )
            )
    tool_problems, tool_replacements = resolve_tool_argument_refs(contract, table)
    out.extend(tool_problems)
    if not out:
        for key, replacement in replacements.items():
            contract.extensions[key].schema = copy.deepcopy(replacement)
        tools = declared_tools(contract)
        for index, replacement in tool_replacements.items():
            tools[index].arguments = copy.deepcopy(replacement)
    return out
