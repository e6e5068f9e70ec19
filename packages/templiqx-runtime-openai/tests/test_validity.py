"""output_schema_valid: the bounded rule the application applies (engine + date formats)."""

from __future__ import annotations

from typing import Any

import pytest

from templiqx_runtime_openai import output_schema_valid

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 3},
        "count": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
        "when": {"type": "string", "format": "date"},
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"at": {"type": "string", "format": "date-time"}},
            },
        },
        "kind": {"const": "x"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("output", "valid"),
    [
        ({"name": "ab"}, True),
        ({"name": "äöü"}, True),  # lengths count code points
        ({"name": "abcd"}, False),
        ({}, False),
        ({"name": "ab", "extra": 1}, False),
        ({"name": "ab", "count": 9}, True),
        ({"name": "ab", "count": 2.0}, True),  # integral floats are integers for the engine
        ({"name": "ab", "count": 10}, False),
        ({"name": "ab", "count": 1.5}, False),
        ({"name": "ab", "tags": ["a", "b"]}, True),
        ({"name": "ab", "tags": ["a", "a"]}, False),
        ({"name": "ab", "tags": ["c"]}, False),
        ({"name": "ab", "when": "2024-02-29"}, True),
        ({"name": "ab", "when": "2026-02-29"}, False),
        ({"name": "ab", "when": "2026-+1-01"}, False),
        ({"name": "ab", "events": [{"at": "2026-07-11T10:00:00Z"}]}, True),
        ({"name": "ab", "events": [{"at": "2026-07-11T10:00:00.5+02:00"}]}, True),
        ({"name": "ab", "events": [{"at": "2026-07-11 10:00:00"}]}, False),
        ({"name": "ab", "events": [{"at": "2026-07-11T10:00:00z"}]}, False),
        ({"name": "ab", "kind": "x"}, True),
        ({"name": "ab", "kind": "y"}, False),
        ("not an object", False),
    ],
)
def test_outputs_against_a_bounded_schema(output: Any, valid: bool) -> None:
    assert output_schema_valid(SCHEMA, output) is valid


def test_schemas_that_do_not_compile_accept_nothing() -> None:
    assert output_schema_valid({"type": "nope"}, "x") is False
    assert output_schema_valid({"$ref": "https://example.invalid/schema.json"}, {}) is False
    assert output_schema_valid({"type": "object", "properties": []}, {}) is False


def test_boolean_schemas_and_unknown_formats() -> None:
    assert output_schema_valid(True, {"anything": 1}) is True
    assert output_schema_valid(False, None) is False
    assert output_schema_valid({"type": "string", "format": "email"}, "not an email") is True


def test_the_schema_cache_is_keyed_by_digest_and_bounded_by_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #18's rule for caches: a key is the schema's 32-byte SHA-256 digest (the cache
    never holds a schema), each entry weighs what its validator is estimated to hold (issue #29:
    ``validator_weight``, not the schema's encoded size), and one heavier than the bound alone is
    checked without being kept (eviction itself: the LRU's own tests)."""
    import msgspec

    from templiqx_contracts import LRU, digest_key, validator_weight
    from templiqx_runtime_openai.validity import _CACHE_BYTES, _CACHE_SIZE

    assert (_CACHE_SIZE, _CACHE_BYTES) == (256, 16 * 1024 * 1024)
    cache: LRU[bytes, Any] = LRU(_CACHE_SIZE, max_weight=100_000, weigh=lambda entry: entry[1])
    monkeypatch.setattr("templiqx_runtime_openai.validity._cache", cache)
    schema = {"enum": [f"{j}-" * 10 for j in range(100)]}
    encoded = msgspec.msgpack.encode(schema)
    assert output_schema_valid(schema, schema["enum"][0])
    assert not output_schema_valid(schema, "nope")
    assert len(cache) == 1
    assert digest_key(encoded) in cache
    assert cache.weight == validator_weight(schema) > 20 * len(encoded)
    huge = {"enum": ["x" * 60_000]}
    assert output_schema_valid(huge, "x" * 60_000)
    assert digest_key(msgspec.msgpack.encode(huge)) not in cache
    assert len(cache) == 1
