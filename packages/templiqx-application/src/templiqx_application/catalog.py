"""The operation catalog: what every surface offers, described well enough to generate it.

Each :class:`OperationSpec` names an operation, says what it does in one line and lists its
parameters with a small type vocabulary that maps directly onto click options and JSON Schema:

=============== ============================= ==========================================
type            Python value                  JSON Schema
=============== ============================= ==========================================
``string``      ``str``                       ``{"type": "string"}``
``boolean``     ``bool``                      ``{"type": "boolean"}``
``string_list`` ``list[str]``                 ``{"type": "array", "items": {"type": "string"}}``
``object``      ``dict[str, <JSON>]``         ``{"type": "object"}``
``json``        any JSON value                ``{}`` (anything)
=============== ============================= ==========================================

A parameter that is not ``required`` takes ``default`` when absent. An optional parameter whose
default is ``None`` also accepts an explicit ``null`` (JSON Schema: ``["string", "null"]``);
no other parameter accepts ``null`` except ``json`` ones, for which ``null`` is a value.

:func:`bind_arguments` checks a mapping of arguments against a spec strictly: unknown names,
missing required ones and values of the wrong type each yield one diagnostic whose pointer
names the argument (``/<name>``). Two limits keep every call cheap to check and to serve: an
argument may be at most :data:`MAX_ARGUMENT_BYTES` long as UTF-8 JSON text and nest at most
:data:`MAX_ARGUMENT_DEPTH` levels deep; beyond either it is refused before any work is done.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import msgspec

from templiqx_application.diagnostics import error
from templiqx_contracts import Diagnostic
from templiqx_core.limits import MAX_DOCUMENT_BYTES

__all__ = [
    "CATALOG",
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "OPERATION_NAMES",
    "OperationSpec",
    "ParameterSpec",
    "ParameterType",
    "bind_arguments",
    "operation_spec",
]

ParameterType: TypeAlias = Literal["string", "boolean", "string_list", "object", "json"]

MAX_ARGUMENT_BYTES: Final = MAX_DOCUMENT_BYTES
"""Largest argument, counted as UTF-8 JSON text (8 MiB, the size limit of YAML documents)."""

MAX_ARGUMENT_DEPTH: Final = 256
"""Deepest nesting of objects and arrays inside one argument."""


class ParameterSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """One parameter of an operation."""

    name: str
    type: ParameterType
    required: bool
    default: Any = None
    description: str


class OperationSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """One operation of the catalog: its name, a one-line summary and its parameters."""

    name: str
    summary: str
    parameters: list[ParameterSpec]


def _req(name: str, description: str, type_: ParameterType = "string") -> ParameterSpec:
    return ParameterSpec(name=name, type=type_, required=True, description=description)


def _opt(name: str, type_: ParameterType, default: Any, description: str) -> ParameterSpec:
    return ParameterSpec(
        name=name, type=type_, required=False, default=default, description=description
    )


_PACKAGE = _req("package", "Package name (a directory under the root).")
_CONTRACT = _req("contract", "Contract id (contracts/<id>.yaml in the package).")
_WORKSPACE = _opt(
    "workspace",
    "string",
    None,
    "Absolute workspace folder overriding the composed one for this call.",
)
_INPUTS = _opt("inputs", "object", {}, "Input values by name.")
_CONTEXT = _opt("context", "object", {}, "Context values by name.")
_CAPABILITIES = _opt(
    "capabilities",
    "string_list",
    [],
    "Capabilities the target offers, e.g. structured_output.",
)
_COMPILE_PARAMETERS = [_PACKAGE, _CONTRACT, _INPUTS, _CONTEXT, _CAPABILITIES]
_RUNTIME_CAPABILITIES = _opt(
    "capabilities",
    "string_list",
    None,
    "Capabilities the target offers, e.g. structured_output (default: the runtime's).",
)
_EVAL_CAPABILITIES = _opt(
    "capabilities",
    "string_list",
    None,
    "Capabilities the target offers, e.g. structured_output (default: the fake runtime's).",
)


def _op(name: str, summary: str, *parameters: ParameterSpec) -> OperationSpec:
    return OperationSpec(name=name, summary=summary, parameters=list(parameters))


CATALOG: tuple[OperationSpec, ...] = (
    _op("catalog", "List the operations this service offers, with their parameters."),
    _op("discover_packages", "List every package under the root, sorted by name and version."),
    _op(
        "create_package",
        "Create an empty package: a manifest and its inventory folders.",
        _req("name", "Name of the new package."),
        _req("version", "Semantic version of the new package, e.g. 0.1.0."),
    ),
    _op(
        "update_package",
        "Change a package's version or description (compare-and-swap); clears signatures.",
        _PACKAGE,
        _req("expected_fingerprint", "The manifest fingerprint the update is based on."),
        _opt("version", "string", None, "New semantic version."),
        _opt("description", "string", None, "New description."),
    ),
    _op(
        "delete_package",
        "Delete a package (compare-and-swap); refused with dependents or untracked files.",
        _PACKAGE,
        _req("expected_fingerprint", "The current manifest fingerprint."),
    ),
    _op(
        "export_package_identity",
        "The package identity: the normalized manifest and the SHA-256 of every artifact.",
        _PACKAGE,
    ),
    _op(
        "sign_package",
        "Sign the package identity with the key in TEMPLIQX_PACKAGE_SIGNING_KEY.",
        _PACKAGE,
        _req("key_id", "Name of the signing key, stored beside the signature."),
        _req(
            "expected_fingerprint",
            "The manifest fingerprint (export_package_identity's `manifest`).",
        ),
    ),
    _op(
        "verify_package_trust",
        "Verify the package's signatures; strict mode also rejects an unsigned package.",
        _PACKAGE,
        _opt("strict", "boolean", False, "Reject a package without signatures."),
    ),
    _op(
        "inspect_contract",
        "The contract as loaded: parsed, tool references resolved, includes expanded.",
        _PACKAGE,
        _CONTRACT,
    ),
    _op(
        "put_contract",
        "Create a contract, or replace it (compare-and-swap), from YAML source.",
        _PACKAGE,
        _CONTRACT,
        _req("source", "The contract's YAML text."),
        _opt(
            "expected_fingerprint",
            "string",
            None,
            "The current contract fingerprint (inspect_contract's); omit only when creating.",
        ),
    ),
    _op(
        "delete_contract",
        "Delete a contract and its inventory entry (compare-and-swap).",
        _PACKAGE,
        _CONTRACT,
        _req("expected_fingerprint", "The current contract fingerprint (inspect_contract's)."),
    ),
    _op("validate_contract", "Validate one contract.", _PACKAGE, _CONTRACT),
    _op(
        "validate_package",
        "Validate a whole package: manifest, inventory, contracts, lock and signatures.",
        _PACKAGE,
    ),
    _op(
        "compile_contract",
        "Compile a contract and values into one provider-neutral interaction.",
        *_COMPILE_PARAMETERS,
    ),
    _op(
        "render_contract",
        "Render a contract's messages deterministically, without a model.",
        *_COMPILE_PARAMETERS,
    ),
    _op(
        "execute_contract",
        "Compile and run one interaction on the composed runtime, optionally streaming.",
        *_COMPILE_PARAMETERS[:-1],
        _RUNTIME_CAPABILITIES,
        _opt(
            "fixture_output",
            "json",
            None,
            "Output the deterministic fake runtime returns (required by that runtime).",
        ),
        _opt(
            "stream",
            "boolean",
            False,
            "Stream the execution; the envelope's stream_events then end in Complete or Failed.",
        ),
    ),
    _op(
        "list_workspace_artifacts",
        "List the artifacts in a package's workspace folder.",
        _PACKAGE,
        _WORKSPACE,
        _opt("prefix", "string", None, "Only artifacts at or below this relative path."),
    ),
    _op(
        "read_artifact",
        "Read one workspace artifact, as UTF-8 text or base64.",
        _PACKAGE,
        _req("path", "Artifact path relative to the package's workspace folder."),
        _WORKSPACE,
    ),
    _op(
        "delete_workspace_artifact",
        "Delete one workspace artifact (compare-and-swap on its SHA-256).",
        _PACKAGE,
        _req("path", "Artifact path relative to the package's workspace folder."),
        _req("expected_fingerprint", "SHA-256 of the artifact's current bytes."),
        _WORKSPACE,
    ),
    _op(
        "test_package",
        "Run every eval fixture of every contract on the deterministic fake runtime.",
        _PACKAGE,
        _EVAL_CAPABILITIES,
    ),
    _op("list_evals", "List every (contract, fixture) pair run_eval accepts.", _PACKAGE),
    _op(
        "run_eval",
        "Run one eval fixture on the deterministic fake runtime.",
        _PACKAGE,
        _CONTRACT,
        _req("fixture_id", "Id of the eval fixture inside the contract."),
        _EVAL_CAPABILITIES,
    ),
    _op(
        "diff_contract",
        "Compare two loaded contracts by fingerprint and list the parts that differ.",
        _req("left_package", "Package of the left contract."),
        _req("left_contract", "Id of the left contract."),
        _req("right_package", "Package of the right contract."),
        _req("right_contract", "Id of the right contract."),
    ),
    _op(
        "explain_contract",
        "Explain a contract's inputs, context, capabilities and components, with fix hints.",
        _PACKAGE,
        _CONTRACT,
    ),
)

OPERATION_NAMES: tuple[str, ...] = tuple(spec.name for spec in CATALOG)

_BY_NAME: dict[str, OperationSpec] = {spec.name: spec for spec in CATALOG}


def operation_spec(name: str) -> OperationSpec | None:
    """The spec of an operation, or ``None`` when the catalog does not list it."""
    return _BY_NAME.get(name)


_I64_MIN = -(1 << 63)
_U64_MAX = (1 << 64) - 1


class _TooLargeError(Exception):
    """The argument exceeds :data:`MAX_ARGUMENT_BYTES`; raised to stop walking it."""


class _Size:
    """The running JSON size of one argument (an estimate that never undercounts text)."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> None:
        self.total += amount
        if self.total > MAX_ARGUMENT_BYTES:
            raise _TooLargeError

    def text(self, value: str) -> None:
        # ASCII strings know they are ASCII in O(1); others are measured as UTF-8.
        self.add(2 + (len(value) if value.isascii() else len(value.encode("utf-8", "replace"))))


def _short(pointer: str) -> str:
    return pointer if len(pointer) <= 60 else pointer[:60] + "..."


def _json_problem(value: Any, where: str, size: _Size, depth: int = 0) -> str | None:
    """Why ``value`` is not a JSON value templiqx can fingerprint, or ``None``.

    Raises :class:`_TooLargeError` once the value's JSON text exceeds :data:`MAX_ARGUMENT_BYTES`.
    """
    if depth > MAX_ARGUMENT_DEPTH:
        return (
            f"{_short(where)} is nested more than {MAX_ARGUMENT_DEPTH} levels deep "
            "(MAX_ARGUMENT_DEPTH); flatten the value"
        )
    if value is None or isinstance(value, bool):
        size.add(5)
        return None
    if isinstance(value, str):
        size.text(value)
        return None
    if isinstance(value, int):
        size.add(21)
        if value < _I64_MIN or value > _U64_MAX:
            return f"{where} is an integer outside the 64-bit range"
        return None
    if isinstance(value, float):
        size.add(24)
        return None if math.isfinite(value) else f"{where} is not a finite number"
    if isinstance(value, (list, tuple)):
        size.add(2)
        for index, item in enumerate(value):
            size.add(1)
            problem = _json_problem(item, f"{where}/{index}", size, depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, Mapping):
        size.add(2)
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has a non-string key {_short(repr(key))}"
            size.text(key)
            size.add(2)
            problem = _json_problem(item, f"{where}/{_escape(key)}", size, depth + 1)
            if problem is not None:
                return problem
        return None
    return f"{where} is a {type(value).__name__}, which is not a JSON value"


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def _plain(value: Any) -> Any:
    """A plain-JSON copy (tuples become lists, mappings become dicts)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


_TYPE_WORDS: dict[str, str] = {
    "string": "a string",
    "boolean": "a boolean",
    "string_list": "a list of strings",
    "object": "a JSON object",
    "json": "a JSON value",
}


def _too_large(parameter: ParameterSpec) -> str:
    return (
        f"argument '{parameter.name}' is larger than the {MAX_ARGUMENT_BYTES}-byte limit "
        "(MAX_ARGUMENT_BYTES); pass less data"
    )


def _check(parameter: ParameterSpec, value: Any) -> tuple[Any, str | None]:
    """The bound value, or a problem description."""
    try:
        return _check_value(parameter, value)
    except _TooLargeError:
        return None, _too_large(parameter)


def _check_value(parameter: ParameterSpec, value: Any) -> tuple[Any, str | None]:
    pointer = f"/{parameter.name}"
    expected = _TYPE_WORDS[parameter.type]
    if value is None and parameter.type != "json":
        if not parameter.required and parameter.default is None:
            return None, None
        return None, f"argument '{parameter.name}' must be {expected}, not null"
    kind = parameter.type
    if kind == "string":
        if isinstance(value, str):
            _Size().text(value)
            return value, None
    elif kind == "boolean":
        if isinstance(value, bool):
            return value, None
    elif kind == "string_list":
        if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
            size = _Size()
            for item in value:
                size.text(item)
            return list(value), None
    elif kind == "json" or isinstance(value, Mapping):  # "object" takes only a mapping
        problem = _json_problem(value, pointer, _Size())
        if problem is None:
            return _plain(value), None
        return None, f"argument '{parameter.name}' is not valid JSON: {problem}"
    return None, f"argument '{parameter.name}' must be {expected}, not {_describe(value)}"


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def bind_arguments(
    spec: OperationSpec, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Check ``arguments`` against ``spec``; return the bound keyword arguments or diagnostics.

    Defaults are filled in for absent optional parameters (fresh copies, never shared).
    """
    diagnostics: list[Diagnostic] = []
    known = {parameter.name for parameter in spec.parameters}
    for name in sorted(str(key) for key in arguments if key not in known):
        diagnostics.append(
            error(
                "TQX_ARGUMENT_UNKNOWN",
                f"operation '{spec.name}' has no parameter '{name}'",
                f"/{_escape(name)}",
                help=_parameter_help(spec),
            )
        )
    bound: dict[str, Any] = {}
    for parameter in spec.parameters:
        if parameter.name not in arguments:
            if parameter.required:
                diagnostics.append(
                    error(
                        "TQX_ARGUMENT_MISSING",
                        f"operation '{spec.name}' requires argument '{parameter.name}' "
                        f"({_TYPE_WORDS[parameter.type]})",
                        f"/{parameter.name}",
                    )
                )
            else:
                bound[parameter.name] = copy.deepcopy(parameter.default)
            continue
        value, problem = _check(parameter, arguments[parameter.name])
        if problem is not None:
            diagnostics.append(error("TQX_ARGUMENT_INVALID", problem, f"/{parameter.name}"))
        else:
            bound[parameter.name] = value
    return bound, diagnostics


def _parameter_help(spec: OperationSpec) -> str:
    if not spec.parameters:
        return f"'{spec.name}' takes no arguments"
    names = ", ".join(parameter.name for parameter in spec.parameters)
    return f"'{spec.name}' accepts: {names}"
