"""The JSON-Schema engine (jsonschema-rs) behind a small, cached, never-raising interface.

A schema is *engine-valid* when jsonschema-rs compiles it: draft detected from ``$schema``
(Draft 2020-12 by default), the schema checked against its meta-schema, external references
unresolvable (no network), and ``format`` never asserted by the engine — the core asserts
``date``/``date-time`` itself (the shared walk of :mod:`templiqx_contracts.formats`).

Compiled validators are kept in a bounded LRU cache keyed by the schema's msgpack bytes (which
keep integer/float identity), so compiling the same contract again costs one encode per schema.
"""

from __future__ import annotations

from typing import Any, Final

import jsonschema_rs
import msgspec

from templiqx_contracts import Diagnostic, FormatPlan, elide, format_plan
from templiqx_core import codes
from templiqx_core.lru import LRU

__all__ = ["EngineSchema", "accepts", "compile_schema", "validate_instance"]

_CACHE_SIZE: Final = 1024
_encode_key = msgspec.msgpack.Encoder().encode


class EngineSchema:
    """One schema as the engine sees it: a validator, or the reason it does not compile."""

    __slots__ = ("error", "formats", "validator")

    def __init__(self, validator: Any, error: str | None, formats: FormatPlan | None) -> None:
        self.validator = validator
        self.error = error
        self.formats = formats

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

    def is_valid(self, value: Any) -> bool:
        """Whether the engine accepts ``value`` (``False`` for a schema that does not compile)."""
        validator = self.validator
        if validator is None:
            return False
        try:
            return bool(validator.is_valid(value))
        except (ValueError, TypeError, OverflowError):
            return False


_cache: LRU[bytes, EngineSchema] = LRU(_CACHE_SIZE)


def _build(schema: Any) -> EngineSchema:
    try:
        validator = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except jsonschema_rs.ValidationError as exc:
        return EngineSchema(None, str(exc.message), format_plan(schema))
    except Exception as exc:  # any engine failure means "does not compile"
        return EngineSchema(None, str(exc) or type(exc).__name__, format_plan(schema))
    return EngineSchema(validator, None, format_plan(schema))


def compile_schema(schema: Any) -> EngineSchema:
    """The engine's view of ``schema`` (cached; never raises)."""
    try:
        key = _encode_key(schema)
    except (TypeError, ValueError, OverflowError):
        return _build(schema)
    found = _cache.get(key)
    if found is None:
        found = _build(schema)
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
