"""The output validity of a success whose scenario does not script it.

DECISIONS 8: the application checks every output against the contract's schema itself, and an
adapter whose ``output_schema_valid`` disagrees with that check fails conformance. So when a
scenario leaves the flag open, the scripted runtime computes it by the same bounded rule: the
schema compiles in jsonschema-rs (draft from ``$schema``, Draft 2020-12 by default, ``format``
not asserted by the engine, no network), the engine accepts the output, and the ``date`` /
``date-time`` walk of :mod:`templiqx_contracts.formats` finds nothing. A schema that does not
compile accepts no output. For an interaction that declares tools, a tool-call answer is judged
by its tools instead (the shared rule of :mod:`templiqx_contracts.tools`). Nothing here raises.
"""

from __future__ import annotations

import functools
from typing import Any, Final, NamedTuple

import jsonschema_rs
import msgspec

from templiqx_contracts import (
    CompiledInteraction,
    FormatPlan,
    format_plan,
    interaction_output_valid,
)

__all__ = ["interaction_valid", "output_schema_valid"]

_CACHED_SCHEMAS: Final = 256
_to_key: Final = msgspec.msgpack.Encoder().encode
_from_key: Final = msgspec.msgpack.Decoder().decode


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


@functools.lru_cache(maxsize=_CACHED_SCHEMAS)
def _checker_for_key(key: bytes) -> _Checker:
    # msgpack keeps integer/float identity, so equal keys are the same schema.
    return _checker(_from_key(key))


def output_schema_valid(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema`` as the application's check decides it."""
    try:
        key = _to_key(schema)
    except (TypeError, ValueError, OverflowError):
        return _checker(schema).accepts(output)
    return _checker_for_key(key).accepts(output)


def interaction_valid(interaction: CompiledInteraction, output: Any) -> bool:
    """Whether ``output`` answers ``interaction`` validly (its tools, or its output schema)."""
    return interaction_output_valid(interaction, output, output_schema_valid)
