"""``output_schema_valid``: does an output satisfy the contract's output schema?

The answer must agree with the application's own check (DECISIONS 8), which is the core's
bounded validation: the schema compiles in jsonschema-rs (draft from ``$schema``, Draft 2020-12
by default, no network), the engine accepts the value with ``format`` not asserted, and the
``date``/``date-time`` formats hold along ``properties`` and ``items``. Adapters may not import
the core, so this module applies that rule with the same engine (jsonschema-rs) and the format
walk the core uses too (:mod:`templiqx_contracts.formats`). A schema that does not compile makes
every output invalid; nothing here ever raises. For an interaction that declares tools, a
tool-call answer is judged by its tools (the shared rule of :mod:`templiqx_contracts.tools`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final

import jsonschema_rs
import msgspec

from templiqx_contracts import (
    CompiledInteraction,
    FormatPlan,
    format_plan,
    interaction_output_valid,
)

__all__ = ["interaction_valid", "output_schema_valid"]

_CACHE_SIZE: Final = 256
_key: Final = msgspec.msgpack.Encoder().encode


class _Compiled:
    __slots__ = ("formats", "validator")

    def __init__(self, validator: Any, formats: FormatPlan | None) -> None:
        self.validator = validator
        self.formats = formats


_cache: OrderedDict[bytes, _Compiled] = OrderedDict()
_lock = threading.Lock()


def _compile(schema: Any) -> _Compiled:
    try:
        validator = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except Exception:  # any compile problem means "no output is valid"
        validator = None
    return _Compiled(validator, format_plan(schema))


def _compiled(schema: Any) -> _Compiled:
    try:
        key = _key(schema)
    except (TypeError, ValueError, OverflowError):
        return _compile(schema)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    built = _compile(schema)
    with _lock:
        _cache[key] = built
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return built


def output_schema_valid(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema`` under the bounded rules (never raises)."""
    compiled = _compiled(schema)
    validator = compiled.validator
    if validator is None:
        return False
    try:
        if not validator.is_valid(output):
            return False
    except Exception:  # a value the engine cannot read is not valid output
        return False
    return compiled.formats is None or compiled.formats.holds(output)


def interaction_valid(interaction: CompiledInteraction, output: Any) -> bool:
    """Whether ``output`` answers ``interaction`` validly (its tools, or its output schema)."""
    return interaction_output_valid(interaction, output, output_schema_valid)
