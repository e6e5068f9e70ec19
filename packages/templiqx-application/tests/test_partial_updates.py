"""What each event changed, as incremental updates (issue #26, DECISIONS 27; issue #29 item 5).

For random JSON answers split into random deltas and ended by ``Complete`` (the answer the
deltas spelled, or another one that replaces it), ``Failed`` or nothing: applying every
update's ``changes`` so far to ``MISSING`` equals ``copy.deepcopy(view.value)`` after every
event, and their encoded size stays within the view's budget, linear in the answer, even for
answers built to make fine-grained changes expensive. The stream never reads the value for
its consumer.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from templiqx_application import (
    CHANGE_BYTES_ALLOWANCE,
    CHANGE_BYTES_PER_ANSWER_BYTE,
    PartialView,
)
from templiqx_contracts import (
    MISSING,
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    Failed,
    PartialAppend,
    PartialChange,
    PartialJSON,
    PartialSet,
    StreamEvent,
    ToolCallDelta,
    apply_partial_changes,
    decode_json,
    decode_partial_changes,
    encode_partial_changes,
    fingerprint,
)

from .conftest import PackageWriter, ServiceFactory
from .test_partial_view import ANSWER, _chunks, _service, _Spelling

SCHEMA = {"type": "object"}


def same(a: Any, b: Any) -> bool:
    """Equal as JSON, type for type and member order included (-0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def complete(output: Any) -> Complete:
    return Complete.of(
        ExecutionReceipt(
            adapter=AdapterDescriptor(id="test", version="1", capabilities=["structured_output"]),
            request_fingerprint="0" * 64,
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )
    )


def answer_bytes(events: list[StreamEvent]) -> int:
    return sum(len(e.text.encode("utf-8", "surrogatepass")) for e in events if isinstance(e, Delta))


def bound(view_rate: int, allowance: int, events: list[StreamEvent], replaced: Any) -> int:
    """The documented bound on a stream's changes: the budget, one last copy of the value
    when the stream ends, and the receipt's output when it replaces what the deltas spelled."""
    read = answer_bytes(events)
    extra = 0 if replaced is MISSING else len(encode_partial_changes([PartialSet((), replaced)]))
    return view_rate * read + allowance + 5 * read + 64 + extra


def check_stream(view: PartialView, events: list[StreamEvent]) -> list[PartialChange]:
    """Read ``events``; after each, the changes applied (to a fresh value) are the value."""
    everything: list[PartialChange] = []
    for event in events:
        update = view.read(event)
        assert update.value is view.value or same(update.value, view.value)
        everything.extend(update.changes)
        shown = copy.deepcopy(view.value)
        assert same(apply_partial_changes(MISSING, everything), shown), (event, shown)
    assert decode_partial_changes(encode_partial_changes(everything)) == everything
    return everything


# --- random answers, random deltas --------------------------------------------------------

_KEYS = st.sampled_from(['"a"', '"b"', '"a"', '"\\u0061"', '"\\u00e9t\\u00e9"', '"k\\"q"', '""'])
_NUMBERS = st.sampled_from(
    ["0", "-0", "12", "-7", "1.5", "1e15", "1E2", "-2.5e-3", "18446744073709551615", "1" * 25]
)
_ESCAPED = st.sampled_from(["\\n", '\\"', "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\u0000"])
_STRINGS = st.lists(
    _ESCAPED | st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)[1:-1]),
    max_size=5,
).map(lambda parts: '"' + "".join(parts) + '"')
_SPACE = st.sampled_from(["", "", " ", "\n  "])


@st.composite
def _container(draw: st.DrawFn, children: list[str]) -> str:
    space = draw(_SPACE)
    if draw(st.booleans()):
        return "[" + ("," + space).join(children) + "]"
    members = [f"{draw(_KEYS)}:{space}{child}" for child in children]
    return "{" + space + ("," + space).join(members) + space + "}"


answers = st.recursive(
    st.sampled_from(["null", "true", "false"]) | _NUMBERS | _STRINGS,
    lambda children: st.lists(children, max_size=5).flatmap(_container),
    max_leaves=30,
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[StreamEvent], Any]:
    """Deltas of a random answer (maybe broken), then how it ends; and the replacing output."""
    text = draw(answers)
    if draw(st.integers(0, 9)) == 0:  # a malformed answer: cut it and add a stray bracket
        text = text[: draw(st.integers(0, len(text)))] + "]"
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)))))
    bounds = [0, *(c for c in cuts if c < len(text)), len(text)]
    events: list[StreamEvent] = [Delta(text=text[a:b]) for a, b in itertools.pairwise(bounds)]
    if draw(st.booleans()):
        events.insert(
            draw(st.integers(0, len(events))), ToolCallDelta(name="t", arguments_fragment="{")
        )
    ending = draw(st.sampled_from(["spelled", "other", "failed", "open"]))
    replaced: Any = MISSING
    if ending == "spelled":  # a top-level number is read from the receipt: count it
        try:
            replaced = decode_json(text)
            events.append(complete(replaced))
        except ValueError:
            replaced = {"fixed": [1, "x"]}
            events.append(complete(replaced))
    elif ending == "other":
        replaced = draw(st.sampled_from([{"other": "answer"}, [1, 2.5, None], "text", 7, None]))
        events.append(complete(replaced))
    elif ending == "failed":
        events.append(Failed(code="TQX_RUNTIME_TIMEOUT", message="stopped"))
    return events, replaced


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from([(64, 65_536), (64, 256), (8, 128)]))
@example(
    (
        [
            Delta(text='{"a": "x\\ud83d'),
            Delta(text='\\ude00", "a": [1'),
            Delta(text=", 2]}"),
            complete({"a": [1, 2]}),
        ],
        MISSING,
    ),
    (64, 256),
)
@example(([Delta(text="4"), Delta(text="2"), complete(42)], 42), (64, 65_536))
def test_changes_applied_are_the_value_after_every_event(
    stream: tuple[list[StreamEvent], Any], budget: tuple[int, int]
) -> None:
    events, replaced = stream
    rate, allowance = budget
    view = PartialView(SCHEMA, change_rate=rate, change_allowance=allowance)
    everything = check_stream(view, events)
    size = len(encode_partial_changes(everything))
    assert size <= bound(rate, allowance, events, replaced)
    if isinstance(events[-1], Complete) and view.done:
        assert same(apply_partial_changes(MISSING, everything), events[-1].output)


def test_a_complete_that_differs_replaces_the_root() -> None:
    view = PartialView(SCHEMA)
    assert view.read(Delta(text='{"a": "b')).changes == (
        PartialSet((), {}),
        PartialSet(("a",), "b"),
    )
    update = view.read(complete({"z": 1}))
    assert update.changes == (PartialSet((), {"z": 1}),)
    assert view.read(Delta(text="ignored after the end")).changes == ()


def test_a_complete_equal_to_the_deltas_changes_nothing() -> None:
    view = PartialView(SCHEMA)
    view.read(Delta(text='{"a": [1]}'))
    assert view.read(complete({"a": [1]})).changes == ()
    assert view.read(Failed(code="X", message="y")).changes == ()


# --- bounded whatever the answer ----------------------------------------------------------


def test_fine_grained_changes_under_a_huge_path_fall_back_to_copies() -> None:
    """A 20,000-character member name, then a string in one-character deltas under it: one
    append per delta would cost 20 KB each (2 GB in all); the view stays within its budget."""
    key = "k" * 20_000
    events: list[StreamEvent] = [Delta(text='{"' + key + '": "')]
    events += [Delta(text="x")] * 100_000
    events += [Delta(text='"}'), complete({key: "x" * 100_000})]
    view = PartialView(SCHEMA)
    applied: Any = MISSING
    total = copies = 0
    for number, event in enumerate(events):
        update = view.read(event)
        if update.changes:
            total += len(encode_partial_changes(update.changes))
            copies += sum(1 for c in update.changes if isinstance(c, PartialSet) and not c.path)
            applied = apply_partial_changes(applied, update.changes)
        if number % 5_000 == 0 or number > len(events) - 3:
            assert same(applied, view.value)
    read = answer_bytes(events)
    assert total <= CHANGE_BYTES_PER_ANSWER_BYTE * read + CHANGE_BYTES_ALLOWANCE + 5 * read + 64
    assert copies < 20  # one each time the answer grew by an eighth, and one at the end
    assert applied == {key: "x" * 100_000}


def test_tool_call_deltas_between_coarse_steps_cost_nothing() -> None:
    """Only the end of the stream catches the value up: a tool-call delta after every delta
    does not make the view copy the whole value each time."""
    key = "k" * 5_000
    events: list[StreamEvent] = [Delta(text='{"' + key + '": "')]
    for _ in range(20_000):
        events += [Delta(text="x"), ToolCallDelta(name="t", arguments_fragment="")]
    events.append(Failed(code="TQX_RUNTIME_TIMEOUT", message="stopped"))
    view = PartialView(SCHEMA)
    total = 0
    applied: Any = MISSING
    for event in events:
        update = view.read(event)
        if isinstance(event, ToolCallDelta):
            assert update.changes == ()
        total += len(encode_partial_changes(update.changes)) if update.changes else 0
        applied = apply_partial_changes(applied, update.changes)
    assert applied == view.value == {key: "x" * 20_000}
    read = answer_bytes(events)
    assert total <= CHANGE_BYTES_PER_ANSWER_BYTE * read + CHANGE_BYTES_ALLOWANCE + 5 * read + 64


def test_a_change_rate_that_cannot_pay_for_a_copy_is_refused() -> None:
    with pytest.raises(ValueError, match="change_rate must be more than 5"):
        PartialView(SCHEMA, change_rate=5)


def test_a_well_formed_answer_in_small_deltas_is_never_coarsened() -> None:
    text = json.dumps({"title": "Q3 " * 2000, "items": [{"n": i, "s": "ab"} for i in range(500)]})
    view = PartialView(SCHEMA, change_allowance=0)
    changes = check_stream(view, [Delta(text=piece) for piece in _chunks(text, 3)])
    assert not any(isinstance(c, PartialSet) and not c.path for c in changes[1:])
    assert sum(isinstance(c, PartialAppend) for c in changes) > 1000
    assert len(encode_partial_changes(changes)) <= 20 * len(text)


# --- the stream never reads the value for its consumer ------------------------------------


def test_the_streams_never_read_the_value(
    make_service: ServiceFactory,
    write_pkg: PackageWriter,
    scratch_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Showing the string being written (joining its pieces) happens only when a host reads
    the value: iterating ``run.partials()`` and its changes costs what each delta holds."""
    shown = 0
    original = PartialJSON._show_growing_string

    def counting(self: PartialJSON) -> None:
        nonlocal shown
        shown += 1
        original(self)

    monkeypatch.setattr(PartialJSON, "_show_growing_string", counting)
    text = '{"name": "' + "Ada " * 500 + '", "tone": "warm", "items": []}'
    pieces = _chunks(text, 4)
    service = _service(make_service, write_pkg, scratch_root, _Spelling(pieces))
    with service.stream_contract("forms", "form") as run:
        updates = list(run.partials())
    assert len(updates) == len(pieces) + 1
    assert shown == 0
    changes = [c for u in updates for c in u.changes]
    assert apply_partial_changes(MISSING, changes) == run.envelope.result.output
    assert run.partial is not None
    assert run.partial.value == run.envelope.result.output


def test_iterator_and_async_streams_carry_the_same_changes(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Spelling(_chunks(ANSWER, 3)))
    with service.stream_contract("forms", "form") as run:
        synced = [u.changes for u in run.partials()]

    async def main() -> list[tuple[PartialChange, ...]]:
        async with service.astream_contract("forms", "form") as arun:
            return [u.changes async for u in arun.partials()]

    assert asyncio.run(main()) == synced
    flat = list(itertools.chain.from_iterable(synced))
    assert same(apply_partial_changes(MISSING, flat), run.envelope.result.output)


def test_a_sink_and_a_view_give_the_same_changes(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Spelling(_chunks(ANSWER, 7)))
    view = PartialView(SCHEMA)
    changes: list[PartialChange] = []
    envelope = service.execute_contract(
        "forms", "form", stream=True, sink=lambda event: changes.extend(view.read(event).changes)
    )
    assert same(apply_partial_changes(MISSING, changes), envelope.result.output)
    assert same(view.value, envelope.result.output)


def test_a_deep_copy_of_an_update_is_a_snapshot() -> None:
    view = PartialView(SCHEMA)
    first = view.read(Delta(text='{"a": "b'))
    kept = copy.deepcopy(first)
    view.read(Delta(text='c"}'))
    assert first.value == {"a": "bc"}  # live
    assert kept.value == {"a": "b"}
    assert kept.changes == first.changes
    assert "changes=2" in repr(first)
