"""Computed ``output_schema_valid``: wherever a scenario does not script it (DECISIONS 8)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from templiqx_contracts import Complete, ExecutionRequest, StreamEvent
from templiqx_core import validate_output
from templiqx_mock import (
    COMPUTED,
    ScenarioManifest,
    ScriptedRuntime,
    expected_output_schema_valid,
    scenario_fingerprint,
)
from templiqx_mock.validity import output_schema_valid

Data = dict[str, Any]
MakeRequest = Callable[..., ExecutionRequest]

RR = {"id": "rr", "kind": "request_received"}

SCHEMA: Data = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "count": {"type": "integer", "minimum": 0},
        "on": {"type": "string", "format": "date"},
        "events": {
            "type": "array",
            "items": {"type": "object", "properties": {"at": {"format": "date-time"}}},
        },
        "mail": {"type": "string", "format": "email"},
    },
    "required": ["name"],
    "additionalProperties": False,
}

CASES: list[tuple[Any, Any]] = [
    (SCHEMA, {"name": "ab"}),
    (SCHEMA, {"name": "a"}),
    (SCHEMA, {}),
    (SCHEMA, {"name": "ab", "extra": True}),
    (SCHEMA, {"name": "ab", "count": 2.0}),
    (SCHEMA, {"name": "ab", "count": 1.5}),
    (SCHEMA, {"name": "ab", "on": "2024-02-29"}),
    (SCHEMA, {"name": "ab", "on": "2026-02-29"}),
    (SCHEMA, {"name": "ab", "on": "2026-+1-01"}),
    (SCHEMA, {"name": "ab", "events": [{"at": "2026-07-11T10:00:00Z"}]}),
    (SCHEMA, {"name": "ab", "events": [{"at": "2026-07-11T10:00:00"}]}),
    (SCHEMA, {"name": "ab", "mail": "not an email"}),  # formats other than dates: unchecked
    (SCHEMA, None),
    ({"type": "nope"}, "x"),  # does not compile: nothing is valid
    ({"$ref": "https://example.invalid/schema.json"}, {}),  # no network
    ({"type": "object", "properties": []}, {}),
    (
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]},
        ["a", 1],
    ),  # the draft comes from $schema (tuple items are draft 7)
    ({"items": [{"type": "string"}]}, ["a"]),  # Draft 2020-12 by default: array items invalid
    ({}, None),
    (True, {"anything": 1}),
    (False, None),
    ({"enum": [1, 2]}, 1.0),
    ({"const": {"a": [1]}}, {"a": [1.0]}),
]


@pytest.mark.parametrize(("schema", "output"), CASES)
def test_validity_agrees_with_the_applications_check(schema: Any, output: Any) -> None:
    assert output_schema_valid(schema, output) is (validate_output(schema, output) == [])


def test_the_cases_cover_both_answers() -> None:
    answers = {output_schema_valid(schema, output) for schema, output in CASES}
    assert answers == {True, False}


def test_never_raises() -> None:
    assert output_schema_valid({"type": "object"}, object()) is False
    assert output_schema_valid({"maximum": 2**70}, 3) is True  # not cacheable: checked directly
    assert output_schema_valid({"maximum": 2**70}, 2**71) is False
    assert output_schema_valid({"type": "string"}, float("nan")) is False


def _manifest(**fields: Any) -> ScenarioManifest:
    data: Data = {
        "api_version": "templiqx.mock/v1alpha1",
        "id": "validity",
        "contract": "greeting",
        "kind": "happy_path",
        "receipt_payload_policy": "fingerprints_only",
        **fields,
    }
    return ScenarioManifest.from_json(json.dumps(data))


def _steps(**success: Any) -> ScenarioManifest:
    return _manifest(steps=[RR, {"id": "ok", "kind": "runtime_success", **success}])


def _events(**finish: Any) -> ScenarioManifest:
    return _manifest(
        events=[
            {"kind": "start", "id": "s"},
            {"kind": "delta", "id": "d", "text": "hi"},
            {"kind": "end", "id": "e"},
            {"kind": "finish", "id": "f", **finish},
        ]
    )


@pytest.mark.parametrize(
    ("runtime", "valid", "invalid"),
    [
        pytest.param(lambda: ScriptedRuntime.success(), {"name": "ab"}, {"name": 1}, id="script"),
        pytest.param(
            lambda: ScriptedRuntime.from_manifest(_steps()), {"name": "ab"}, [], id="step"
        ),
        pytest.param(
            lambda: ScriptedRuntime.from_manifest(_events()), {"name": "ab"}, 7, id="finish"
        ),
    ],
)
def test_unscripted_successes_are_checked_against_the_request_schema(
    make_request: MakeRequest, runtime: Callable[[], ScriptedRuntime], valid: Any, invalid: Any
) -> None:
    good = runtime().execute(make_request(valid, output_schema=SCHEMA))
    assert good.output == valid
    assert good.output_schema_valid is True
    bad = runtime().execute(make_request(invalid, output_schema=SCHEMA))
    assert bad.output == invalid
    assert bad.output_schema_valid is False


def test_a_scripted_output_is_checked_too(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.from_manifest(_steps(output={"name": "ab", "on": "2026-02-30"}))
    assert runtime.execute(make_request(output_schema=SCHEMA)).output_schema_valid is False
    events = ScriptedRuntime.from_manifest(_events(output={"name": "ab", "on": "2026-02-28"}))
    assert events.execute(make_request(output_schema=SCHEMA)).output_schema_valid is True


@pytest.mark.parametrize("flag", [True, False])
def test_explicit_flags_stay_as_scripted(make_request: MakeRequest, flag: bool) -> None:
    # Scripted flags are part of the reference's goldens; they win over the schema.
    for manifest in (_steps(output_schema_valid=flag), _events(output_schema_valid=flag)):
        runtime = ScriptedRuntime.from_manifest(manifest)
        for output in ({"name": "ab"}, {"name": 1}):
            receipt = runtime.execute(make_request(output, output_schema=SCHEMA))
            assert receipt.output_schema_valid is flag


def test_the_streamed_receipt_carries_the_same_computed_flag(make_request: MakeRequest) -> None:
    request = make_request({"name": 1}, output_schema=SCHEMA)
    plain = ScriptedRuntime.from_manifest(_events()).execute(request)
    events: list[StreamEvent] = []
    streamed = ScriptedRuntime.from_manifest(_events()).execute_streaming(request, events.append)
    assert streamed == plain
    assert plain.output_schema_valid is False
    assert events[-1] == Complete.of(plain)


def test_an_omitted_finish_flag_keeps_the_reference_scenario_fingerprint() -> None:
    assert scenario_fingerprint(_events()) == scenario_fingerprint(
        _events(output_schema_valid=False)
    )
    assert scenario_fingerprint(_events()) != scenario_fingerprint(
        _events(output_schema_valid=True)
    )
    assert expected_output_schema_valid(_events()) == COMPUTED
    assert expected_output_schema_valid(_steps()) == COMPUTED
    assert expected_output_schema_valid(_steps(output_schema_valid=None)) == COMPUTED
    assert expected_output_schema_valid(_events(output_schema_valid=False)) is False


def test_the_schema_cache_is_keyed_by_digest_and_bounded_by_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #18's rule for caches: a key is the schema's 32-byte SHA-256 digest (the cache
    never holds a schema), each entry weighs what its validator is estimated to hold (issue #29:
    ``validator_weight``, not the schema's encoded size), and one heavier than the bound alone is
    checked without being kept (eviction itself: the LRU's own tests)."""
    import msgspec

    from templiqx_contracts import LRU, digest_key, validator_weight
    from templiqx_mock.validity import _CACHED_BYTES, _CACHED_SCHEMAS

    assert (_CACHED_SCHEMAS, _CACHED_BYTES) == (256, 16 * 1024 * 1024)
    cache: LRU[bytes, Any] = LRU(_CACHED_SCHEMAS, max_weight=100_000, weigh=lambda entry: entry[1])
    monkeypatch.setattr("templiqx_mock.validity._cache", cache)
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
