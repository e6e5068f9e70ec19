"""The partial view of a streamed structured answer (issue #22 item 3, DECISIONS 22).

``run.partial`` / ``run.partials()`` on the iterator and its async twin: one update per
``Delta``, values that only grow, the receipt's output at the end, early schema signals a host
can cancel on, and envelopes that are the same whether the view is read or not.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import (
    AsyncContractStream,
    ContractStream,
    PartialUpdate,
    TempliqxService,
)
from templiqx_contracts import (
    MISSING,
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    canonical_json,
    decode_json,
    fingerprint,
)
from templiqx_local import compose
from templiqx_mock import runtime_from_path
from templiqx_ports import (
    CancelToken,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
)

from .conftest import PackageWriter, ServiceFactory

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "packages"
SCENARIO = FIXTURES / "welcome" / "scenarios" / "stream-vip"
VALUES = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))

FORM = """\
api_version: templiqx/v1alpha1
id: form
version: 1.0.0
description: Fills a form.
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: "Fill the form."}
output_schema:
  type: object
  additionalProperties: false
  required: [name, tone, items]
  properties:
    name: {type: string, maxLength: 40}
    tone: {type: string, enum: [warm, neutral]}
    count: {type: integer}
    items:
      type: array
      items:
        type: object
        properties:
          label: {type: string}
          price: {type: number}
"""
COUNT = """\
api_version: templiqx/v1alpha1
id: count
version: 1.0.0
description: Answers one number.
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: "How many?"}
output_schema: {type: integer}
"""
TEXT = """\
api_version: templiqx/v1alpha1
id: prose
version: 1.0.0
description: Answers in text.
capabilities: [text]
messages:
  - role: user
    content:
      - {kind: text, value: "Say something."}
output_schema: {type: string}
"""

ANSWER = (
    '{"name": "Ada \\u00e9 Lovelace", "tone": "warm", "count": -0, '
    '"items": [{"label": "tea", "price": 1.5}, {"label": "cake", "price": 12}]}'
)


class _Spelling(RuntimeAdapter):
    """Streams ``pieces`` as deltas, then completes with ``output`` (default: what they spell)."""

    def __init__(
        self, pieces: list[str], output: Any = MISSING, *, pause_s: float = 0.0, fail: bool = False
    ) -> None:
        self.pieces = pieces
        self.pause_s = pause_s
        self.fail = fail
        self.output = decode_json("".join(pieces)) if output is MISSING else output

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="test.spelling", version="1", capabilities=["structured_output", "text"]
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(self.output),
            output=self.output,
            output_schema_valid=True,
        )

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        for piece in self.pieces:
            if cancel is not None and cancel.is_set():
                self._failure(sink, RuntimeFailureCode.CANCELLED)
            sink(Delta(text=piece))
            time.sleep(self.pause_s)
        if self.fail:
            self._failure(sink, RuntimeFailureCode.TIMEOUT)
        receipt = self.execute(request)
        sink(Complete.of(receipt))
        return receipt

    @staticmethod
    def _failure(sink: StreamSink, code: RuntimeFailureCode) -> None:
        error = RuntimeFailureError(
            RuntimeFailure(
                code=code,
                adapter_id="test.spelling",
                adapter_version="1",
                fingerprint="0",
                detail="stopped",
            )
        )
        sink(Failed(code=error.code, message=str(error)))
        raise error


def _chunks(text: str, size: int) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


def _service(
    make_service: ServiceFactory, write_pkg: PackageWriter, root: Path, runtime: RuntimeAdapter
) -> TempliqxService:
    write_pkg(root, "forms", contracts={"form": FORM, "count": COUNT, "prose": TEXT})
    return make_service(root, runtime)


def _grows_from(before: Any, after: Any) -> bool:
    """``after`` is a prefix-extension of ``before``: members and items only added, a string
    only extended, nothing else changed."""
    if before is MISSING:
        return True
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            key in after and _grows_from(value, after[key]) for key, value in before.items()
        )
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(after) >= len(before)
            and all(_grows_from(a, b) for a, b in zip(before, after, strict=False))
        )
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return type(before) is type(after) and before == after


def _collect_sync(run: ContractStream) -> list[PartialUpdate]:
    with run:
        return [copy.deepcopy(update) for update in run.partials()]


def _collect_async(run: AsyncContractStream) -> list[PartialUpdate]:
    async def main() -> list[PartialUpdate]:
        async with run:
            return [copy.deepcopy(update) async for update in run.partials()]

    return asyncio.run(main())


Collect = Callable[[TempliqxService, str], tuple[list[PartialUpdate], Any]]


def _sync(service: TempliqxService, contract: str) -> tuple[list[PartialUpdate], Any]:
    run = service.stream_contract("forms", contract)
    return _collect_sync(run), run


def _async(service: TempliqxService, contract: str) -> tuple[list[PartialUpdate], Any]:
    run = service.astream_contract("forms", contract)
    return _collect_async(run), run


APIS = pytest.mark.parametrize("collect", [_sync, _async], ids=["iterator", "async"])


@APIS
@pytest.mark.parametrize("size", [1, 3, 17, len(ANSWER)])
def test_one_update_per_delta_growing_to_the_receipts_output(
    make_service: ServiceFactory,
    write_pkg: PackageWriter,
    scratch_root: Path,
    collect: Collect,
    size: int,
) -> None:
    pieces = _chunks(ANSWER, size)
    service = _service(make_service, write_pkg, scratch_root, _Spelling(pieces))
    updates, run = collect(service, "form")
    assert [type(u.event).__name__ for u in updates] == ["Delta"] * len(pieces) + ["Complete"]
    assert [u.event.text for u in updates[:-1]] == pieces  # type: ignore[attr-defined]
    for before, after in itertools.pairwise(updates):
        assert _grows_from(before.value, after.value), (before.value, after.value)
    output = run.envelope.result.output
    assert updates[-1].done
    assert updates[-2].done
    assert canonical_json(updates[-1].value) == canonical_json(output)  # type for type
    assert updates[-1].value["count"] == -0.0
    assert run.partial.value == output
    assert run.partial.final_problems == ()
    assert run.partial.problems == ()
    completed = [path for u in updates for path in u.completed]
    assert completed.count(()) == 1
    assert completed[-1] == ()
    assert ("items", 1, "price") in completed


@APIS
def test_strings_show_as_they_grow_and_growing_names_the_one(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    pieces = ['{"name": "Ad', 'a", "tone": "wa', 'rm", "items": []}']
    service = _service(make_service, write_pkg, scratch_root, _Spelling(pieces))
    with service.stream_contract("forms", "form") as run:
        seen = []
        for event in run:
            view = run.partial
            assert view is not None
            seen.append((type(event).__name__, copy.deepcopy(view.value), view.growing))
    assert seen == [
        ("Delta", {"name": "Ad"}, ("name",)),
        ("Delta", {"name": "Ada", "tone": "wa"}, ("tone",)),
        ("Delta", {"name": "Ada", "tone": "warm", "items": []}, None),
        ("Complete", {"name": "Ada", "tone": "warm", "items": []}, None),
    ]


@APIS
def test_an_early_schema_signal_lets_the_host_cancel(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    pieces = ['{"name": "Ada", ', '"tone": "che', 'erful", "items": []}']
    runtime = _Spelling(pieces, pause_s=0.2)  # still running when the host leaves
    service = _service(make_service, write_pkg, scratch_root, runtime)
    signals: list[str] = []

    def consume(updates: Any) -> None:
        for update in updates:
            if update.problems:
                signals.extend(f"{d.code} {d.json_pointer}" for d in update.problems)
                break  # cancels the runtime call

    if collect is _sync:
        with service.stream_contract("forms", "form") as run:
            consume(run.partials())
    else:

        async def main() -> AsyncContractStream:
            async with service.astream_contract("forms", "form") as arun:
                async for update in arun.partials():
                    if update.problems:
                        signals.extend(f"{d.code} {d.json_pointer}" for d in update.problems)
                        break
            return arun

        run = asyncio.run(main())  # type: ignore[assignment]
    assert signals == ["TQX_OUTPUT_SCHEMA /output/tone"]
    assert [d.code for d in run.envelope.diagnostics] == ["TQX_RUNTIME_CANCELLED"]
    assert len([e for e in run.envelope.stream_events if isinstance(e, Delta)]) == 2


@APIS
def test_reading_the_view_changes_no_envelope(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Spelling(_chunks(ANSWER, 5)))
    _, run = collect(service, "form")
    plain = service.execute_contract("forms", "form", stream=True)
    assert run.envelope == plain


def test_the_welcome_scenario_ends_in_its_receipt_on_both_apis() -> None:
    runtime = runtime_from_path(SCENARIO / "manifest.json")
    service = compose(str(FIXTURES), runtime=runtime)
    with service.stream_contract("welcome", "onboarding-summary", **VALUES) as run:
        updates = [copy.deepcopy(u.value) for u in run.partials()]

    async def main() -> list[Any]:
        async with service.astream_contract("welcome", "onboarding-summary", **VALUES) as arun:
            return [copy.deepcopy(u.value) async for u in arun.partials()]

    assert asyncio.run(main()) == updates
    assert updates[-1] == run.envelope.result.output
    assert updates[1] == {"summary": "Anouk "}


@APIS
def test_a_runtime_without_deltas_shows_its_answer_at_complete(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    answer = decode_json(ANSWER)
    service = _service(make_service, write_pkg, scratch_root, _Spelling([], answer))
    updates, run = collect(service, "form")
    assert len(updates) == 1
    assert isinstance(updates[0].event, Complete)
    assert updates[0].done
    assert updates[0].value == answer == run.envelope.result.output
    assert updates[0].completed[-1] == ()
    assert updates[0].problems == ()


@APIS
def test_a_top_level_number_completes_at_the_end(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Spelling(["4", "2"]))
    updates, run = collect(service, "count")
    assert [u.value for u in updates] == [MISSING, MISSING, 42]
    assert updates[-1].done
    assert run.envelope.result.output == 42


@APIS
def test_deltas_that_spell_another_answer_give_way_to_the_receipt(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    receipt_output = {"name": "Bo", "tone": "neutral", "items": []}
    runtime = _Spelling(['{"name": "Ada"', "}"], receipt_output)
    service = _service(make_service, write_pkg, scratch_root, runtime)
    updates, run = collect(service, "form")
    assert updates[-2].value == {"name": "Ada"}
    assert updates[-1].value == receipt_output == run.envelope.result.output


def test_a_text_contract_has_no_view(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Spelling(['"hi"']))
    with service.stream_contract("forms", "prose") as run:
        assert run.partial is None
        with pytest.raises(TypeError, match="answers in text"):
            next(run.partials())

    async def main() -> None:
        async with service.astream_contract("forms", "prose") as arun:
            assert arun.ok
            assert arun.partial is None
            with pytest.raises(TypeError, match="answers in text"):
                await anext(arun.partials())

    asyncio.run(main())


def test_a_refused_call_has_no_view_and_no_updates(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Spelling(["{}"]))
    with service.stream_contract("forms", "missing") as run:
        assert not run.ok
        assert run.partial is None
        assert list(run.partials()) == []
    unopened = service.stream_contract("forms", "form")
    with pytest.raises(RuntimeError, match="open the stream first"):
        _ = unopened.partial


def test_malformed_text_is_one_problem_then_the_receipt_is_taken(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path
) -> None:
    runtime = _Spelling(['{"name": "Ada"', ", ]"], output={"name": "Ada"})
    service = _service(make_service, write_pkg, scratch_root, runtime)
    with service.stream_contract("forms", "form") as run:
        updates = list(run.partials())
    assert [d.code for d in updates[1].problems] == ["TQX_RUNTIME_INVALID_RESPONSE"]
    assert "found ']' (at byte 16)" in updates[1].problems[0].message
    assert updates[1].value == {"name": "Ada"}  # reading stopped where the text broke
    assert updates[-1].done
    assert updates[-1].value == run.envelope.result.output


@APIS
def test_every_event_has_an_update_a_failure_too(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path, collect: Collect
) -> None:
    runtime = _Spelling(['{"name": "Ada", ', '"tone": "wa'], None, fail=True)
    service = _service(make_service, write_pkg, scratch_root, runtime)
    updates, run = collect(service, "form")
    assert [type(u.event).__name__ for u in updates] == ["Delta", "Delta", "Failed"]
    assert updates[-1].event == run.envelope.stream_events[-1]
    assert updates[-1].value == {"name": "Ada", "tone": "wa"}  # as the deltas left it
    assert not updates[-1].done
    assert updates[-1].completed == ()
    assert updates[-1].problems == ()
    assert [d.code for d in run.envelope.diagnostics] == ["TQX_RUNTIME_TIMEOUT"]


class _Deep(_Spelling):
    """Completes with an answer nested deeper than the interpreter's recursion limit."""

    def __init__(self) -> None:
        deep: Any = []
        for _ in range(5000):
            deep = [deep]
        super().__init__(["[[[["], deep)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint="0" * 64,  # fingerprints refuse such depth
            output=self.output,
            output_schema_valid=False,
        )


def test_an_answer_nested_too_deep_to_compare_leaves_the_view_and_the_stream_alone(
    make_service: ServiceFactory, write_pkg: PackageWriter, scratch_root: Path
) -> None:
    service = _service(make_service, write_pkg, scratch_root, _Deep())
    with service.stream_contract("forms", "form") as run:
        updates = [(type(u.event).__name__, u.done) for u in run.partials()]
        assert run.partial is not None
        assert run.partial.value == []  # what the deltas showed: no item is complete
    assert updates == [("Delta", False), ("Complete", False)]
    assert run.finished
