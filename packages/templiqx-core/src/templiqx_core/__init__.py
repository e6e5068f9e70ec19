"""templiqx-core: the portable templiqx core.

Pure functions from contract text and request values to Structs and diagnostics: strict YAML
reading, static validation, value validation, capability negotiation, rendering, compilation,
explain and diff. No files, no clock, no network. Bad input never raises: it yields
``TQX_*`` diagnostics (see :data:`CORE_CODES`).

The names below are imported on first use (PEP 562): importing one module of the core (its
codes, its limits) does not load the YAML reader, the schema engine and the compiler.
"""

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from templiqx_contracts import is_date, is_date_time
    from templiqx_core.codes import CORE_CODES
    from templiqx_core.compile import compile_interaction, required_capabilities
    from templiqx_core.diff import diff_contracts
    from templiqx_core.equality import strict_json_equal
    from templiqx_core.explain import explain_contract
    from templiqx_core.parse import (
        parse_contract,
        parse_json_value,
        parse_lock,
        parse_manifest,
        parse_node_list,
        parse_render_request,
        parse_translation_bundle,
    )
    from templiqx_core.partial_output import OutputUpdate, PartialOutput
    from templiqx_core.render import render_messages
    from templiqx_core.schema import OUTPUT_VIOLATION_LIMIT, output_violations
    from templiqx_core.semver import is_semver
    from templiqx_core.sources import ContractSource, SourceMap
    from templiqx_core.tool_refs import resolve_tool_contract_refs
    from templiqx_core.tools import output_valid, validate_tool_answer
    from templiqx_core.validate import validate_contract
    from templiqx_core.values import validate_output, validate_values

__version__ = "0.2.0"

__all__ = [
    "CORE_CODES",
    "ContractSource",
    "OUTPUT_VIOLATION_LIMIT",
    "OutputUpdate",
    "PartialOutput",
    "SourceMap",
    "__version__",
    "compile_interaction",
    "diff_contracts",
    "explain_contract",
    "is_date",
    "is_date_time",
    "is_semver",
    "output_violations",
    "output_valid",
    "parse_contract",
    "parse_json_value",
    "parse_lock",
    "parse_manifest",
    "parse_node_list",
    "parse_render_request",
    "parse_translation_bundle",
    "render_messages",
    "required_capabilities",
    "resolve_tool_contract_refs",
    "strict_json_equal",
    "validate_contract",
    "validate_output",
    "validate_tool_answer",
    "validate_values",
]


if not TYPE_CHECKING:  # type checkers see the imports above, and no module __getattr__
    _LAZY = {
        "templiqx_contracts": (
            "is_date",
            "is_date_time",
        ),
        "templiqx_core.codes": ("CORE_CODES",),
        "templiqx_core.compile": (
            "compile_interaction",
            "required_capabilities",
        ),
        "templiqx_core.diff": ("diff_contracts",),
        "templiqx_core.equality": ("strict_json_equal",),
        "templiqx_core.explain": ("explain_contract",),
        "templiqx_core.parse": (
            "parse_contract",
            "parse_json_value",
            "parse_lock",
            "parse_manifest",
            "parse_node_list",
            "parse_render_request",
            "parse_translation_bundle",
        ),
        "templiqx_core.partial_output": (
            "OutputUpdate",
            "PartialOutput",
        ),
        "templiqx_core.render": ("render_messages",),
        "templiqx_core.schema": (
            "OUTPUT_VIOLATION_LIMIT",
            "output_violations",
        ),
        "templiqx_core.semver": ("is_semver",),
        "templiqx_core.sources": (
            "ContractSource",
            "SourceMap",
        ),
        "templiqx_core.tool_refs": ("resolve_tool_contract_refs",),
        "templiqx_core.tools": (
            "output_valid",
            "validate_tool_answer",
        ),
        "templiqx_core.validate": ("validate_contract",),
        "templiqx_core.values": (
            "validate_output",
            "validate_values",
        ),
    }
    _EXPORTS = {name: module for module, names in _LAZY.items() for name in names}

    def __getattr__(name):
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__():
        return list(__all__)
