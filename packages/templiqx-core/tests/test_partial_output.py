"""Checking a streamed structured answer against its output schema as a prefix.

Two properties over generated bounded-subset schemas: a valid answer, split anywhere, raises no
signal (no false alarms), and any signal on any answer means the complete answer fails
``validate_output`` (every signal is sound). Then each signal at the earliest byte it can show.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from templiqx_contracts import MISSING, decode_json
from templiqx_core import PartialOutput, parse_contract, validate_output

# --- generated schemas and values --------------------------------------------------------

_names = st.sampled_from(["a", "b", "title", "n", "x/y", "t~1", "é"])


def _leaf_schemas() -> st.SearchStrategy[dict[str, Any]]:
    strings = st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "maxLength": st.integers(0, 6),
            "minLength": st.integers(0, 3),
            "enum": st.lists(st.sampled_from(["open", "opened", "closed", "o", ""]), min_size=1),
            "format": st.just("date"),
        },
    )
    integers = st.fixed_dictionaries(
        {"type": st.just("integer")},
        optional={"minimum": st.integers(-5, 0), "maximum": st.integers(0, 50)},
    )
    numbers = st.fixed_dictionaries(
        {"type": st.just("number")}, optional={"exclusiveMaximum": st.floats(1, 100)}
    )
    return st.one_of(
        strings,
        integers,
        numbers,
        st.just({"type": "boolean"}),
        st.just({"type": "null"}),
    )


def _container_schemas(children: st.SearchStrategy[dict[str, Any]]) -> Any:
    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(_names, children, max_size=4))
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if properties and draw(st.booleans()):
            schema["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
        if draw(st.booleans()):
            schema["additionalProperties"] = draw(st.booleans())
        return schema

    arrays = st.builds(
        lambda items, bounds, unique: {
            "type": "array",
            "items": items,
            **bounds,
            **({"uniqueItems": True} if unique else {}),
        },
        children,
        st.fixed_dictionaries(
            {}, optional={"minItems": st.integers(0, 2), "maxItems": st.integers(2, 4)}
        ),
        st.booleans(),
    )
    return objects() | arrays


schemas = st.recursive(_leaf_schemas(), _container_schemas, max_leaves=8)


def _value_for(schema: dict[str, Any], draw: st.DrawFn) -> Any:
    """A value of the schema's JSON type (often valid, sometimes not: the checks decide)."""
    kind = schema["type"]
    if kind == "string":
        if "enum" in schema and draw(st.booleans()):
            return draw(st.sampled_from(schema["enum"]))
        if schema.get("format") == "date" and draw(st.booleans()):
            return draw(st.sampled_from(["2026-07-12", "2026-02-30", "2026-1"]))
        return draw(st.text(alphabet='opencld-é\n"\\', max_size=8))
    if kind == "integer":
        return draw(st.integers(-10, 60))
    if kind == "number":
        return draw(st.one_of(st.integers(-3, 120), st.floats(-10, 120, allow_nan=False)))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        return [_value_for(schema["items"], draw) for _ in range(draw(st.integers(0, 5)))]
    value: dict[str, Any] = {}
    for name, child in schema["properties"].items():
        if draw(st.integers(0, 4)):
            value[name] = _value_for(child, draw)
    if draw(st.integers(0, 5)) == 0:
        value["extra"] = draw(st.integers(0, 3))
    return value


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], str, list[str]]:
    schema = draw(schemas)
    value = _value_for(schema, draw)
    if draw(st.integers(0, 6)) == 0:  # a value of the wrong type somewhere near the top
        value = draw(st.sampled_from([1, "s", [1], {"z": None}, 2.5, True]))
    text = json.dumps(
        value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1]))
    )
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=30)))
    bounds = [0, *(c for c in cuts if c < len(text)), len(text)]
    return schema, text, [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans())
def test_signals_are_sound_and_valid_answers_raise_none(
    case: tuple[dict[str, Any], str, list[str]], partial_strings: bool
) -> None:
    schema, text, fragments = case
    output = PartialOutput(schema, partial_strings=partial_strings)
    event(f"checking={output.checking}")  # False for the few unsatisfiable generated schemas
    for fragment in fragments:
        output.feed(fragment)
    output.finish()
    event(f"early signals={bool(output.problems)}")
    final = decode_json(text)
    assert output.value == final
    expected = validate_output(schema, final)
    assert output.final_problems == tuple(expected)
    if output.problems:
        assert expected, [p.message for p in output.problems]  # sound: the answer does fail
    if not expected:
        assert output.problems == ()  # no false alarm on a valid answer


# --- each signal, as early as it can show ------------------------------------------------

_FORM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["status", "count", "lines"],
    "properties": {
        "status": {"type": "string", "enum": ["open", "closed"]},
        "count": {"type": "integer", "minimum": 0},
        "title": {"type": "string", "maxLength": 5},
        "due": {"type": "string", "format": "date"},
        "lines": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "required": ["sku"],
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            },
        },
    },
}


def _first_signal(fragments: list[str]) -> tuple[int, list[tuple[str, str | None, str]]]:
    output = PartialOutput(_FORM)
    for index, fragment in enumerate(fragments):
        update = output.feed(fragment)
        if update.problems:
            return index, [(p.code, p.json_pointer, p.message) for p in update.problems]
    raise AssertionError("no signal")


@pytest.mark.parametrize(
    ("fragments", "at", "pointer", "message"),
    [
        (
            ['{"count": ', '"', "3"],
            1,
            "/output/count",
            "expected an integer, the answer has a string",
        ),
        (['{"count": 1.', "5", ","], 2, "/output/count", '1.5 is not of type "integer"'),
        (['{"cou', 'nt": -', "1", "}"], 3, "/output/count", "-1 is less than the minimum of 0"),
        (['{"colour', '"', ": 1"], 1, "/output/colour", "member 'colour' is not allowed here"),
        (
            ['{"status": "op', "en", "x"],
            2,
            "/output/status",
            "no value allowed here begins with 'openx'",
        ),
        (['{"status": "cl', "osed!"], 1, "/output/status", "already longer than every value"),
        (['{"title": "abc', "de", "f"], 2, "/output/title", "longer than 5 characters"),
        (['{"due": "2026-02-30', '"'], 1, "/output/due", "value is not a valid date"),
        (
            ['{"lines": [{"sku": "a"}, {"sku": "b"}', ", {", '"sku": "c"}'],
            2,
            "/output/lines",
            "more than 2 items",
        ),
        (['{"lines": [{"qty": ', '"', "2"], 1, "/output/lines/0/qty", "expected an integer"),
        (['{"lines": [{"qty": 2', "}"], 1, "/output/lines/0", '"sku" is a required property'),
        (['{"status": "open"', "}"], 1, "/output", '"count" is a required property'),
        (["[", "1"], 0, "/output", "expected an object, the answer has an array"),
    ],
)
def test_each_signal_shows_as_soon_as_it_is_certain(
    fragments: list[str], at: int, pointer: str, message: str
) -> None:
    index, problems = _first_signal(fragments)
    assert index == at
    assert any(
        p[0] == "TQX_OUTPUT_SCHEMA" and p[1] == pointer and message in p[2] for p in problems
    ), problems


def test_signals_are_reported_once() -> None:
    output = PartialOutput(_FORM, partial_strings=True)
    seen = []
    for fragment in ['{"title": "abcdef', "g", "h", '"', ', "status": "x', "y", '"}']:
        seen.extend(p.json_pointer for p in output.feed(fragment).problems)
    assert seen.count("/output/title") == 1  # maxLength while arriving, not again when complete
    assert seen.count("/output/status") == 1  # enum while arriving, not again when complete
    assert len(output.problems) == len(seen)


def test_a_valid_form_fills_in_without_signals() -> None:
    answer = {
        "status": "open",
        "count": 2,
        "title": "Plan",
        "due": "2026-07-12",
        "lines": [{"sku": "a", "qty": 1}, {"sku": "b"}],
    }
    text = json.dumps(answer)
    output = PartialOutput(_FORM, partial_strings=True)
    values = []
    for char in text:
        update = output.feed(char)
        assert update.problems == ()
        values.append(json.dumps(update.value) if update.value is not MISSING else None)
    assert output.done
    assert output.value == answer
    assert output.final_problems == ()
    assert '{"status": "op"}' in values  # the form filled in field by field


def test_malformed_json_is_one_diagnostic_never_an_exception() -> None:
    output = PartialOutput(_FORM)
    output.feed('{"status": "open"')
    update = output.feed("]")
    assert [(p.code, p.json_pointer) for p in update.problems] == [
        ("TQX_RUNTIME_INVALID_RESPONSE", "/output")
    ]
    assert "at byte 17" in update.problems[0].message
    assert update.partial is None
    assert output.feed("}").problems == ()  # nothing more once malformed
    assert output.finish().problems == ()
    assert output.final_problems is None
    truncated = PartialOutput(None)
    truncated.feed('{"a": [1')
    assert "ends early" in truncated.finish().problems[0].message


def test_schemas_outside_the_bounded_subset_are_judged_only_when_complete() -> None:
    schema = {"type": "object", "additionalProperties": False, "patternProperties": {"^x": {}}}
    output = PartialOutput(schema)
    assert not output.checking
    assert output.feed('{"xa": 1, "b": 2}').problems == ()
    assert output.final_problems is not None
    assert [p.json_pointer for p in output.final_problems] == ["/output"]
    assert PartialOutput(None).feed("[1]").problems == ()


def test_pointers_escape_member_names() -> None:
    schema = {"type": "object", "additionalProperties": False, "properties": {}}
    problems = PartialOutput(schema).feed('{"a/b~c": 1').problems
    assert [p.json_pointer for p in problems] == ["/output/a~1b~0c"]


def test_a_reference_contract_answer_streams_clean_and_a_wrong_one_is_caught(
    reference: Path,
) -> None:
    source = (reference / "crm3/contracts/bli-62-document-drafting.yaml").read_text("utf-8")
    contract, diagnostics = parse_contract(source)
    assert contract is not None
    assert not diagnostics
    answer = (reference / "crm3/evals/bli-62-output.json").read_text("utf-8")
    output = PartialOutput(contract.output_schema)
    assert output.checking
    for start in range(0, len(answer), 4):
        assert output.feed(answer[start : start + 4]).problems == ()
    output.finish()
    assert output.value == decode_json(answer)
    assert output.final_problems == ()
    wrong = PartialOutput(contract.output_schema)
    problems = wrong.feed('{"surprise": ').problems
    assert [p.code for p in problems] == ["TQX_OUTPUT_SCHEMA"]
