"""Executing a contract that declares tools.

* The runtime must offer the tools to its model: an interaction that carries tools runs only on
  a runtime whose descriptor lists ``tool_calling`` — or on the deterministic fake runtime,
  which asks no model (it returns the output it is given), so evals of tool-calling contracts
  run offline like every eval (DECISIONS 14) and the fake keeps the reference's descriptor.
* A tool-call answer is judged by the declared tools (:func:`templiqx_core.validate_tool_answer`),
  any other output by the output schema, whatever the runtime claimed (DECISIONS 8).
"""

from __future__ import annotations

from templiqx_application.diagnostics import error
from templiqx_application.fake_runtime import DeterministicFakeRuntime
from templiqx_contracts import TOOL_CALLING, CompiledInteraction, Diagnostic, declared_tools
from templiqx_ports import RuntimeAdapter

__all__ = ["TOOL_RUNTIME_HELP", "tool_runtime_problems"]

TOOL_RUNTIME_HELP = (
    "The contract declares tools, so it needs a runtime that offers them to the model "
    "(capability tool_calling: the openai runtime, or a mock whose scenario scripts tool "
    "calls), or the deterministic fake runtime with a fixture output."
)


def tool_runtime_problems(
    runtime: RuntimeAdapter, interaction: CompiledInteraction, offered: set[str]
) -> list[Diagnostic]:
    """Why ``runtime`` (offering ``offered``) cannot run ``interaction``'s tools, if it cannot."""
    if not declared_tools(interaction) or TOOL_CALLING in offered:
        return []
    if isinstance(runtime, DeterministicFakeRuntime):
        return []
    return [
        error(
            "TQX_RUNTIME_CAPABILITY_UNSUPPORTED",
            f"runtime lacks '{TOOL_CALLING}', which the contract's tools need",
            "/tools",
            help=TOOL_RUNTIME_HELP,
        )
    ]
