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
total size of the schemas they were compiled from; a schema larger than that bound alone is
compiled for each call and not kept.
"""

from __future__ import annotations

import hashlib
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
"""Compiled schemas kept at most."""
_CACHE_BYTES: Final = 16 * 1024 * 1024
"""Total size of the kept schemas at most (their msgpack bytes), as the core's schema cache."""
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


class _Cache:
    """Compiled schemas by digest, least recently used first, bounded by count and bytes."""

    def __init__(self) -> None:
        self.entries: OrderedDict[bytes, tuple[_Compiled, int]] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def compiled(self, schema: Any) -> _Compiled:
        try:
            encoded = _encode(schema)  # msgpack keeps integer/float identity
        except (TypeError, ValueError, OverflowError):
            return _compile(schema)
        key = hashlib.sha256(encoded).digest()
        with self._lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
                return found[0]
        built = _compile(schema)
        size = len(encoded)
        if size > _CACHE_BYTES:
            return built
        with self._lock:
            previous = self.entries.pop(key, None)
            if previous is not None:
                self.bytes -= previous[1]
            self.entries[key] = (built, size)
            self.bytes += size
            while len(self.entries) > _CACHE_SIZE or self.bytes > _CACHE_BYTES:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.bytes -= dropped
        return built


_cache: Final = _Cache()


def output_schema_valid(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema`` under the bounded rules (never raises)."""
    compiled = _cache.compiled(schema)
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
