"""The output validity of a success whose scenario does not script it.

DECISIONS 8: the application checks every output against the contract's schema itself, and an
adapter whose ``output_schema_valid`` disagrees with that check fails conformance. So when a
scenario leaves the flag open, the scripted runtime computes it by the same bounded rule: the
schema compiles in jsonschema-rs (draft from ``$schema``, Draft 2020-12 by default, ``format``
not asserted by the engine, no network), the engine accepts the output, and the ``date`` /
``date-time`` walk of :mod:`templiqx_contracts.formats` finds nothing. A schema that does not
compile accepts no output. For an interaction that declares tools, a tool-call answer is judged
by its tools instead (the shared rule of :mod:`templiqx_contracts.tools`). Nothing here raises.

Compiled schemas are cached as the core caches its own (issue #18): keyed by the SHA-256 digest
of the schema's msgpack encoding (never the schema itself) and bounded by entries and by the
estimated size of the validators they hold (issue #29: a validator holds up to ~150 times its
schema's encoded size; :func:`~templiqx_contracts.lru.validator_weight`), within the
process-wide ceiling every cache shares; a schema heavier than that bound alone is
compiled for each check and not kept.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

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

_CACHED_SCHEMAS: Final = 256
"""Compiled schemas kept at most."""
_CACHED_BYTES: Final = 16 * 1024 * 1024
"""Total estimated size of the kept validators at most."""
_encode: Final = msgspec.msgpack.Encoder().encode


class _Checker(NamedTuple):
    engine: Any  # a jsonschema-rs validator, or None when the schema does not compile
    formats: FormatPlan | None

    def accepts(self, output: Any) -> bool:
        if self.engine is None:
            return False
        try:
            accepted = bool(self.engine.is_valid(output))
        except Exception:  # a value the engine cannot read is not valid output
            return False
        return accepted and (self.formats is None or self.formats.holds(output))


def _checker(schema: Any) -> _Checker:
    try:
        engine = jsonschema_rs.validator_for(schema, validate_formats=False, offline=True)
    except Exception:  # any compile problem means "no output is valid"
        engine = None
    return _Checker(engine, format_plan(schema))


_cache: Final[LRU[bytes, tuple[_Checker, int]]] = LRU(
    _CACHED_SCHEMAS, max_weight=_CACHED_BYTES, weigh=lambda entry: entry[1]
)
"""Checkers with the size of the schema each was compiled from (its weight)."""


def _cached_checker(schema: Any) -> _Checker:
    try:
        encoded = _encode(schema)  # msgpack keeps integer/float identity
    except (TypeError, ValueError, OverflowError):
        return _checker(schema)
    return _cache.cached(digest_key(encoded), lambda: (_checker(schema), validator_weight(schema)))[
        0
    ]


def output_schema_valid(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema`` as the application's check decides it."""
    return _cached_checker(schema).accepts(output)


def interaction_valid(interaction: CompiledInteraction, output: Any) -> bool:
    """Whether ``output`` answers ``interaction`` validly (its tools, or its output schema)."""
    return interaction_output_valid(interaction, output, output_schema_valid)
