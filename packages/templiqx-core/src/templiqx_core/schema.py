"""The JSON-Schema engine (jsonschema-rs) behind a small, cached, never-raising interface.

A schema is *engine-valid* when jsonschema-rs compiles it: draft detected from ``$schema``
(Draft 2020-12 by default), the schema checked against its meta-schema, external references
unresolvable (no network), and ``format`` never asserted by the engine — the core asserts
``date``/``date-time`` itself (the shared walk of :mod:`templiqx_contracts.formats`).

Compiled validators are kept in a bounded LRU cache keyed by the SHA-256 of the schema's msgpack
bytes (which keep integer/float identity), so compiling the same contract again costs one
encode and one hash per schema. The cache holds at most 1,024 schemas and 32 MiB of them,
weighed by what a validator holds (:func:`engine_weight`: jsonschema-rs keeps up to ~150 times
a schema's encoded size, ~500 bytes a node), and counts against the process-wide ceiling of
:mod:`templiqx_contracts.lru`.

Schemas compiled while a contract is validated are *staged* (:func:`staged_schemas`): they go
into the cache only when the contract turns out valid, so a refused contract leaves nothing
behind (issue #29: 200 refused ``put_contract`` calls with enum-of-objects schemas kept 458 MiB).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import msgspec

from templiqx_contracts import Diagnostic, FormatPlan, elide, format_plan
from templiqx_contracts.lru import LRU, digest_key, validator_weight
from templiqx_core import codes

__all__ = [
    "OUTPUT_VIOLATION_LIMIT",
    "EngineSchema",
    "accepts",
    "compile_schema",
    "engine_weight",
    "output_violations",
    "staged_schemas",
    "validate_instance",
]

_CACHE_SIZE: Final = 1024
_CACHE_BYTES: Final = 32 * 1024 * 1024  # of validators, as engine_weight estimates them
_encode_key = msgspec.msgpack.Encoder().encode


class EngineSchema:
    """One schema as the engine sees it: a validator, or the reason it does not compile."""

    __slots__ = ("error", "error_at", "formats", "size", "validator")

    def __init__(
        self,
        validator: Any,
        error: str | None,
        formats: FormatPlan | None,
        error_at: tuple[str, ...] | None = None,
    ) -> None:
        self.validator = validator
        self.error = error
        self.formats = formats
        self.size = 0  # the schema's encoded size, its weight in the cache
        self.error_at = error_at
        """Where in the schema the engine found ``error`` (its path segments), when known."""

    def errors(self, value: Any) -> list[str]:
        """Engine error messages for ``value`` (empty when valid or when the schema is broken)."""
        validator = self.validator
        if validator is None:
            return []
        try:
            if validator.is_valid(value):
                return []
            return [elide(str(error.message)) for error in validator.iter_errors(value)]
        except (ValueError, TypeError, OverflowError) as exc:
            return [f"value is not JSON data: {exc}"]

    def violations(self, value: Any) -> Iterator[tuple[tuple[str, ...], str, str]]:
        """``(instance path, keyword, engine message)`` of each engine error, lazily."""
        validator = self.validator
        if validator is None:
            return
        try:
            if validator.is_valid(value):
                return
            for error in validator.iter_errors(value):
                path = tuple(str(segment) for segment in error.instance_path)
                keyword = str(error.schema_path[-1]) if error.schema_path else "schema"
                yield path, keyword, str(error.message)
        except (ValueError, TypeError, OverflowError) as exc:
            yield (), "type", f"value is not JSON data: {exc}"

    def is_valid(self, value: Any) -> bool:
        """Whether the engine accepts ``value`` (``False`` for a schema that does not compile)."""
        validator = self.validator
        if validator is None:
            return False
        try:
            return bool(validator.is_valid(value))
        except (ValueError, TypeError, OverflowError):
            return False


_cache: LRU[bytes, EngineSchema] = LRU(
    _CACHE_SIZE, max_weight=_CACHE_BYTES, weigh=lambda engine: engine.size
)
_staged: contextvars.ContextVar[dict[bytes, EngineSchema] | None] = contextvars.ContextVar(
    "templiqx_staged_schemas", default=None
)


def engine_weight(schema: Any) -> int:
    """A conservative estimate of the bytes a compiled validator of ``schema`` holds
    (:func:`~templiqx_contracts.lru.validator_weight`)."""
    return validator_weight(schema)


@contextmanager
def staged_schemas() -> Iterator[dict[bytes, EngineSchema]]:
    """Schemas compiled inside the block are kept aside, not cached; the caller commits them
    (:func:`commit_staged`) once it knows they belong to something valid."""
    staging: dict[bytes, EngineSchema] = {}
    token = _staged.set(staging)
    try:
        yield staging
    finally:
        _staged.reset(token)


def commit_staged(staging: dict[bytes, EngineSchema]) -> None:
    """Cache what :func:`staged_schemas` kept aside."""
    for key, engine in staging.items():
        _cache.put(key, engine)


def _build(schema: Any) -> EngineSchema:
    import jsonschema_rs  # imported by the first schema compiled (start-up stays light)

    try:
        validator = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except jsonschema_rs.ValidationError as exc:
        where = tuple(str(segment) for segment in exc.instance_path)
        return EngineSchema(None, str(exc.message), format_plan(schema), where)
    except Exception as exc:  # any engine failure means "does not compile"
        return EngineSchema(None, str(exc) or type(exc).__name__, format_plan(schema))
    return EngineSchema(validator, None, format_plan(schema))


def compile_schema(schema: Any) -> EngineSchema:
    """The engine's view of ``schema`` (cached; never raises)."""
    try:
        encoded = _encode_key(schema)
    except (TypeError, ValueError, OverflowError):
        return _build(schema)
    key = digest_key(encoded)
    found = _cache.get(key)
    if found is not None:
        return found
    staging = _staged.get()
    if staging is not None:
        found = staging.get(key)
        if found is not None:
            return found
    found = _build(schema)
    found.size = engine_weight(schema) + len(found.error or "")
    if staging is not None:
        staging[key] = found
    else:
        _cache.put(key, found)
    return found


def accepts(schema: Any, value: Any) -> bool:
    """Whether ``schema`` compiles, the engine accepts ``value`` and its date formats hold."""
    engine = compile_schema(schema)
    if not engine.is_valid(value):
        return False
    return engine.formats is None or engine.formats.holds(value)


def validate_instance(
    schema: Any,
    value: Any,
    pointer: str,
    code: str,
    out: list[Diagnostic],
    engine: EngineSchema | None = None,
) -> None:
    """Instance validation: engine errors at ``pointer``, then the date/date-time walk.

    The format walk also runs when the schema does not compile (the reference does the same for
    extension values).
    """
    if engine is None:
        engine = compile_schema(schema)
    for message in engine.errors(value):
        out.append(codes.problem(code, message, pointer))
    if engine.formats is not None:
        for violation in engine.formats.violations(value, pointer):
            out.append(
                codes.problem(code, f"value is not a valid {violation.format}", violation.pointer)
            )


OUTPUT_VIOLATION_LIMIT: Final = 20
"""Most schema violations of one output that :func:`output_violations` spells out."""

_REASON_LIMIT: Final = 200


def _short(reason: str) -> str:
    """An engine message cut to 200 characters (it quotes the offending value whole)."""
    if len(reason) <= _REASON_LIMIT:
        return reason
    return f"{reason[:_REASON_LIMIT]}… ({len(reason)} characters)"


def output_violations(
    schema: Any, output: Any, limit: int = OUTPUT_VIOLATION_LIMIT
) -> list[Diagnostic]:
    """One ``TQX_OUTPUT_SCHEMA`` per way ``output`` breaks ``schema``, each at its own place.

    Each names the instance JSON pointer under ``/output`` (plain concatenation, as every core
    pointer), the schema keyword it breaks and a short reason, e.g. ``/output/severity breaks
    `enum`: "critical" is not one of "low" or "high"``. At most ``limit`` are listed; when there
    are more, a last diagnostic at ``/output`` gives the total. Empty when ``output`` satisfies
    the schema (or the schema does not compile: that is the contract's problem, reported by
    validation). Never raises.
    """
    engine = compile_schema(schema)
    found: list[Diagnostic] = []
    total = 0

    def add(pointer: str, keyword: str, reason: str) -> None:
        nonlocal total
        total += 1
        if total <= limit:
            message = f"{pointer} breaks `{keyword}`: {_short(reason)}"
            found.append(codes.problem(codes.OUTPUT_SCHEMA, message, pointer))

    try:
        for path, keyword, reason in engine.violations(output):
            add("/output" + "".join(f"/{segment}" for segment in path), keyword, reason)
        if engine.validator is not None and engine.formats is not None:
            for violation in engine.formats.violations(output, "/output"):
                add(violation.pointer, "format", f"value is not a valid {violation.format}")
    except RecursionError:
        add("/output", "schema", "the output nests too deeply to validate")
    if total > limit:
        found.append(
            codes.problem(
                codes.OUTPUT_SCHEMA,
                f"the output breaks the schema in {total} places; the first {limit} are listed",
                "/output",
            )
        )
    return found
