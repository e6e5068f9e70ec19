"""``compile_interaction``: validation, capability negotiation, rendering, one compiled request."""

from __future__ import annotations

from collections.abc import Sequence

from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    Contract,
    Diagnostic,
    RenderRequest,
    quote_input,
)
from templiqx_core import codes
from templiqx_core.fuel import Fuel, metered
from templiqx_core.render import compiled_size_problem, render_messages
from templiqx_core.suggest import closest, name_list
from templiqx_core.tools import compiled_tool_fields
from templiqx_core.validate import validate_contract
from templiqx_core.values import validate_values

__all__ = ["compile_interaction", "negotiate_capabilities", "required_capabilities"]


def required_capabilities(contract: Contract) -> list[str]:
    """Contract capabilities plus each extension's capability, sorted and de-duplicated."""
    required = set(contract.capabilities)
    required.update(extension.capability for extension in contract.extensions.values())
    return sorted(required)


def negotiate_capabilities(contract: Contract, targets: Sequence[str]) -> list[Diagnostic]:
    """What the target lacks: each missing contract capability (in list order, duplicates
    repeated), then each extension (sorted by key) whose capability is missing."""
    available = set(targets)
    offered = sorted(available)
    out = [
        codes.problem(
            codes.CAPABILITY_UNSUPPORTED,
            f"target lacks required capability {quote_input(capability)}"
            f"{_offered(capability, offered)}",
            "/capabilities",
        )
        for capability in contract.capabilities
        if capability not in available
    ]
    for key in sorted(contract.extensions):
        capability = contract.extensions[key].capability
        if capability not in available:
            out.append(
                codes.problem(
                    codes.EXTENSION_UNSUPPORTED,
                    f"target lacks capability {quote_input(capability)} required by extension "
                    f"{quote_input(key)}{_offered(capability, offered)}",
                    f"/extensions/{key}",
                )
            )
    return out


def _offered(capability: str, offered: list[str]) -> str:
    """What the target offers, and the offered name a misspelt capability was meant to be."""
    match = closest(capability, offered)
    hint = "" if match is None else f" (did you mean {quote_input(match)}?)"
    return f"{hint}; the target offers {name_list(offered)}"


def compile_interaction(
    contract: Contract,
    request: RenderRequest,
    target_capabilities: Sequence[str],
    *,
    fuel: Fuel | None = None,
) -> tuple[CompiledInteraction | None, list[Diagnostic]]:
    """Compile a contract with a request for a target offering ``target_capabilities``.

    Contract validation, value validation and capability checks are all collected first; if
    any fails, ``(None, diagnostics)`` is returned and nothing is rendered. Otherwise the
    messages are rendered and the first render failure is returned alone, as is a compiled
    request over ``MAX_COMPILED_BYTES``. On success the result is ``(interaction, [])``.
    ``fuel`` is the work budget (default: the running call's, :mod:`templiqx_core.fuel`).
    Never raises.
    """
    if fuel is not None:
        with metered(fuel):
            return compile_interaction(contract, request, target_capabilities)
    targets = [target_capabilities] if isinstance(target_capabilities, str) else target_capabilities
    diagnostics = validate_contract(contract)
    diagnostics.extend(validate_values(contract, request))
    diagnostics.extend(negotiate_capabilities(contract, targets))
    if diagnostics:
        return None, diagnostics
    messages, failures = render_messages(contract, request)
    if messages is None:
        return None, failures
    interaction = CompiledInteraction(
        compiler=COMPILER_ID,
        contract_id=contract.id,
        contract_version=contract.version,
        messages=messages,
        output_schema=contract.output_schema,
        required_capabilities=required_capabilities(contract),
        target_capabilities=sorted(set(targets)),
        runtime_policy=dict(contract.runtime_policy),
        extensions={key: spec.value for key, spec in contract.extensions.items()},
        **compiled_tool_fields(contract),
    )
    too_large = compiled_size_problem(interaction)
    if too_large is not None:
        return None, [too_large]
    return interaction, []
