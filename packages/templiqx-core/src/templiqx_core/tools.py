"""Declared tools: static checks, tool-contract references, compiled form and answer checks.

* :func:`check_tools` — the static checks ``validate_contract`` runs last: names (the OpenAI
  function-name rule, unique), descriptions, each arguments schema (engine-valid, in the bounded
  subset, ``type: object``), ``tool_choice`` / ``parallel_tool_calls``, and the output schema's
  reserved ``tool_calls`` property.
* :func:`resolve_tool_argument_refs` — a tool's ``arguments`` may be the tool-contract stub
  ``{"$ref": "tool_contract:<name>", "fingerprint": "<pin>"}``, resolved against the package
  manifest's ``tool_contracts`` exactly as extension schemas are.
* :func:`compiled_tool_fields` — what a compiled interaction carries (defaults filled in).
* :func:`validate_tool_answer` / :func:`output_valid` — the application's check of a runtime
  output (DECISIONS 8) under the rule of :mod:`templiqx_contracts.tools`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from templiqx_contracts import (
    TOOL_CHOICE_MODES,
    TOOL_NAME,
    CompiledInteraction,
    Contract,
    Diagnostic,
    NamedToolChoice,
    ToolCallProblem,
    ToolContractRef,
    ToolSpec,
    declared_tools,
    interaction_output_valid,
    parallel_tool_calls_of,
    tool_answer_problems,
    tool_choice_of,
)
from templiqx_core import codes
from templiqx_core.bounded import validate_bounded_schema
from templiqx_core.schema import accepts, compile_schema, validate_instance

__all__ = [
    "TOOL_CONTRACT_PREFIX",
    "check_tools",
    "compiled_tool_fields",
    "output_valid",
    "resolve_reference",
    "resolve_tool_argument_refs",
    "tool_contract_name",
    "validate_tool_answer",
]

TOOL_CONTRACT_PREFIX = "tool_contract:"


def tool_contract_name(schema: Any) -> str | None:
    """The tool-contract name a ``{"$ref": "tool_contract:<name>", ...}`` stub refers to."""
    if not isinstance(schema, dict):
        return None
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith(TOOL_CONTRACT_PREFIX):
        return reference[len(TOOL_CONTRACT_PREFIX) :]
    return None


# --- static checks ----------------------------------------------------------------------------


def check_tools(contract: Contract, out: list[Diagnostic]) -> None:
    """Append the diagnostics of the contract's tool declarations to ``out`` (in order)."""
    tools = declared_tools(contract)
    first_at: dict[str, int] = {}
    for index, tool in enumerate(tools):
        _check_tool(index, tool, first_at, out)
    _check_settings(contract, tools, out)
    if tools:
        _check_reserved_output(contract.output_schema, out)


def _check_tool(
    index: int, tool: ToolSpec, first_at: dict[str, int], out: list[Diagnostic]
) -> None:
    base = f"/tools/{index}"
    name = tool.name
    if TOOL_NAME.fullmatch(name) is None:
        out.append(
            codes.problem(
                codes.TOOL_NAME_INVALID,
                f"tool name '{name}' must be 1 to 64 ASCII letters, digits, '_' or '-'",
                f"{base}/name",
            )
        )
    if name in first_at:
        out.append(
            codes.problem(
                codes.TOOL_NAME_DUPLICATE,
                f"tool '{name}' is declared more than once (first at /tools/{first_at[name]})",
                f"{base}/name",
            )
        )
    else:
        first_at[name] = index
    if not tool.description.strip():
        out.append(
            codes.problem(
                codes.TOOL_DESCRIPTION_EMPTY,
                f"tool '{name}' needs a description: the model decides from it when to call "
                "the tool",
                f"{base}/description",
            )
        )
    pointer = f"{base}/arguments"
    schema = tool.arguments
    reference = tool_contract_name(schema)
    if reference is not None:
        out.append(
            codes.problem(
                codes.TOOL_CONTRACT_REF_UNRESOLVED,
                f"tool '{name}' references tool_contract '{reference}', which was not resolved: "
                "load the contract through its package, whose manifest must list it under "
                "tool_contracts",
                pointer,
            )
        )
        return
    error = compile_schema(schema).error
    if error is not None:
        out.append(
            codes.problem(
                codes.TOOL_SCHEMA_INVALID, f"invalid schema for tool '{name}': {error}", pointer
            )
        )
    validate_bounded_schema(schema, pointer, out)
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, str) and kind != "object":
            out.append(
                codes.problem(
                    codes.TOOL_ARGUMENTS_TYPE,
                    f"tool '{name}' arguments schema has type '{kind}'; it must be 'object'",
                    f"{pointer}/type",
                )
            )


def _check_settings(contract: Contract, tools: list[ToolSpec], out: list[Diagnostic]) -> None:
    choice = contract.tool_choice
    if not tools:
        if isinstance(choice, str | NamedToolChoice):
            out.append(
                codes.problem(
                    codes.TOOL_CHOICE_INVALID,
                    "tool_choice is set but the contract declares no tools",
                    "/tool_choice",
                )
            )
        if isinstance(contract.parallel_tool_calls, bool):
            out.append(
                codes.problem(
                    codes.TOOL_CHOICE_INVALID,
                    "parallel_tool_calls is set but the contract declares no tools",
                    "/parallel_tool_calls",
                )
            )
        return
    if isinstance(choice, NamedToolChoice):
        if all(tool.name != choice.tool for tool in tools):
            out.append(
                codes.problem(
                    codes.TOOL_CHOICE_INVALID,
                    f"tool_choice forces tool '{choice.tool}', which the contract does not declare",
                    "/tool_choice/tool",
                )
            )
    elif isinstance(choice, str) and choice not in TOOL_CHOICE_MODES:
        out.append(
            codes.problem(
                codes.TOOL_CHOICE_INVALID,
                f"tool_choice '{choice}' must be auto, required, none or {{tool: NAME}}",
                "/tool_choice",
            )
        )


def _check_reserved_output(schema: Any, out: list[Diagnostic]) -> None:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict) and "tool_calls" in properties:
        out.append(
            codes.problem(
                codes.TOOL_OUTPUT_RESERVED,
                "the output schema declares a top-level 'tool_calls' property, which a contract "
                "that declares tools reserves for tool-call answers",
                "/output_schema/properties/tool_calls",
            )
        )


# --- tool-contract references -----------------------------------------------------------------


def resolve_reference(
    subject: str, schema: dict[str, Any], name: str, table: Mapping[str, ToolContractRef]
) -> tuple[Any, str | None]:
    """Resolve one stub of ``subject`` (e.g. ``tool 'x'``): ``(table schema, None)``, or
    ``(None, why not)`` for an unknown name, a missing pin or a stale pin."""
    pin = schema.get("fingerprint")
    entry = table.get(name)
    if entry is None:
        return None, f"{subject} references unknown tool_contract '{name}'"
    if not isinstance(pin, str):
        return None, f"{subject} references tool_contract '{name}' without a fingerprint pin"
    if pin != entry.fingerprint:
        return None, (
            f"{subject} pins fingerprint '{pin}' but tool_contract '{name}' has "
            f"'{entry.fingerprint}'"
        )
    return entry.schema, None


def resolve_tool_argument_refs(
    contract: Contract, table: Mapping[str, ToolContractRef]
) -> tuple[list[Diagnostic], dict[int, Any]]:
    """Resolve the ``tool_contract:`` stubs of the tools' ``arguments`` (without changing them).

    Returns the diagnostics (unknown name, missing or stale pin: each
    ``TQX_TOOL_CONTRACT_REF_UNRESOLVED`` at ``/tools/{i}/arguments``) and, by tool index, the
    table schema that replaces each stub. Pins are the table entries' declared fingerprints,
    compared as opaque strings (as for extensions).
    """
    out: list[Diagnostic] = []
    replacements: dict[int, Any] = {}
    for index, tool in enumerate(declared_tools(contract)):
        name = tool_contract_name(tool.arguments)
        if name is None:
            continue
        schema, problem = resolve_reference(f"tool '{tool.name}'", tool.arguments, name, table)
        if problem is None:
            replacements[index] = schema
        else:
            out.append(
                codes.problem(
                    codes.TOOL_CONTRACT_REF_UNRESOLVED, problem, f"/tools/{index}/arguments"
                )
            )
    return out, replacements


# --- compiled form ----------------------------------------------------------------------------


def compiled_tool_fields(contract: Contract) -> dict[str, Any]:
    """The tool fields of the contract's compiled interaction (empty without tools).

    All three are set, defaults filled in, so a runtime never needs to know them.
    """
    tools = declared_tools(contract)
    if not tools:
        return {}
    return {
        "tools": [
            ToolSpec(name=tool.name, description=tool.description, arguments=tool.arguments)
            for tool in tools
        ],
        "tool_choice": tool_choice_of(contract),
        "parallel_tool_calls": parallel_tool_calls_of(contract),
    }


# --- answers ----------------------------------------------------------------------------------


def _argument_problems(schema: Any, arguments: Any, pointer: str) -> list[ToolCallProblem]:
    found: list[Diagnostic] = []
    validate_instance(schema, arguments, pointer, codes.TOOL_CALL_ARGUMENTS, found)
    return [
        ToolCallProblem(problem.code, problem.message, problem.json_pointer or pointer)
        for problem in found
    ]


def validate_tool_answer(interaction: CompiledInteraction, output: Any) -> list[Diagnostic] | None:
    """The diagnostics of a runtime output under the interaction's declared tools.

    ``None`` when the output schema decides (no tools, or a plain answer the tool choice
    allows); otherwise one diagnostic per problem (empty: a valid tool-call answer), each
    argument violation on its own with the engine's text, as ``TQX_OUTPUT_SCHEMA`` reports them.
    """
    problems = tool_answer_problems(
        declared_tools(interaction),
        tool_choice_of(interaction),
        parallel_tool_calls_of(interaction),
        output,
        _argument_problems,
    )
    if problems is None:
        return None
    return [codes.problem(code, message, pointer) for code, message, pointer in problems]


def output_valid(interaction: CompiledInteraction, output: Any) -> bool:
    """Whether ``output`` is a valid answer to ``interaction``: the receipt's
    ``output_schema_valid`` as the application decides it (tools or output schema)."""
    return interaction_output_valid(interaction, output, accepts)
