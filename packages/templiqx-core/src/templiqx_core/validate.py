"""``validate_contract``: static validation of a parsed contract, in a fixed order.

Every diagnostic has severity ``error`` and a JSON pointer built by plain concatenation (no
RFC 6901 escaping). Maps are visited in sorted key order and lists in order, so the list of
diagnostics is deterministic.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from templiqx_contracts import API_VERSION, Contract, Diagnostic, TypedComponent
from templiqx_contracts.lru import LRU, digest_key
from templiqx_core import codes
from templiqx_core.bounded import validate_bounded_schema
from templiqx_core.components import component_content, find_component_cycle, legacy_arguments
from templiqx_core.cost import minimum_steps
from templiqx_core.fuel import current_fuel, provably_exhausted
from templiqx_core.schema import commit_staged, compile_schema, staged_schemas, validate_instance
from templiqx_core.semver import is_semver
from templiqx_core.static_types import STRING_SCHEMA, ContentChecker, is_identifier
from templiqx_core.tools import check_tools

__all__ = ["validate_contract"]

_CAPABILITY = re.compile(r"[A-Za-z0-9._:-]+")

# Results are cached by the SHA-256 of the contract's msgpack bytes (which keep integer/float
# identity), as plain tuples, so that callers can never alter a cached diagnostic; at most
# 256 contracts and _RESULT_BYTES of diagnostic text in all (issue #18). Only a valid contract's
# result is kept, with the schemas its validation compiled (issue #29: nothing for a refusal).
_RESULT_BYTES: Final = 16 * 1024 * 1024
_Result = tuple[tuple[str, str, str], ...]


def _result_bytes(result: _Result) -> int:
    entry = 160  # the key, the tuple and the map's slot
    return entry + sum(
        64 + len(code) + len(message) + len(pointer) for code, message, pointer in result
    )


_results: LRU[bytes, _Result] = LRU(256, max_weight=_RESULT_BYTES, weigh=_result_bytes)
_encode_key: Final = msgspec.msgpack.Encoder().encode


def validate_contract(contract: Contract) -> list[Diagnostic]:
    """All static diagnostics of ``contract`` (empty when it is valid). Never raises.

    The last check is the work every render of the contract provably takes
    (:func:`~templiqx_core.cost.minimum_steps`) against the running call's fuel budget: a
    contract that cannot render within it is ``TQX_FUEL_EXHAUSTED`` before any request.
    """
    try:
        key: bytes | None = digest_key(_encode_key(contract))
    except (TypeError, ValueError, OverflowError):
        key = None
    cached = _results.get(key) if key is not None else None
    if cached is None:
        with staged_schemas() as staging:
            try:
                found = _validate(contract)
            except RecursionError:
                found = [
                    codes.problem(
                        codes.CONTENT_TOO_DEEP, "the contract nests too deeply to validate", ""
                    )
                ]
        cached = tuple((d.code, d.message, d.json_pointer or "") for d in found)
        if not cached and key is not None:
            commit_staged(staging)
            _results.put(key, cached)
    found = [codes.problem(code, message, pointer) for code, message, pointer in cached]
    found.extend(_work_problems(contract))
    return found


def _work_problems(contract: Contract) -> list[Diagnostic]:
    """``TQX_FUEL_EXHAUSTED`` when every render of ``contract`` needs more than the budget."""
    limit = current_fuel().limit
    try:
        _, message = minimum_steps(contract, limit)
    except RecursionError:
        return []  # nesting too deep: the cached checks already report it
    if message is None:
        return []
    return [provably_exhausted(limit, f"/messages/{message}/content")]


def _validate(contract: Contract) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    _check_header(contract, out)
    _check_output_schema(contract.output_schema, out)
    for scope, fields in (("inputs", contract.inputs), ("context", contract.context)):
        for name in sorted(fields):
            _check_schema(
                fields[name].schema,
                f"/{scope}/{name}/schema",
                codes.FIELD_SCHEMA_INVALID,
                f"invalid schema for '{name}': ",
                out,
            )
    checker = ContentChecker(contract, out)
    for index, message in enumerate(contract.messages):
        checker.check_nodes(message.content, f"/messages/{index}/content", {})
    _check_components(contract, checker, out)
    cycle = find_component_cycle(contract.components)
    if cycle is not None:
        out.append(
            codes.problem(
                codes.COMPONENT_CYCLE,
                f"component cycle includes '{cycle}'",
                f"/components/{cycle}",
            )
        )
    _check_extensions(contract, out)
    check_tools(contract, out)
    return out


def _check_header(contract: Contract, out: list[Diagnostic]) -> None:
    if contract.api_version != API_VERSION:
        out.append(codes.problem(codes.API_VERSION, "unsupported api_version", "/api_version"))
    if not is_identifier(contract.id):
        out.append(
            codes.problem(
                codes.INVALID_ID,
                "id must contain only ASCII letters, digits, '.', '_' or '-'",
                "/id",
            )
        )
    if not is_semver(contract.version):
        out.append(
            codes.problem(
                codes.VERSION_INVALID, "contract version must be semantic versioning", "/version"
            )
        )
    if not contract.messages:
        out.append(
            codes.problem(codes.MESSAGES_EMPTY, "at least one message is required", "/messages")
        )


def _check_schema(schema: Any, pointer: str, code: str, prefix: str, out: list[Diagnostic]) -> None:
    """The engine's verdict on ``schema`` (``code``), then the bounded-subset check.

    The engine's complaint is left out when the bounded check reports a problem at the very
    place the engine found one (``type: strng`` is reported once, by the clearer
    ``TQX_SCHEMA_TYPE_UNSUPPORTED``): the same mistake, not a second one.
    """
    engine = compile_schema(schema)
    bounded: list[Diagnostic] = []
    validate_bounded_schema(schema, pointer, bounded)
    if engine.error is not None:
        where = "".join(f"/{segment}" for segment in engine.error_at or ())
        if not any(d.json_pointer == pointer + where for d in bounded) or not where:
            out.append(codes.problem(code, prefix + engine.error, pointer))
    out.extend(bounded)


def _check_output_schema(schema: Any, out: list[Diagnostic]) -> None:
    _check_schema(schema, "/output_schema", codes.OUTPUT_SCHEMA_INVALID, "", out)
    if schema is False:
        out.append(
            codes.problem(
                codes.OUTPUT_SCHEMA_UNSATISFIABLE,
                "output schema rejects every possible value",
                "/output_schema",
            )
        )


def _check_components(contract: Contract, checker: ContentChecker, out: list[Diagnostic]) -> None:
    for name in sorted(contract.components):
        definition = contract.components[name]
        scope: dict[str, Any]
        if isinstance(definition, TypedComponent):
            scope = {}
            for param in sorted(definition.parameters):
                schema = definition.parameters[param].schema
                _check_schema(
                    schema,
                    f"/components/{name}/parameters/{param}/schema",
                    codes.COMPONENT_SCHEMA_INVALID,
                    f"invalid schema for component parameter '{param}': ",
                    out,
                )
                scope[param] = schema
        else:
            scope = dict.fromkeys(legacy_arguments(definition), STRING_SCHEMA)
        # The reference reports component body problems at /components/{name}/{i}, also for
        # typed components whose YAML path is .../content/{i}; kept for pointer parity.
        checker.check_nodes(component_content(definition), f"/components/{name}", scope)


def _check_extensions(contract: Contract, out: list[Diagnostic]) -> None:
    for key in sorted(contract.extensions):
        extension = contract.extensions[key]
        base = f"/extensions/{key}"
        if "." not in key:
            out.append(
                codes.problem(
                    codes.EXTENSION_NAMESPACE,
                    f"extension '{key}' must use a namespaced key such as vendor.option",
                    base,
                )
            )
        if _CAPABILITY.fullmatch(extension.capability) is None:
            out.append(
                codes.problem(
                    codes.EXTENSION_CAPABILITY,
                    f"extension '{key}' declares an invalid capability",
                    f"{base}/capability",
                )
            )
        _check_schema(
            extension.schema,
            f"{base}/schema",
            codes.EXTENSION_SCHEMA_INVALID,
            f"invalid schema for extension '{key}': ",
            out,
        )
        validate_instance(
            extension.schema, extension.value, f"{base}/value", codes.EXTENSION_VALUE, out
        )
