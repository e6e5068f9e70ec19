"""Every ``TQX_*`` diagnostic code the portable core can emit, with a one-line fix hint.

The diagnostic reference in the documentation is generated from :data:`CORE_CODES`, and the
test suite checks that each code is produced by at least one test, so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from templiqx_contracts import (
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_CHOICE,
    TOOL_CALL_REQUIRED,
    TOOL_CALL_SHAPE,
    TOOL_CALL_UNDECLARED,
    Diagnostic,
)

__all__ = [
    "API_VERSION",
    "BOOLEAN_EMPTY",
    "BOOLEAN_TYPE",
    "CANCELLED",
    "CAPABILITY_UNKNOWN",
    "CAPABILITY_UNSUPPORTED",
    "COMPONENT_ARGUMENT_MISSING",
    "COMPONENT_ARGUMENT_TYPE",
    "COMPONENT_ARGUMENT_UNKNOWN",
    "COMPONENT_CYCLE",
    "COMPONENT_MISSING",
    "COMPONENT_SCHEMA_INVALID",
    "CONDITION_TYPE",
    "CONTENT_TOO_DEEP",
    "CORE_CODES",
    "EXTENSION_CAPABILITY",
    "EXTENSION_NAMESPACE",
    "EXTENSION_SCHEMA_INVALID",
    "EXTENSION_UNSUPPORTED",
    "EXTENSION_VALUE",
    "FIELD_SCHEMA_INVALID",
    "FILTER_INPUT",
    "FILTER_TYPE",
    "FOR_EACH_TYPE",
    "FUEL_EXHAUSTED",
    "INCLUDE_UNEXPANDED",
    "INTERPOLATION_TYPE",
    "INVALID_ID",
    "LOCAL_INVALID",
    "MESSAGES_EMPTY",
    "OUTPUT_SCHEMA",
    "OUTPUT_SCHEMA_INVALID",
    "OUTPUT_SCHEMA_UNSATISFIABLE",
    "PARSE_DUPLICATE_KEY",
    "PARSE_ENCODING",
    "PARSE_LIMIT",
    "PARSE_MERGE_KEY",
    "PARSE_MISSING_FIELD",
    "PARSE_TAB",
    "PARSE_TAG",
    "PARSE_UNKNOWN_FILTER",
    "PARSE_UNKNOWN_KIND",
    "PARSE_UNKNOWN_ROLE",
    "PARSE_WRONG_TYPE",
    "PARSE_YAML",
    "REF_UNKNOWN",
    "RENDER_TOO_LARGE",
    "SCHEMA_BOUNDED_SUBSET",
    "SCHEMA_CONST_CONTRADICTION",
    "SCHEMA_CONST_ENUM_CONTRADICTION",
    "SCHEMA_CONST_IMPOSSIBLE",
    "SCHEMA_ENUM_IMPOSSIBLE",
    "SCHEMA_FORMAT_UNSUPPORTED",
    "SCHEMA_IMPOSSIBLE_BOUNDS",
    "SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS",
    "SCHEMA_ITEMS_REQUIRED",
    "SCHEMA_KEYWORD_TYPE",
    "SCHEMA_KEYWORD_UNSUPPORTED",
    "SCHEMA_REQUIRED_UNKNOWN",
    "SCHEMA_TYPE_REQUIRED",
    "SCHEMA_TYPE_UNSUPPORTED",
    "TOOL_ARGUMENTS_TYPE",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_CHOICE",
    "TOOL_CALL_REQUIRED",
    "TOOL_CALL_SHAPE",
    "TOOL_CALL_UNDECLARED",
    "TOOL_CHOICE_INVALID",
    "TOOL_CONTRACT_REF_UNRESOLVED",
    "TOOL_DESCRIPTION_EMPTY",
    "TOOL_NAME_DUPLICATE",
    "TOOL_NAME_INVALID",
    "TOOL_OUTPUT_RESERVED",
    "TOOL_SCHEMA_INVALID",
    "TRANSLATION_KEY",
    "TRANSLATION_MISSING",
    "VALUE_MISSING",
    "VALUE_NOT_JSON",
    "VALUE_REQUIRED",
    "VALUE_SCHEMA",
    "VALUE_UNKNOWN",
    "VERSION_INVALID",
    "problem",
]

# parse
PARSE_YAML: Final = "TQX_PARSE_YAML"
PARSE_TAB: Final = "TQX_PARSE_TAB"
PARSE_ENCODING: Final = "TQX_PARSE_ENCODING"
PARSE_DUPLICATE_KEY: Final = "TQX_PARSE_DUPLICATE_KEY"
PARSE_MISSING_FIELD: Final = "TQX_PARSE_MISSING_FIELD"
PARSE_WRONG_TYPE: Final = "TQX_PARSE_WRONG_TYPE"
PARSE_UNKNOWN_KIND: Final = "TQX_PARSE_UNKNOWN_KIND"
PARSE_UNKNOWN_FILTER: Final = "TQX_PARSE_UNKNOWN_FILTER"
PARSE_UNKNOWN_ROLE: Final = "TQX_PARSE_UNKNOWN_ROLE"
PARSE_TAG: Final = "TQX_PARSE_TAG"
PARSE_MERGE_KEY: Final = "TQX_PARSE_MERGE_KEY"
PARSE_LIMIT: Final = "TQX_PARSE_LIMIT"
# contract header
API_VERSION: Final = "TQX_API_VERSION"
INVALID_ID: Final = "TQX_INVALID_ID"
VERSION_INVALID: Final = "TQX_VERSION_INVALID"
MESSAGES_EMPTY: Final = "TQX_MESSAGES_EMPTY"
# schemas
OUTPUT_SCHEMA_INVALID: Final = "TQX_OUTPUT_SCHEMA_INVALID"
OUTPUT_SCHEMA_UNSATISFIABLE: Final = "TQX_OUTPUT_SCHEMA_UNSATISFIABLE"
FIELD_SCHEMA_INVALID: Final = "TQX_FIELD_SCHEMA_INVALID"
COMPONENT_SCHEMA_INVALID: Final = "TQX_COMPONENT_SCHEMA_INVALID"
# bounded subset
SCHEMA_BOUNDED_SUBSET: Final = "TQX_SCHEMA_BOUNDED_SUBSET"
SCHEMA_KEYWORD_UNSUPPORTED: Final = "TQX_SCHEMA_KEYWORD_UNSUPPORTED"
SCHEMA_TYPE_REQUIRED: Final = "TQX_SCHEMA_TYPE_REQUIRED"
SCHEMA_TYPE_UNSUPPORTED: Final = "TQX_SCHEMA_TYPE_UNSUPPORTED"
SCHEMA_ENUM_IMPOSSIBLE: Final = "TQX_SCHEMA_ENUM_IMPOSSIBLE"
SCHEMA_CONST_IMPOSSIBLE: Final = "TQX_SCHEMA_CONST_IMPOSSIBLE"
SCHEMA_CONST_ENUM_CONTRADICTION: Final = "TQX_SCHEMA_CONST_ENUM_CONTRADICTION"
SCHEMA_CONST_CONTRADICTION: Final = "TQX_SCHEMA_CONST_CONTRADICTION"
SCHEMA_KEYWORD_TYPE: Final = "TQX_SCHEMA_KEYWORD_TYPE"
SCHEMA_REQUIRED_UNKNOWN: Final = "TQX_SCHEMA_REQUIRED_UNKNOWN"
SCHEMA_ITEMS_REQUIRED: Final = "TQX_SCHEMA_ITEMS_REQUIRED"
SCHEMA_FORMAT_UNSUPPORTED: Final = "TQX_SCHEMA_FORMAT_UNSUPPORTED"
SCHEMA_IMPOSSIBLE_BOUNDS: Final = "TQX_SCHEMA_IMPOSSIBLE_BOUNDS"
SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS: Final = "TQX_SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS"
# expressions and nodes
REF_UNKNOWN: Final = "TQX_REF_UNKNOWN"
BOOLEAN_EMPTY: Final = "TQX_BOOLEAN_EMPTY"
BOOLEAN_TYPE: Final = "TQX_BOOLEAN_TYPE"
INCLUDE_UNEXPANDED: Final = "TQX_INCLUDE_UNEXPANDED"
INTERPOLATION_TYPE: Final = "TQX_INTERPOLATION_TYPE"
FILTER_TYPE: Final = "TQX_FILTER_TYPE"
CONDITION_TYPE: Final = "TQX_CONDITION_TYPE"
LOCAL_INVALID: Final = "TQX_LOCAL_INVALID"
FOR_EACH_TYPE: Final = "TQX_FOR_EACH_TYPE"
CONTENT_TOO_DEEP: Final = "TQX_CONTENT_TOO_DEEP"
# components
COMPONENT_MISSING: Final = "TQX_COMPONENT_MISSING"
COMPONENT_ARGUMENT_MISSING: Final = "TQX_COMPONENT_ARGUMENT_MISSING"
COMPONENT_ARGUMENT_UNKNOWN: Final = "TQX_COMPONENT_ARGUMENT_UNKNOWN"
COMPONENT_ARGUMENT_TYPE: Final = "TQX_COMPONENT_ARGUMENT_TYPE"
COMPONENT_CYCLE: Final = "TQX_COMPONENT_CYCLE"
# extensions
EXTENSION_NAMESPACE: Final = "TQX_EXTENSION_NAMESPACE"
EXTENSION_CAPABILITY: Final = "TQX_EXTENSION_CAPABILITY"
EXTENSION_SCHEMA_INVALID: Final = "TQX_EXTENSION_SCHEMA_INVALID"
EXTENSION_VALUE: Final = "TQX_EXTENSION_VALUE"
TOOL_CONTRACT_REF_UNRESOLVED: Final = "TQX_TOOL_CONTRACT_REF_UNRESOLVED"
# values and capabilities
VALUE_REQUIRED: Final = "TQX_VALUE_REQUIRED"
VALUE_SCHEMA: Final = "TQX_VALUE_SCHEMA"
VALUE_UNKNOWN: Final = "TQX_VALUE_UNKNOWN"
CAPABILITY_UNSUPPORTED: Final = "TQX_CAPABILITY_UNSUPPORTED"
CAPABILITY_UNKNOWN: Final = "TQX_CAPABILITY_UNKNOWN"
EXTENSION_UNSUPPORTED: Final = "TQX_EXTENSION_UNSUPPORTED"
# rendering
VALUE_MISSING: Final = "TQX_VALUE_MISSING"
VALUE_NOT_JSON: Final = "TQX_VALUE_NOT_JSON"
FILTER_INPUT: Final = "TQX_FILTER_INPUT"
TRANSLATION_MISSING: Final = "TQX_TRANSLATION_MISSING"
TRANSLATION_KEY: Final = "TQX_TRANSLATION_KEY"
RENDER_TOO_LARGE: Final = "TQX_RENDER_TOO_LARGE"
FUEL_EXHAUSTED: Final = "TQX_FUEL_EXHAUSTED"
CANCELLED: Final = "TQX_CANCELLED"
# output
OUTPUT_SCHEMA: Final = "TQX_OUTPUT_SCHEMA"
# tools (declarations: templiqx_core.tools; answers: templiqx_contracts.tools)
TOOL_NAME_INVALID: Final = "TQX_TOOL_NAME_INVALID"
TOOL_NAME_DUPLICATE: Final = "TQX_TOOL_NAME_DUPLICATE"
TOOL_DESCRIPTION_EMPTY: Final = "TQX_TOOL_DESCRIPTION_EMPTY"
TOOL_SCHEMA_INVALID: Final = "TQX_TOOL_SCHEMA_INVALID"
TOOL_ARGUMENTS_TYPE: Final = "TQX_TOOL_ARGUMENTS_TYPE"
TOOL_CHOICE_INVALID: Final = "TQX_TOOL_CHOICE_INVALID"
TOOL_OUTPUT_RESERVED: Final = "TQX_TOOL_OUTPUT_RESERVED"

_HINTS: dict[str, str] = {
    PARSE_YAML: "Fix the YAML syntax at the reported line and column (indent with spaces, "
    "close every quote and bracket, write `key: value`), and use only the fields the strict "
    "Templiqx YAML schema declares (the message lists them).",
    PARSE_TAB: "Indent with spaces: YAML does not allow tabs in indentation (set your editor "
    "to insert spaces in .yaml files).",
    PARSE_ENCODING: "Save the file as UTF-8 (the message names the first byte that is not).",
    PARSE_DUPLICATE_KEY: "Keep one entry per key: remove or rename the repeated key (a "
    "duplicate key is an error everywhere, never last-one-wins).",
    PARSE_MISSING_FIELD: "Add the field the message names to that mapping.",
    PARSE_WRONG_TYPE: "Give the value the type the message names (a string, a list, a mapping, "
    "a boolean ...); quote a value to keep it a string.",
    PARSE_UNKNOWN_KIND: "Use a kind the message lists: content nodes are text, interpolate, "
    "when, for_each, component and include; expressions are ref, literal, equals, not, and "
    "and or.",
    PARSE_UNKNOWN_FILTER: "Use a filter the message lists: trim, lower, upper, json, "
    "format_date, format_number, format_currency or translate.",
    PARSE_UNKNOWN_ROLE: "Use one of the roles system, developer, user or assistant.",
    PARSE_TAG: "Remove the tag: templiqx reads YAML's core tags only (!!str, !!int, !!float, "
    "!!bool, !!null, !!map, !!seq) and never builds objects from tags.",
    PARSE_MERGE_KEY: "Write the fields out instead of `<<: *anchor`: YAML 1.2 has no merge "
    "key (an alias of a whole value, `key: *anchor`, still works).",
    PARSE_LIMIT: "Make the document smaller or flatter: the message names the reader limit it "
    "exceeds (MAX_DOCUMENT_BYTES, MAX_NESTING_DEPTH, ALIAS_EXPANSION_FACTOR, MAX_EXPANDED_NODES, "
    "MAX_EXPANDED_BYTES).",
    API_VERSION: "Set `api_version: templiqx/v1alpha1`.",
    INVALID_ID: "Use only ASCII letters, digits, '.', '_' and '-' in the contract id.",
    VERSION_INVALID: "Use a SemVer 2.0 version such as `1.0.0` or `1.2.0-rc.1` (no `v` prefix).",
    MESSAGES_EMPTY: "Add at least one message under `messages:`.",
    OUTPUT_SCHEMA_INVALID: "Make `output_schema` a valid Draft 2020-12 JSON Schema.",
    OUTPUT_SCHEMA_UNSATISFIABLE: "Replace the `false` output schema with one that accepts "
    "the expected output.",
    FIELD_SCHEMA_INVALID: "Make the input or context field's `schema` a valid Draft 2020-12 "
    "JSON Schema.",
    COMPONENT_SCHEMA_INVALID: "Make the component parameter's `schema` a valid Draft 2020-12 "
    "JSON Schema.",
    SCHEMA_BOUNDED_SUBSET: "Write the schema as a JSON object (boolean schemas are not allowed).",
    SCHEMA_KEYWORD_UNSUPPORTED: "Remove the keyword; only type, properties, required, "
    "additionalProperties (boolean), items, enum, const, format, min/maxLength, minimum, "
    "maximum, exclusiveMinimum, exclusiveMaximum, min/maxItems, uniqueItems, description and "
    "title are allowed.",
    SCHEMA_TYPE_REQUIRED: "Give the schema exactly one `type` string.",
    SCHEMA_TYPE_UNSUPPORTED: "Use one of null, boolean, integer, number, string, array, object.",
    SCHEMA_ENUM_IMPOSSIBLE: "Make `enum` list at least one value of the declared type that the "
    "other constraints accept.",
    SCHEMA_CONST_IMPOSSIBLE: "Make `const` a value of the declared type.",
    SCHEMA_CONST_ENUM_CONTRADICTION: "Make `const` one of the `enum` values (integers and "
    "floats differ: 1 is not 1.0), or drop one of them.",
    SCHEMA_CONST_CONTRADICTION: "Make `const` satisfy the schema's other constraints.",
    SCHEMA_KEYWORD_TYPE: "Use `properties` only on object schemas and `items` only on array "
    "schemas.",
    SCHEMA_REQUIRED_UNKNOWN: "Declare every `required` name under `properties`.",
    SCHEMA_ITEMS_REQUIRED: "Give the array schema an `items` schema.",
    SCHEMA_FORMAT_UNSUPPORTED: "Use `format: date` or `format: date-time`, on string schemas only.",
    SCHEMA_IMPOSSIBLE_BOUNDS: "Make every lower bound smaller than its upper bound.",
    SCHEMA_IMPOSSIBLE_INTEGER_BOUNDS: "Widen the bounds so that at least one integer fits.",
    REF_UNKNOWN: "Reference a declared field (`inputs.x`, `context.y`), a loop item or a "
    "component parameter, following declared properties and array items.",
    BOOLEAN_EMPTY: "Give `and`/`or` at least one operand.",
    BOOLEAN_TYPE: "Use boolean operands only (no truthiness): compare with `equals` or "
    "reference a boolean field.",
    INCLUDE_UNEXPANDED: "Load the contract through the package loader, which expands "
    "`include` nodes.",
    INTERPOLATION_TYPE: "Interpolate a scalar of known type, or add the `json` filter for "
    "arrays, objects and null.",
    FILTER_TYPE: "Apply trim, lower and upper only to string expressions.",
    CONDITION_TYPE: "Make the `when` condition a boolean expression.",
    LOCAL_INVALID: "Name the `for_each` item with ASCII letters, digits, '.', '_' or '-'.",
    FOR_EACH_TYPE: "Iterate over an array expression.",
    CONTENT_TOO_DEEP: "Flatten the structure: content, component chains, schemas or values "
    "nest deeper than the core can process.",
    COMPONENT_MISSING: "Define the component under `components:` or remove the reference.",
    COMPONENT_ARGUMENT_MISSING: "Pass every required component argument in `with:`.",
    COMPONENT_ARGUMENT_UNKNOWN: "Remove the argument or declare it as a component parameter.",
    COMPONENT_ARGUMENT_TYPE: "Pass an argument whose type matches the parameter's schema.",
    COMPONENT_CYCLE: "Break the cycle: a component may not use itself, directly or indirectly.",
    EXTENSION_NAMESPACE: "Use a namespaced extension key such as `vendor.option`.",
    EXTENSION_CAPABILITY: "Use a non-empty capability made of ASCII letters, digits, '.', "
    "'_', ':' or '-'.",
    EXTENSION_SCHEMA_INVALID: "Make the extension's `schema` a valid Draft 2020-12 JSON Schema.",
    EXTENSION_VALUE: "Make the extension's `value` satisfy its `schema`.",
    TOOL_CONTRACT_REF_UNRESOLVED: "Reference a tool contract listed in the manifest's "
    "`tool_contracts` and pin its current fingerprint.",
    VALUE_REQUIRED: "Supply the required value in the request.",
    VALUE_SCHEMA: "Supply a value that satisfies the field's schema.",
    VALUE_UNKNOWN: "Remove the value or declare the field in the contract.",
    CAPABILITY_UNSUPPORTED: "Compile for a target that offers the capability, or remove it "
    "from `capabilities`.",
    CAPABILITY_UNKNOWN: "Correct the capability's name to the one the message suggests (the "
    "capabilities templiqx's runtimes declare are structured_output, text, tool_calling, "
    "streaming and chat_completion; a runtime's own capability is best namespaced, vendor.x).",
    EXTENSION_UNSUPPORTED: "Compile for a target that offers the extension's capability, or "
    "remove the extension.",
    VALUE_MISSING: "Supply the optional value, or guard its use with a `when` condition.",
    VALUE_NOT_JSON: "Pass JSON data only: finite numbers, 64-bit integers, strings, booleans, "
    "null, lists and string-keyed objects.",
    FILTER_INPUT: "Give the filter the input it expects (ISO date string for format_date, a "
    "number for format_number/format_currency, a string key for translate).",
    TRANSLATION_MISSING: "List translation bundles in the package manifest (`translations:`).",
    TRANSLATION_KEY: "Add the key to the locale's or the fallback's translation bundle.",
    RENDER_TOO_LARGE: "Render less: shorten the lists a `for_each` walks and the values it "
    "repeats (MAX_RENDERED_BYTES, 8 MiB of message text; MAX_COMPILED_BYTES, 16 MiB per "
    "compiled request).",
    FUEL_EXHAUSTED: "Do less work per call: shorten the lists that nested `for_each` loops "
    "walk, stop components from calling each other many times over, include fewer partials; "
    "or let the host raise the budget (TEMPLIQX_RENDER_FUEL, default 1,000,000 steps, at most "
    "50,000,000).",
    CANCELLED: "The caller cancelled the call (or its deadline passed) while it was being "
    "worked on; nothing was written. Call again if the answer is still wanted.",
    OUTPUT_SCHEMA: "Produce output that satisfies the contract's `output_schema`.",
    TOOL_NAME_INVALID: "Name the tool with 1 to 64 ASCII letters, digits, '_' or '-' (the "
    "OpenAI function-name rule).",
    TOOL_NAME_DUPLICATE: "Give every tool under `tools:` its own name.",
    TOOL_DESCRIPTION_EMPTY: "Describe what the tool does and when to call it: the model "
    "decides from the description.",
    TOOL_SCHEMA_INVALID: "Make the tool's `arguments` a valid Draft 2020-12 JSON Schema.",
    TOOL_ARGUMENTS_TYPE: "Give the tool's `arguments` schema `type: object` (a call's "
    "arguments are a JSON object).",
    TOOL_CHOICE_INVALID: "Set `tool_choice` to auto, required, none or `{tool: NAME}` naming a "
    "declared tool; `tool_choice` and `parallel_tool_calls` need declared tools.",
    TOOL_OUTPUT_RESERVED: "Rename the output schema's top-level `tool_calls` property: in a "
    "contract that declares tools it marks a tool-call answer.",
    TOOL_CALL_SHAPE: 'Answer tool calls as {"tool_calls": [{"id": ..., "name": ..., '
    '"arguments": {...}}]} with at least one call.',
    TOOL_CALL_UNDECLARED: "Call only the tools the contract declares (or declare the tool).",
    TOOL_CALL_ARGUMENTS: "Make the call's arguments satisfy the tool's `arguments` schema.",
    TOOL_CALL_CHOICE: "Call tools only as the contract's `tool_choice` and "
    "`parallel_tool_calls` allow.",
    TOOL_CALL_REQUIRED: "The contract's `tool_choice` forces a tool call: answer with tool "
    "calls, or relax `tool_choice`.",
}

CORE_CODES: Mapping[str, str] = MappingProxyType(dict(sorted(_HINTS.items())))
"""Every code the core emits, mapped to a one-line fix hint (sorted by code)."""


def problem(code: str, message: str, json_pointer: str = "") -> Diagnostic:
    """An error diagnostic from the core: ``message`` says what is wrong, ``help`` how to fix it."""
    return Diagnostic.error(code, message, json_pointer, help=_HINTS.get(code))
