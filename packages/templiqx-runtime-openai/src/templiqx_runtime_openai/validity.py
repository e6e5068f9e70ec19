"""``output_schema_valid``: does an output satisfy the contract's output schema?

The answer must agree with the application's own check (DECISIONS 8), which is the core's
bounded validation: the schema compiles in jsonschema-rs (draft from ``$schema``, Draft 2020-12
by default, no network), the engine accepts the value with ``format`` not asserted, and the
``date``/``date-time`` formats hold along ``properties`` and ``items``. Adapters may not import
the core, so this module applies that rule with the same engine (jsonschema-rs) and the format
walk the core uses too (:mod:`templiqx_contracts.formats`). A schema that does not compile makes
every output invalid; nothing here ever raises. For an interaction that declares tools, a
tool-call answer is judged by its tools (the shared rule of :mod:`templiqx_contracts.tools`).

Compiled schemas are cached as the core caches its own (issue #18): keyed by the SHA-256 digest
of the schema's msgpack encoding (never the schema itself) and bounded by entries and by the
estimated size of the validators they hold (issue #29: a validator holds up to ~150 times its
schema's encoded size; :func:`~templiqx_contracts.lru.validator_weight`), within the
process-wide ceiling every cache shares; a schema heavier than that bound alone is
compiled for each call and not kept.
"""

from __future__ import annotations

from typing import Any, Final

import jsonschema_rs
import msgspec

from templiqx_contracts import (
    LRU,
    CompiledInteraction,
    FormatPlan,
    digest_key,
    format_plan,
    interaction_output_valid,
    validator_weight,
)

__all__ = ["interaction_valid", "output_schema_valid"]

_CACHE_SIZE: Final = 256
"""Compiled schemas kept at most."""
_CACHE_BYTES: Final = 16 * 1024 * 1024
"""Total estimated size of the kept validators at most."""
_encode: Final = msgspec.msgpack.Encoder().encode


class _Compiled:
    __slots__ = ("formats", "validator")

    def __init__(self, validator: Any, formats: FormatPlan | None) -> None:
        self.validator = validator
        self.formats = formats


def _compile(schema: Any) -> _Compiled:
    try:
        validator = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except Exception:  # any compile problem means "no output is valid"
        validator = None
    return _Compiled(validator, format_plan(schema))


_cache: Final[LRU[bytes, tuple[_Compiled, int]]] = LRU(
    _CACHE_SIZE, max_weight=_CACHE_BYTES, weigh=lambda entry: entry[1]
)
"""Compiled schemas with the size of the schema each was compiled from (its weight)."""


def _compiled(schema: Any) -> _Compiled:
    try:
        encoded = _encode(schema)  # msgpack keeps integer/float identity
    except (TypeError, ValueError, OverflowError):
        return _compile(schema)
    return _cache.cached(digest_key(encoded), lambda: (_compile(schema), validator_weight(schema)))[
        0
    ]


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
