"""§2.5: manifest shape (strict types) and every validation rule with its exact message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_mock import (
    MOCK_API_VERSION,
    DocumentExpectation,
    ReceiptPayloadPolicy,
    RuntimeFailureSpec,
    ScenarioError,
    ScenarioIOError,
    ScenarioJSONError,
    ScenarioKind,
    ScenarioManifest,
    ScenarioStep,
    ScenarioStepKind,
    ScenarioYAMLError,
    StreamDelta,
    StreamEnd,
    StreamFinish,
    StreamReasoning,
    StreamStart,
    StreamUsage,
    load_scenario,
    validate_scenario,
)
from templiqx_ports import PortError, RuntimeFailureCode

Data = dict[str, Any]

RR = {"id": "rr", "kind": "request_received"}
OK = {"id": "ok", "kind": "runtime_success"}
FAIL = {
    "id": "boom",
    "kind": "runtime_failure",
    "failure": {"code": "TQX_RUNTIME_TIMEOUT", "detail": "slow"},
}


def delay(step_id: str = "wait", **extra: Any) -> Data:
    return {"id": step_id, "kind": "delay", "delay_ms": 5, **extra}


# (case id, steps, exact validation message)
STEP_CASES: list[tuple[str, list[Data], str]] = [
    ("blank-step-id", [RR, {"id": "  ", "kind": "runtime_success"}], "step id must be non-empty"),
    ("empty-step-id", [{"id": "", "kind": "request_received"}, OK], "step id must be non-empty"),
    ("duplicate-step-id", [RR, {"id": "rr", "kind": "runtime_success"}], "duplicate event id 'rr'"),
    ("duplicate-after-terminal", [RR, OK, {**OK}], "duplicate event id 'ok'"),
    ("step-after-success", [RR, OK, delay()], "step 'wait' appears after terminal runtime step"),
    ("step-after-failure", [RR, FAIL, OK], "step 'ok' appears after terminal runtime step"),
    (
        "second-request-received",
        [RR, {"id": "rr2", "kind": "request_received"}, OK],
        "request_received must be the first step",
    ),
    ("delay-first", [delay(), OK], "delay cannot occur before request_received"),
    ("delay-zero", [RR, delay(delay_ms=0), OK], "delay step 'wait' must set delay_ms > 0"),
    (
        "delay-missing",
        [RR, {"id": "wait", "kind": "delay"}, OK],
        "delay step 'wait' must set delay_ms > 0",
    ),
    ("delay-null", [RR, delay(delay_ms=None), OK], "delay step 'wait' must set delay_ms > 0"),
    ("success-first", [OK], "runtime_success cannot occur before request_received"),
    (
        "success-with-failure",
        [RR, {**OK, "failure": FAIL["failure"]}],
        "runtime_success step 'ok' cannot include failure",
    ),
    ("failure-first", [FAIL], "runtime_failure cannot occur before request_received"),
    (
        "failure-without-spec",
        [RR, {"id": "boom", "kind": "runtime_failure"}],
        "runtime_failure step 'boom' must include failure",
    ),
    ("no-terminal", [RR], "scenario must end in runtime_success or runtime_failure"),
    ("delay-no-terminal", [RR, delay()], "scenario must end in runtime_success or runtime_failure"),
]


@pytest.mark.parametrize(
    ("steps", "message"), [c[1:] for c in STEP_CASES], ids=[c[0] for c in STEP_CASES]
)
def test_step_rules_have_exact_messages(
    steps: list[Data], message: str, steps_manifest: Callable[..., Data], parse: Any
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse(steps_manifest(steps=steps))
    assert type(caught.value) is ScenarioError
    assert caught.value.message == message
    assert str(caught.value) == f"invalid mock scenario: {message}"
    assert caught.value.code == "TQX_DATA_INVALID"
    assert isinstance(caught.value, PortError)


def _events(*kinds: str) -> list[Data]:
    events: list[Data] = []
    for index, kind in enumerate(kinds):
        event: Data = {"kind": kind, "id": f"{kind}-{index}"}
        if kind in ("delta", "reasoning"):
            event["text"] = "x"
        if kind == "usage":
            event.update(input_tokens=1, output_tokens=2)
        events.append(event)
    return events


def _with(events: list[Data], index: int, **fields: Any) -> list[Data]:
    events[index] = {**events[index], **fields}
    return events


ACTIVE = "delta/reasoning requires a started, non-empty stream before end"
STREAM_CASES: list[tuple[str, list[Data], str]] = [
    ("empty", [], "stream event sequence cannot be empty"),
    (
        "blank-id",
        _with(_events("start", "end", "finish"), 1, id=" "),
        "stream event id must be non-empty",
    ),
    (
        "duplicate-id-across-kinds",
        _with(_events("start", "end", "finish"), 2, id="start-0"),
        "duplicate event id 'start-0'",
    ),
    (
        "duplicate-start",
        _events("start", "start", "end", "finish"),
        "stream start must be first and unique",
    ),
    (
        "start-after-end",
        _events("start", "end", "start", "finish"),
        "stream start must be first and unique",
    ),
    ("delta-before-start", _events("delta", "start", "end", "finish"), ACTIVE),
    ("delta-after-end", _events("start", "end", "delta", "finish"), ACTIVE),
    ("reasoning-before-start", _events("reasoning", "start", "end", "finish"), ACTIVE),
    ("reasoning-after-end", _events("start", "end", "reasoning", "finish"), ACTIVE),
    ("empty-delta-text", _with(_events("start", "delta", "end", "finish"), 1, text=""), ACTIVE),
    (
        "empty-reasoning-text",
        _with(_events("start", "reasoning", "end", "finish"), 1, text=""),
        ACTIVE,
    ),
    ("delta-after-finish", _events("start", "end", "finish", "delta"), ACTIVE),
    (
        "usage-before-start",
        _events("usage", "start", "end", "finish"),
        "usage requires an active stream",
    ),
    (
        "usage-after-end",
        _events("start", "end", "usage", "finish"),
        "usage requires an active stream",
    ),
    (
        "usage-after-finish",
        _events("start", "end", "finish", "usage"),
        "usage requires an active stream",
    ),
    ("end-before-start", _events("end", "start", "finish"), "end requires an active stream"),
    ("end-twice", _events("start", "end", "end", "finish"), "end requires an active stream"),
    ("end-after-finish", _events("start", "end", "finish", "end"), "end requires an active stream"),
    ("finish-alone", _events("finish"), "finish requires start followed by end"),
    ("finish-without-end", _events("start", "finish"), "finish requires start followed by end"),
    (
        "finish-twice",
        _events("start", "end", "finish", "finish"),
        "finish requires start followed by end",
    ),
    ("no-finish", _events("start", "end"), "stream must contain start, end and finish"),
    ("no-end-no-finish", _events("start", "delta"), "stream must contain start, end and finish"),
]


@pytest.mark.parametrize(
    ("events", "message"), [c[1:] for c in STREAM_CASES], ids=[c[0] for c in STREAM_CASES]
)
def test_stream_rules_have_exact_messages(
    events: list[Data], message: str, stream_manifest: Callable[..., Data], parse: Any
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse(stream_manifest(events))
    assert type(caught.value) is ScenarioError
    assert caught.value.message == message


def test_whitespace_text_is_a_valid_delta(stream_manifest: Callable[..., Data], parse: Any) -> None:
    events = _with(_events("start", "delta", "reasoning", "end", "finish"), 1, text=" ")
    manifest = parse(stream_manifest(events))
    assert manifest.events is not None
    assert manifest.events[1] == StreamDelta(id="delta-1", text=" ")


TOP_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "api-version",
        {"api_version": "templiqx.mock/v2"},
        "unsupported mock api_version 'templiqx.mock/v2'",
    ),
    ("api-version-empty", {"api_version": ""}, "unsupported mock api_version ''"),
    ("blank-id", {"id": "   "}, "scenario id and contract must be non-empty"),
    ("blank-contract", {"contract": ""}, "scenario id and contract must be non-empty"),
    (
        "empty-steps",
        {"steps": []},
        "scenario must contain exactly one non-empty steps or events sequence",
    ),
    (
        "steps-and-events",
        {"events": _events("start", "end", "finish")},
        "scenario must contain exactly one non-empty steps or events sequence",
    ),
    (
        "steps-and-empty-events",
        {"events": []},
        "scenario must contain exactly one non-empty steps or events sequence",
    ),
    (
        "api-version-checked-first",
        {"api_version": "x", "id": "", "steps": []},
        "unsupported mock api_version 'x'",
    ),
    (
        "id-checked-before-sequences",
        {"id": "", "steps": []},
        "scenario id and contract must be non-empty",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "message"), [c[1:] for c in TOP_CASES], ids=[c[0] for c in TOP_CASES]
)
def test_manifest_rules_have_exact_messages(
    overrides: dict[str, Any], message: str, steps_manifest: Callable[..., Data], parse: Any
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse(steps_manifest(**overrides))
    assert caught.value.message == message


def test_missing_steps_and_events_is_rejected(
    steps_manifest: Callable[..., Data], parse: Any
) -> None:
    data = steps_manifest()
    del data["steps"]
    with pytest.raises(ScenarioError, match="exactly one non-empty steps or events"):
        parse(data)


def test_empty_events_without_steps_fails_in_stream_validation(
    stream_manifest: Callable[..., Data], parse: Any
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse(stream_manifest([]))
    assert caught.value.message == "stream event sequence cannot be empty"


def test_validate_works_on_programmatic_manifests() -> None:
    manifest = ScenarioManifest(
        api_version=MOCK_API_VERSION,
        id="built",
        contract="c",
        kind=ScenarioKind.FAILURE,
        receipt_payload_policy=ReceiptPayloadPolicy.NO_SUCCESSFUL_RECEIPT,
        steps=[
            ScenarioStep(id="rr", kind=ScenarioStepKind.REQUEST_RECEIVED),
            ScenarioStep(
                id="f",
                kind=ScenarioStepKind.RUNTIME_FAILURE,
                failure=RuntimeFailureSpec(code=RuntimeFailureCode.UNAVAILABLE, detail="down"),
            ),
        ],
    )
    manifest.validate()
    manifest.steps.append(ScenarioStep(id="late", kind=ScenarioStepKind.DELAY, delay_ms=1))
    with pytest.raises(ScenarioError, match="step 'late' appears after terminal runtime step"):
        validate_scenario(manifest)


# --- §2.12 pinned parser tests ------------------------------------------------------------


def test_stream_lifecycle_is_strict_and_typed(
    stream_manifest: Callable[..., Data], steps_manifest: Callable[..., Data], parse: Any
) -> None:
    full = [
        {"kind": "start", "id": "s"},
        {"kind": "reasoning", "id": "r", "text": "think"},
        {"kind": "delta", "id": "d", "text": "out"},
        {"kind": "usage", "id": "u", "input_tokens": 3, "output_tokens": 4},
        {"kind": "end", "id": "e"},
        {"kind": "finish", "id": "f", "output": {"ok": True}, "output_schema_valid": True},
    ]
    manifest = parse(stream_manifest(full))
    assert manifest.events == [
        StreamStart(id="s"),
        StreamReasoning(id="r", text="think"),
        StreamDelta(id="d", text="out"),
        StreamUsage(id="u", input_tokens=3, output_tokens=4),
        StreamEnd(id="e"),
        StreamFinish(id="f", output={"ok": True}, output_schema_valid=True),
    ]
    rejected = [
        [],
        [{"kind": "finish", "id": "f"}],
        [{"kind": "start", "id": "s"}, {"kind": "start", "id": "s"}],
        [{"kind": "start", "id": "s"}, {"kind": "finish", "id": "f"}],
        [
            {"kind": "start", "id": "s"},
            {"kind": "end", "id": "e"},
            {"kind": "usage", "id": "u", "input_tokens": 1, "output_tokens": 1},
            {"kind": "finish", "id": "f"},
        ],
        [{"kind": "start", "id": ""}, {"kind": "end", "id": "e"}, {"kind": "finish", "id": "f"}],
    ]
    for events in rejected:
        with pytest.raises(ScenarioError):
            parse(stream_manifest(events))
    with pytest.raises(ScenarioError):
        parse(steps_manifest(steps=[RR, {"id": "rr2", "kind": "request_received"}, OK]))


def test_mock_scenario_parser_rejects_spec_gaps(
    steps_manifest: Callable[..., Data], parse: Any
) -> None:
    minimal = parse(steps_manifest())
    assert minimal.receipt_payload_policy is ReceiptPayloadPolicy.FINGERPRINTS_ONLY
    with pytest.raises(ScenarioJSONError):
        parse(steps_manifest(unexpected=True))
    for steps in ([], [RR, delay(delay_ms=0), OK], [RR, {**OK, "id": "rr"}], [OK, RR]):
        with pytest.raises(ScenarioError):
            parse(steps_manifest(steps=steps))


# --- shape and strictness -----------------------------------------------------------------


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Data], None]:
    def mutate(data: Data) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _drop(path: tuple[Any, ...]) -> Callable[[Data], None]:
    def mutate(data: Data) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


FAILURE_MANIFEST_STEPS = [RR, FAIL]
STREAM_EVENTS = [
    {"kind": "start", "id": "s"},
    {"kind": "delta", "id": "d", "text": "x"},
    {"kind": "usage", "id": "u", "input_tokens": 1, "output_tokens": 1},
    {"kind": "end", "id": "e"},
    {"kind": "finish", "id": "f"},
]

# (case id, "steps" or "stream" base, mutation, text expected in the error)
SHAPE_CASES: list[tuple[str, str, Callable[[Data], None], str]] = [
    ("unknown-top-field", "steps", _set(("extra",), 1), "unknown field `extra`"),
    ("unknown-step-field", "steps", _set(("steps", 0, "note"), "x"), "unknown field `note`"),
    (
        "unknown-failure-field",
        "failure",
        _set(("steps", 1, "failure", "why"), "x"),
        "unknown field `why`",
    ),
    ("unknown-event-field", "stream", _set(("events", 1, "extra"), 1), "unknown field `extra`"),
    (
        "unknown-evidence-field",
        "steps",
        _set(
            ("evidence",), [{"document_id": "d", "fragment_id": "f", "quote_sha256": "q", "x": 1}]
        ),
        "unknown field `x`",
    ),
    (
        "unknown-document-field",
        "steps",
        _set(("document_expectation",), {"status": "", "pages": 1}),
        "unknown field `pages`",
    ),
    ("bad-scenario-kind", "steps", _set(("kind",), "sad_path"), "Invalid enum value 'sad_path'"),
    ("bad-policy", "steps", _set(("receipt_payload_policy",), "everything"), "Invalid enum value"),
    ("bad-step-kind", "steps", _set(("steps", 1, "kind"), "runtime_maybe"), "Invalid enum value"),
    ("bad-event-kind", "stream", _set(("events", 1, "kind"), "chunk"), "Invalid value 'chunk'"),
    ("pascal-event-kind", "stream", _set(("events", 1, "kind"), "Delta"), "Invalid value 'Delta'"),
    ("event-without-kind", "stream", _drop(("events", 1, "kind")), "missing required field `kind`"),
    (
        "bad-failure-code",
        "failure",
        _set(("steps", 1, "failure", "code"), "TQX_NOPE"),
        "Invalid enum value 'TQX_NOPE'",
    ),
    (
        "finish-valid-null",
        "stream",
        _set(("events", 4, "output_schema_valid"), None),
        "Expected `bool`, got `null`",
    ),
    (
        "finish-valid-string",
        "stream",
        _set(("events", 4, "output_schema_valid"), "true"),
        "Expected `bool`, got `str`",
    ),
    (
        "step-valid-int",
        "steps",
        _set(("steps", 1, "output_schema_valid"), 1),
        "Expected `bool | null`, got `int`",
    ),
    (
        "delay-negative",
        "steps",
        _set(("steps",), [RR, delay(delay_ms=-1), OK]),
        "Expected `int` >= 0",
    ),
    (
        "delay-float",
        "steps",
        _set(("steps",), [RR, delay(delay_ms=1.5), OK]),
        "Expected `int | null`, got `float`",
    ),
    ("delay-string", "steps", _set(("steps",), [RR, delay(delay_ms="5"), OK]), "got `str`"),
    ("delay-bool", "steps", _set(("steps",), [RR, delay(delay_ms=True), OK]), "got `bool`"),
    ("retry-negative", "failure", _set(("steps", 1, "failure", "retry_after_ms"), -5), ">= 0"),
    ("usage-negative", "stream", _set(("events", 2, "input_tokens"), -1), ">= 0"),
    (
        "usage-missing",
        "stream",
        _drop(("events", 2, "output_tokens")),
        "missing required field `output_tokens`",
    ),
    (
        "unresolved-negative",
        "steps",
        _set(("document_expectation",), {"unresolved_references": -1}),
        ">= 0",
    ),
    (
        "unresolved-beyond-u32",
        "steps",
        _set(("document_expectation",), {"unresolved_references": 1 << 32}),
        "<= 4294967295",
    ),
    (
        "missing-api-version",
        "steps",
        _drop(("api_version",)),
        "missing required field `api_version`",
    ),
    ("missing-id", "steps", _drop(("id",)), "missing required field `id`"),
    ("missing-contract", "steps", _drop(("contract",)), "missing required field `contract`"),
    ("missing-kind", "steps", _drop(("kind",)), "missing required field `kind`"),
    (
        "missing-policy",
        "steps",
        _drop(("receipt_payload_policy",)),
        "missing required field `receipt_payload_policy`",
    ),
    ("missing-step-id", "steps", _drop(("steps", 0, "id")), "missing required field `id`"),
    (
        "missing-failure-detail",
        "failure",
        _drop(("steps", 1, "failure", "detail")),
        "missing required field `detail`",
    ),
    (
        "missing-evidence-hash",
        "steps",
        _set(("evidence",), [{"document_id": "d", "fragment_id": "f"}]),
        "missing required field `quote_sha256`",
    ),
    ("diagnostics-null", "steps", _set(("expected_diagnostics",), None), "got `null`"),
    ("steps-null", "steps", _set(("steps",), None), "got `null`"),
    ("evidence-null", "steps", _set(("evidence",), None), "got `null`"),
    ("document-null", "steps", _set(("document_expectation",), None), "got `null`"),
    ("status-null", "steps", _set(("expected_status",), None), "got `null`"),
    ("id-number", "steps", _set(("id",), 7), "Expected `str`, got `int`"),
]


@pytest.mark.parametrize(
    ("base", "mutate", "expected"), [c[1:] for c in SHAPE_CASES], ids=[c[0] for c in SHAPE_CASES]
)
def test_shape_errors_are_json_errors(
    base: str,
    mutate: Callable[[Data], None],
    expected: str,
    steps_manifest: Callable[..., Data],
    stream_manifest: Callable[..., Data],
    parse: Any,
) -> None:
    if base == "stream":
        data = stream_manifest(json.loads(json.dumps(STREAM_EVENTS)))
    elif base == "failure":
        data = steps_manifest(steps=json.loads(json.dumps(FAILURE_MANIFEST_STEPS)))
    else:
        data = steps_manifest()
    parse(json.loads(json.dumps(data)))  # the unmutated base is valid
    mutate(data)
    with pytest.raises(ScenarioJSONError) as caught:
        parse(data)
    assert expected in caught.value.message
    assert str(caught.value).startswith("invalid JSON mock scenario: ")
    assert caught.value.code == "TQX_DATA_INVALID"


@pytest.mark.parametrize(
    "document",
    [b"", b"{", b"[1, 2]", b'"text"', b"null", b'{"api_version": NaN}', b'{"a": 1e400}'],
)
def test_malformed_json_is_a_json_error(document: bytes) -> None:
    with pytest.raises(ScenarioJSONError) as caught:
        ScenarioManifest.from_json(document)
    assert str(caught.value).startswith("invalid JSON mock scenario: ")


def test_null_means_absent_for_optional_fields(
    steps_manifest: Callable[..., Data], parse: Any
) -> None:
    data = steps_manifest(
        input=None,
        expected_output=None,
        expected_output_fingerprint=None,
        expected_failure=None,
        golden_receipt_fingerprint=None,
        events=None,
        steps=[
            RR,
            {"id": "wait", "kind": "delay", "delay_ms": 3, "output": None, "failure": None},
            {"id": "ok", "kind": "runtime_success", "output": None, "output_schema_valid": None},
        ],
    )
    manifest = parse(data)
    assert manifest.events is None
    assert manifest.steps[2].output is None
    assert manifest.steps[2].output_schema_valid is None
    assert manifest.document_expectation == DocumentExpectation(status="", unresolved_references=0)
    assert manifest.expected_diagnostics == []
    assert manifest.expected_status == ""


def test_irrelevant_step_fields_are_tolerated(
    steps_manifest: Callable[..., Data], parse: Any
) -> None:
    steps = [
        {"id": "rr", "kind": "request_received", "delay_ms": 9, "output": {"a": 1}},
        delay(output={"ignored": True}, output_schema_valid=False),
        {"id": "boom", "kind": "runtime_failure", "failure": FAIL["failure"], "output": [1]},
    ]
    manifest = parse(steps_manifest(steps=steps))
    assert manifest.steps[1].output == {"ignored": True}


def test_an_omitted_finish_validity_is_unset(
    stream_manifest: Callable[..., Data], parse: Any
) -> None:
    # Unset means "computed by the runtime" (the reference defaulted it to false).
    manifest = parse(stream_manifest(STREAM_EVENTS))
    assert manifest.events is not None
    finish = manifest.events[-1]
    assert finish == StreamFinish(id="f", output=None)
    assert finish.output_schema_valid is msgspec.UNSET


def test_every_enum_value_parses(steps_manifest: Callable[..., Data], parse: Any) -> None:
    for kind in ScenarioKind:
        assert parse(steps_manifest(kind=kind.value)).kind is kind
    for policy in ReceiptPayloadPolicy:
        assert (
            parse(steps_manifest(receipt_payload_policy=policy.value)).receipt_payload_policy
            is policy
        )
    for code in RuntimeFailureCode:
        failure = {**FAIL, "failure": {"code": code.value, "detail": "d", "retry_after_ms": 7}}
        manifest = parse(steps_manifest(steps=[RR, failure]))
        spec = manifest.steps[1].failure
        assert spec == RuntimeFailureSpec(code=code, detail="d", retry_after_ms=7)


def test_numbers_keep_their_identity(steps_manifest: Callable[..., Data], parse: Any) -> None:
    output = {"int": 1, "float": 1.0, "neg_zero": -0.0, "big": 18446744073709551615}
    steps = [RR, {"id": "ok", "kind": "runtime_success", "output": output}]
    document = json.dumps(steps_manifest(steps=steps))
    manifest = ScenarioManifest.from_json(document.replace('"neg_zero": -0.0', '"neg_zero": -0'))
    value = manifest.steps[1].output
    assert type(value["int"]) is int
    assert type(value["float"]) is float
    assert type(value["neg_zero"]) is float
    assert value["big"] == 18446744073709551615


# --- YAML and files -----------------------------------------------------------------------

YAML_MANIFEST = """\
api_version: templiqx.mock/v1alpha1
id: yaml-scenario
contract: greeting
kind: happy_path
receipt_payload_policy: fingerprints_only
expected_status: success
steps:
  - id: request-received
    kind: request_received
  - id: latency
    kind: delay
    delay_ms: 25
  - id: done
    kind: runtime_success
    output:
      date: 2026-07-12
      answer: yes
      code: 007
      count: 12
      ratio: 1e5
    output_schema_valid: true
"""


def test_yaml_manifest_reads_with_core_schema_typing() -> None:
    manifest = ScenarioManifest.from_yaml(YAML_MANIFEST)
    assert manifest.id == "yaml-scenario"
    assert manifest.steps[1].delay_ms == 25
    assert manifest.steps[2].output == {
        "date": "2026-07-12",
        "answer": "yes",
        "code": "007",
        "count": 12,
        "ratio": 100000.0,
    }
    assert type(manifest.steps[2].output["ratio"]) is float


def test_yaml_and_json_forms_are_equal(tmp_path: Path) -> None:
    from_yaml = ScenarioManifest.from_yaml(YAML_MANIFEST.encode("utf-8"))
    as_json = json.dumps(
        {
            "api_version": MOCK_API_VERSION,
            "id": "yaml-scenario",
            "contract": "greeting",
            "kind": "happy_path",
            "receipt_payload_policy": "fingerprints_only",
            "expected_status": "success",
            "steps": [
                {"id": "request-received", "kind": "request_received"},
                {"id": "latency", "kind": "delay", "delay_ms": 25},
                {
                    "id": "done",
                    "kind": "runtime_success",
                    "output": {
                        "date": "2026-07-12",
                        "answer": "yes",
                        "code": "007",
                        "count": 12,
                        "ratio": 100000.0,
                    },
                    "output_schema_valid": True,
                },
            ],
        }
    )
    assert ScenarioManifest.from_json(as_json) == from_yaml
    for name in ("scenario.yaml", "scenario.yml", "SCENARIO.YAML"):
        (tmp_path / name).write_text(YAML_MANIFEST, encoding="utf-8")
        assert load_scenario(tmp_path / name) == from_yaml
    (tmp_path / "scenario.json").write_text(as_json, encoding="utf-8")
    assert ScenarioManifest.load(tmp_path / "scenario.json") == from_yaml
    (tmp_path / "scenario.txt").write_text(YAML_MANIFEST, encoding="utf-8")
    with pytest.raises(ScenarioJSONError):
        ScenarioManifest.load(tmp_path / "scenario.txt")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (YAML_MANIFEST + "extra: 1\n", "unknown field `extra`"),
        (YAML_MANIFEST + "id: again\n", "duplicate key 'id' at line 22 column 1"),
        (
            YAML_MANIFEST.replace("delay_ms: 25", "delay_ms: '25'"),
            "Expected `int | null`, got `str`",
        ),
        (YAML_MANIFEST.replace("delay_ms: 25", "delay_ms: .inf"), "non-finite number .inf"),
        ("steps: [\n", "line"),
        ("", "the document is empty"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
    ],
)
def test_yaml_errors_are_yaml_errors(document: str, expected: str) -> None:
    with pytest.raises(ScenarioYAMLError) as caught:
        ScenarioManifest.from_yaml(document)
    assert expected in caught.value.message
    assert str(caught.value).startswith("invalid YAML mock scenario: ")


def test_yaml_validation_errors_are_scenario_errors() -> None:
    with pytest.raises(ScenarioError) as caught:
        ScenarioManifest.from_yaml(YAML_MANIFEST.replace("delay_ms: 25", "delay_ms: 0"))
    assert type(caught.value) is ScenarioError
    assert caught.value.message == "delay step 'latency' must set delay_ms > 0"


def test_unreadable_file_is_an_io_error(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    with pytest.raises(ScenarioIOError) as caught:
        ScenarioManifest.load(missing)
    assert str(caught.value) == f"I/O error reading {missing}: No such file or directory"
    assert caught.value.code == "TQX_IO"
    with pytest.raises(ScenarioIOError, match="Is a directory"):
        ScenarioManifest.load(tmp_path)


def test_errors_survive_pickling() -> None:
    import pickle

    for error in (
        ScenarioError("m"),
        ScenarioJSONError("j"),
        ScenarioYAMLError("y"),
        ScenarioIOError("/p", "gone"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert copy.code == error.code
