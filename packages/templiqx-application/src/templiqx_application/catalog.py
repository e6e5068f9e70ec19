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
no other parameter accepts ``null`` except ``json`` ones, for which ``null`` is a value. A
``string`` parameter may list its ``choices`` (JSON Schema: ``enum``); any other value is refused.

:func:`bind_arguments` checks a mapping of arguments against a spec strictly: unknown names,
missing required ones and values of the wrong type each yield one diagnostic whose pointer
names the argument (``/<name>``). Three limits keep every call cheap to check and to serve: an
argument may be at most :data:`MAX_ARGUMENT_BYTES` long as UTF-8 JSON text, hold at most
:data:`MAX_ARGUMENT_NODES` values and object keys, and nest at most :data:`MAX_ARGUMENT_DEPTH`
levels deep; beyond any of them it is refused before any work is done. (Eight megabytes of
``[{}, {}, ...]`` are 2.8 million values: hundreds of MiB and seconds to decode, copy and
check, where eight megabytes of text cost eight.)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from templiqx_application.diagnostics import error
from templiqx_contracts import Diagnostic, quote_input
from templiqx_core.limits import MAX_DOCUMENT_BYTES

__all__ = [
    "CATALOG",
    "CATALOG_VIEWS",
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_ARGUMENT_NODES",
    "OPERATION_NAMES",
    "OperationSpec",
    "ParameterSpec",
    "ParameterType",
    "bind_arguments",
    "catalog_result",
    "operation_spec",
]

ParameterType: TypeAlias = Literal["string", "boolean", "string_list", "object", "json"]

MAX_ARGUMENT_BYTES: Final = MAX_DOCUMENT_BYTES
"""Largest argument, counted as UTF-8 JSON text (8 MiB, the size limit of YAML documents)."""

MAX_ARGUMENT_DEPTH: Final = 256
"""Deepest nesting of objects and arrays inside one argument."""

MAX_ARGUMENT_NODES: Final = 200_000
"""Most values and object keys one argument may hold (every nested value and key counted).

Surfaces that decode JSON text refuse a larger document before decoding it
(:func:`~templiqx_contracts.json_node_estimate`)."""


class ParameterSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """One parameter of an operation.

    ``choices`` (a ``string`` parameter only) lists the values it accepts; it is left out of
    the catalog's JSON for parameters that take any string.
    """

    name: str
    type: ParameterType
    required: bool
    default: Any = None
    description: str
    choices: list[str] | UnsetType = UNSET


class OperationSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """One operation of the catalog: its name, a human title, a one-line summary, its
    parameters, and what calling it does to the world around it.

    The four behaviour flags are what an agent host reads to decide what it may call without
    asking (MCP's tool annotations carry them unchanged):

    * ``read_only``: the operation changes nothing in the packages root or the workspace;
    * ``destructive``: a write that may replace or remove what is there (meaningful only when
      ``read_only`` is false; a write that only adds is not destructive);
    * ``idempotent``: calling it again with the same arguments has no further effect (every
      compare-and-swap write is: the second call is refused by the token the first one spent);
    * ``open_world``: it may reach outside the local packages and workspace. Only
      ``execute_contract`` does, and only on a live runtime: the catalog, which knows no
      runtime, says ``True``; a surface that knows its runtime is offline (the deterministic
      fake) narrows it.

    The defaults are the cautious ones (MCP's own): a write that may destroy, not idempotent,
    open-world. Every operation of :data:`CATALOG` states all four.
    """

    name: str
    title: str = ""
    summary: str
    parameters: list[ParameterSpec]
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True

    @property
    def display_title(self) -> str:
        """``title``, or the name in words when the spec has none (``Summarise package``)."""
        return self.title or self.name.replace("_", " ").capitalize()


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
_INPUTS = _opt(
    "inputs",
    "object",
    {},
    "Input values by name, as the contract declares them (explain_contract lists the names; "
    "inspect_contract shows each one's type).",
)
_CONTEXT = _opt(
    "context",
    "object",
    {},
    "Context values by name, as the contract declares them (explain_contract lists the names; "
    "inspect_contract shows each one's type).",
)
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
_MANIFEST_TOKEN = (
    "fingerprints.package of the package's last write (create, update, sign), or "
    "fingerprints.manifest of export_package_identity (not fingerprints.package_identity)"
)
_CONTRACT_TOKEN = "fingerprints.contract of inspect_contract or of the contract's last write"

CATALOG_VIEWS: tuple[str, ...] = ("full", "names")
"""What the ``catalog`` operation answers: every operation described (``full``, the default of
the Python API, the CLI and MCP), or only the names in catalog order (``names``, the default of
the HTTP route, as the reference answers)."""

_VIEW = ParameterSpec(
    name="view",
    type="string",
    required=False,
    default="full",
    choices=list(CATALOG_VIEWS),
    description="full: every operation with its title, summary, parameters and behaviour; "
    "names: only the operation names, in catalog order.",
)


def _op(
    name: str, title: str, summary: str, *parameters: ParameterSpec, **behaviour: bool
) -> OperationSpec:
    return OperationSpec(
        name=name, title=title, summary=summary, parameters=list(parameters), **behaviour
    )


def _read(name: str, title: str, summary: str, *parameters: ParameterSpec) -> OperationSpec:
    """An operation that changes nothing and stays inside the packages and the workspace."""
    return _op(
        name,
        title,
        summary,
        *parameters,
        read_only=True,
        destructive=False,
        idempotent=True,
        open_world=False,
    )


def _write(
    name: str, title: str, summary: str, *parameters: ParameterSpec, destructive: bool
) -> OperationSpec:
    """A local write guarded by a compare-and-swap token or an existence check (idempotent)."""
    return _op(
        name,
        title,
        summary,
        *parameters,
        read_only=False,
        destructive=destructive,
        idempotent=True,
        open_world=False,
    )


CATALOG: tuple[OperationSpec, ...] = (
    _read(
        "catalog",
        "List operations",
        "List the operations this service offers, with their parameters (view=names: only "
        "their names).",
        _VIEW,
    ),
    _read(
        "discover_packages",
        "Discover packages",
        "List every package under the root, sorted by name and version.",
    ),
    _write(
        "create_package",
        "Create package",
        "Create an empty package: a manifest and its inventory folders.",
        _req("name", "Name of the new package."),
        _req("version", "Semantic version of the new package, e.g. 0.1.0."),
        destructive=False,
    ),
    _write(
        "update_package",
        "Update package",
        "Change a package's version or description (compare-and-swap); clears signatures.",
        _PACKAGE,
        _req("expected_fingerprint", f"The current manifest fingerprint: {_MANIFEST_TOKEN}."),
        _opt("version", "string", None, "New semantic version."),
        _opt("description", "string", None, "New description."),
        destructive=True,
    ),
    _write(
        "delete_package",
        "Delete package",
        "Delete a package (compare-and-swap); refused with dependents or untracked files.",
        _PACKAGE,
        _req("expected_fingerprint", f"The current manifest fingerprint: {_MANIFEST_TOKEN}."),
        destructive=True,
    ),
    _read(
        "export_package_identity",
        "Export package identity",
        "The package identity: the normalized manifest and the SHA-256 of every artifact.",
        _PACKAGE,
    ),
    _write(
        "sign_package",
        "Sign package",
        "Sign the package identity with the key in TEMPLIQX_PACKAGE_SIGNING_KEY.",
        _PACKAGE,
        _req("key_id", "Name of the signing key, stored beside the signature."),
        _req("expected_fingerprint", f"The current manifest fingerprint: {_MANIFEST_TOKEN}."),
        destructive=False,
    ),
    _read(
        "verify_package_trust",
        "Verify package trust",
        "Verify the package's signatures; strict mode also rejects an unsigned package.",
        _PACKAGE,
        _opt("strict", "boolean", False, "Reject a package without signatures."),
    ),
    _read(
        "inspect_contract",
        "Inspect contract",
        "The contract as loaded: parsed, tool references resolved, includes expanded.",
        _PACKAGE,
        _CONTRACT,
    ),
    _write(
        "put_contract",
        "Write contract",
        "Create a contract, or replace it (compare-and-swap), from YAML source.",
        _PACKAGE,
        _CONTRACT,
        _req("source", "The contract's YAML text."),
        _opt(
            "expected_fingerprint",
            "string",
            None,
            f"The current contract fingerprint: {_CONTRACT_TOKEN}; omit only when creating.",
        ),
        destructive=True,
    ),
    _write(
        "delete_contract",
        "Delete contract",
        "Delete a contract and its inventory entry (compare-and-swap).",
        _PACKAGE,
        _CONTRACT,
        _req("expected_fingerprint", f"The current contract fingerprint: {_CONTRACT_TOKEN}."),
        destructive=True,
    ),
    _read(
        "validate_contract",
        "Validate contract",
        "Check one contract without compiling it: parse it strictly, resolve its includes and "
        "tool references, and validate its fields, references and schemas; every problem is a "
        "diagnostic with its file, line and a fix.",
        _PACKAGE,
        _CONTRACT,
    ),
    _read(
        "validate_package",
        "Validate package",
        "Validate a whole package: manifest, inventory, contracts, lock and signatures.",
        _PACKAGE,
    ),
    _read(
        "compile_contract",
        "Compile contract",
        "Compile a contract and values into one provider-neutral interaction.",
        *_COMPILE_PARAMETERS,
    ),
    _read(
        "render_contract",
        "Render contract",
        "Render a contract's messages deterministically, without a model.",
        *_COMPILE_PARAMETERS,
    ),
    _op(
        "execute_contract",
        "Execute contract",
        "Compile and run one interaction on the composed runtime, optionally streaming.",
        *_COMPILE_PARAMETERS[:-1],
        _RUNTIME_CAPABILITIES,
        _opt(
            "fixture_output",
            "json",
            None,
            "The model output the deterministic fake runtime returns, as any JSON value (an "
            "object for structured output, a string for text); required by that runtime, "
            "ignored by live ones.",
        ),
        _opt(
            "stream",
            "boolean",
            False,
            "Stream the execution; the envelope's stream_events then hold the deltas and the "
            "terminal event, Complete or Failed (none when the call is refused before the "
            "runtime runs: bad values, a missing capability).",
        ),
        read_only=True,
        destructive=False,
        idempotent=False,
        open_world=True,
    ),
    _read(
        "list_workspace_artifacts",
        "List workspace artifacts",
        "List the artifacts in a package's workspace folder.",
        _PACKAGE,
        _WORKSPACE,
        _opt("prefix", "string", None, "Only artifacts at or below this relative path."),
    ),
    _read(
        "read_artifact",
        "Read artifact",
        "Read one workspace artifact, as UTF-8 text or base64.",
        _PACKAGE,
        _req("path", "Artifact path relative to the package's workspace folder."),
        _WORKSPACE,
    ),
    _write(
        "delete_workspace_artifact",
        "Delete workspace artifact",
        "Delete one workspace artifact (compare-and-swap on its SHA-256).",
        _PACKAGE,
        _req("path", "Artifact path relative to the package's workspace folder."),
        _req(
            "expected_fingerprint",
            "SHA-256 of the artifact's current bytes (read_artifact's fingerprints.artifact).",
        ),
        _WORKSPACE,
        destructive=True,
    ),
    _read(
        "test_package",
        "Test package",
        "Run every eval fixture of every contract on the deterministic fake runtime.",
        _PACKAGE,
        _EVAL_CAPABILITIES,
    ),
    _read(
        "list_evals",
        "List evals",
        "List every (contract, fixture) pair run_eval accepts, with the capabilities each "
        "contract requires.",
        _PACKAGE,
    ),
    _read(
        "run_eval",
        "Run eval",
        "Run one eval fixture on the deterministic fake runtime.",
        _PACKAGE,
        _CONTRACT,
        _req("fixture_id", "Id of the eval fixture inside the contract."),
        _EVAL_CAPABILITIES,
    ),
    _read(
        "diff_contract",
        "Compare contracts",
        "Compare two loaded contracts by fingerprint and list the parts that differ.",
        _req("left_package", "Package of the left contract."),
        _req("left_contract", "Id of the left contract."),
        _req("right_package", "Package of the right contract."),
        _req("right_contract", "Id of the right contract."),
    ),
    _read(
        "explain_contract",
        "Explain contract",
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


def catalog_result(view: str) -> list[OperationSpec] | list[str]:
    """The ``catalog`` operation's result for ``view`` (one of :data:`CATALOG_VIEWS`)."""
    if view == "names":
        return list(OPERATION_NAMES)
    return list(CATALOG)


_I64_MIN = -(1 << 63)
_U64_MAX = (1 << 64) - 1


class _TooLargeError(Exception):
    """The argument exceeds :data:`MAX_ARGUMENT_BYTES`; raised to stop walking it."""


class _TooManyError(Exception):
    """The argument exceeds :data:`MAX_ARGUMENT_NODES`; raised to stop walking it."""


class _Size:
    """The running JSON size of one argument (an estimate that never undercounts text), and
    how many values and keys it holds."""

    __slots__ = ("nodes", "total")

    def __init__(self) -> None:
        self.total = 0
        self.nodes = 0

    def add(self, amount: int) -> None:
        self.total += amount
        if self.total > MAX_ARGUMENT_BYTES:
            raise _TooLargeError

    def node(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_ARGUMENT_NODES:
            raise _TooManyError

    def text(self, value: str) -> None:
        # ASCII strings know they are ASCII in O(1); others are measured as UTF-8.
        self.add(2 + (len(value) if value.isascii() else len(value.encode("utf-8", "replace"))))


def _short(pointer: str) -> str:
    return pointer if len(pointer) <= 60 else pointer[:60] + "..."


def _json_problem(value: Any, where: str, size: _Size, depth: int = 0) -> str | None:
    """Why ``value`` is not a JSON value templiqx can fingerprint, or ``None``.

    Raises :class:`_TooLargeError` once the value's JSON text exceeds :data:`MAX_ARGUMENT_BYTES`.
    """
    return _walk(value, where, size, depth)


def _pointer(where: Any) -> str:
    """The JSON pointer of ``where``: the argument's pointer (a string), or ``(parent's where,
    key or index)``. Pointers are spelled out only for a problem (issue #33: building one per
    value cost a third of binding a large request)."""
    segments: list[str] = []
    while isinstance(where, tuple):
        where, segment = where
        segments.append(_escape(segment) if isinstance(segment, str) else str(segment))
    return "/".join([where, *reversed(segments)])


def _walk(value: Any, where: Any, size: _Size, depth: int) -> str | None:
    if depth > MAX_ARGUMENT_DEPTH:
        return (
            f"{_short(_pointer(where))} is nested more than {MAX_ARGUMENT_DEPTH} levels deep "
            "(MAX_ARGUMENT_DEPTH); flatten the value"
        )
    # size.node() and size.text(), inlined: this runs for every value of every argument.
    size.nodes += 1
    if size.nodes > MAX_ARGUMENT_NODES:
        raise _TooManyError
    kind = type(value)
    # The exact JSON types first (what decoded JSON holds); subclasses and other mappings and
    # sequences take the isinstance checks below, in the same order.
    if kind is str:
        size.total += 2 + (len(value) if value.isascii() else len(value.encode("utf-8", "replace")))
        if size.total > MAX_ARGUMENT_BYTES:
            raise _TooLargeError
        return None
    if kind is dict:
        return _members(value, where, size, depth)
    if kind is list:
        return _items(value, where, size, depth)
    if value is None or isinstance(value, bool):
        size.add(5)
        return None
    if isinstance(value, str):
        size.text(value)
        return None
    if isinstance(value, int):
        size.add(21)
        if value < _I64_MIN or value > _U64_MAX:
            return f"{_short(_pointer(where))} is an integer outside the 64-bit range"
        return None
    if isinstance(value, float):
        size.add(24)
        if math.isfinite(value):
            return None
        return f"{_short(_pointer(where))} is not a finite number"
    if isinstance(value, (list, tuple)):
        return _items(value, where, size, depth)
    if isinstance(value, Mapping):
        return _members(value, where, size, depth)
    return f"{_short(_pointer(where))} is a {type(value).__name__}, which is not a JSON value"


def _items(value: Any, where: Any, size: _Size, depth: int) -> str | None:
    size.add(2)
    for index, item in enumerate(value):
        size.add(1)
        problem = _walk(item, (where, index), size, depth + 1)
        if problem is not None:
            return problem
    return None


def _members(value: Any, where: Any, size: _Size, depth: int) -> str | None:
    size.add(2)
    for key, item in value.items():
        if not isinstance(key, str):
            return f"{_short(_pointer(where))} has a non-string key {_short(repr(key))}"
        size.node()
        size.text(key)
        size.add(2)
        problem = _walk(item, (where, key), size, depth + 1)
        if problem is not None:
            return problem
    return None


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def _plain(value: Any) -> Any:
    """A plain-JSON copy (tuples become lists, mappings become dicts)."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        return {key: _plain(item) for key, item in value.items()}
    if kind is list:
        return [_plain(item) for item in value]
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
    except _TooManyError:
        return None, (
            f"argument '{parameter.name}' holds more than {MAX_ARGUMENT_NODES} values and keys "
            "(MAX_ARGUMENT_NODES); pass fewer, larger values"
        )


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
            choices = parameter.choices
            if isinstance(choices, list) and value not in choices:
                listed = ", ".join(f"'{choice}'" for choice in choices)
                return None, (
                    f"argument '{parameter.name}' must be one of {listed}, not {quote_input(value)}"
                )
            return value, None
    elif kind == "boolean":
        if isinstance(value, bool):
            return value, None
    elif kind == "string_list":
        if isinstance(value, (list, tuple)):
            size = _Size()
            for index, item in enumerate(value):
                if not isinstance(item, str):
                    return None, (
                        f"argument '{parameter.name}' must be {expected}, but item {index} is "
                        f"{_describe(item)}"
                    )
                size.text(item)
            return list(value), None
    elif kind == "json" or isinstance(value, Mapping):  # "object" takes only a mapping
        problem = _json_problem(value, pointer, _Size())
        if problem is None:
            return _plain(value), None
        return None, f"argument '{parameter.name}' is not valid JSON: {problem}"
    return None, f"argument '{parameter.name}' must be {expected}, not {_describe(value)}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
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
                f"operation '{spec.name}' has no parameter {quote_input(name)}",
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
