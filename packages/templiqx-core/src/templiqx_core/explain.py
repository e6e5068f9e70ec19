"""``explain_contract``: a structural summary of a contract, with hints for what is missing."""

from __future__ import annotations

from msgspec import UNSET

from templiqx_contracts import Contract, Explanation, declared_tools
from templiqx_core import codes
from templiqx_core.components import component_content, referenced_components

__all__ = ["explain_contract"]


def explain_contract(contract: Contract) -> Explanation:
    """Summarize declared fields, capabilities, components and tools, and list unresolved
    components.

    No validation runs. Each unresolved component name gets a fix hint naming the code
    validation really emits for it (``TQX_COMPONENT_MISSING``); a contract without messages
    gets a ``TQX_MESSAGES_EMPTY`` hint.
    """
    referenced: set[str] = set()
    for message in contract.messages:
        referenced |= referenced_components(message.content)
    for definition in contract.components.values():
        referenced |= referenced_components(component_content(definition))
    unresolved = sorted(referenced - contract.components.keys())
    hints = [
        f"define component '{name}' under `components:` or remove its reference "
        f"({codes.COMPONENT_MISSING})"
        for name in unresolved
    ]
    if not contract.messages:
        hints.append(f"add at least one message under `messages:` ({codes.MESSAGES_EMPTY})")
    return Explanation(
        contract_id=contract.id,
        summary=contract.description,
        inputs=sorted(contract.inputs),
        context=sorted(contract.context),
        capabilities=list(contract.capabilities),
        component_count=len(contract.components),
        components=sorted(contract.components),
        unresolved_references=unresolved,
        fix_hints=hints,
        tools=[tool.name for tool in declared_tools(contract)] or UNSET,
    )
