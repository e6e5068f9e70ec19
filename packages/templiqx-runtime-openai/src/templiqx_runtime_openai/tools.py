"""The declared tools of an interaction, as the chat-completions API takes them.

``tools`` lists each tool as ``{"type": "function", "function": {"name", "description",
"parameters"}}`` (the arguments schema verbatim); ``tool_choice`` is ``"auto"``,
``"required"``, ``"none"`` or ``{"type": "function", "function": {"name": …}}`` for a forced
tool; ``parallel_tool_calls`` is the contract's boolean. An interaction without tools adds none
of the three, so its request body — and request fingerprint — is what it was before tools.
Function calling is not put in ``strict`` mode: the application checks every call against the
tool's schema anyway (DECISIONS 8), and strict mode would refuse schemas the bounded subset
allows (optional properties).
"""

from __future__ import annotations

from typing import Any

from templiqx_contracts import (
    CompiledInteraction,
    NamedToolChoice,
    declared_tools,
    parallel_tool_calls_of,
    tool_choice_of,
)

__all__ = ["tool_fields"]


def tool_fields(interaction: CompiledInteraction) -> dict[str, Any]:
    """The ``tools``, ``tool_choice`` and ``parallel_tool_calls`` body members (or none)."""
    tools = declared_tools(interaction)
    if not tools:
        return {}
    choice = tool_choice_of(interaction)
    return {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.arguments,
                },
            }
            for tool in tools
        ],
        "tool_choice": (
            {"type": "function", "function": {"name": choice.tool}}
            if isinstance(choice, NamedToolChoice)
            else choice
        ),
        "parallel_tool_calls": parallel_tool_calls_of(interaction),
    }
