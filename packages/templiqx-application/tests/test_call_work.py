"""Issue #29 through the service: one fuel budget and one cancel token per call, include
fan-out bounded by what it splices, CPU slots, and nothing cached for refused contracts."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import TempliqxService
from templiqx_application.includes import MAX_SPLICED_NODES
from templiqx_contracts import OperationEnvelope
from templiqx_core.fuel import MAX_RENDER_FUEL

Factory = Callable[..., TempliqxService]
Writer = Callable[..., Path]

LOOPS = """\
api_version: templiqx/v1alpha1
id: loops
version: 1.0.0
inputs:
  xs: {required: true, schema: {type: array, items: {type: integer}}}
capabilities: [text]
messages:
  - role: user
    content:
      - kind: for_each
        collection: {kind: ref, path: inputs.xs}
        item: a
        body:
          - kind: for_each
            collection: {kind: ref, path: inputs.xs}
            item: b
            body:
              - kind: for_each
                collection: {kind: ref, path: inputs.xs}
                item: c
                body: []
output_schema: {type: string}
evals:
  - id: big
    inputs: {xs: [LIST]}
    fake_output: fine
"""
XS = list(range(1000))  # a billion empty iterations
ARGS: dict[str, Any] = {"package": "app", "contract": "loops", "capabilities": ["text"]}


def loops() -> str:
    return LOOPS.replace("LIST", ", ".join(map(str, XS)))


@pytest.fixture
def app(scratch_root: Path, write_pkg: Writer) -> Path:
    write_pkg(scratch_root, "app", contracts={"loops": loops()})
    return scratch_root


def codes(envelope: OperationEnvelope) -> list[str]:
    return [d.code for d in envelope.diagnostics]


def test_every_rendering_operation_stops_at_the_budget(app: Path, make_service: Factory) -> None:
    service = make_service(app, render_fuel=50_000)
    assert service.render_fuel == 50_000
    calls = {
        "compile_contract": {**ARGS, "inputs": {"xs": XS}},
        "render_contract": {**ARGS, "inputs": {"xs": XS}},
        "execute_contract": {**ARGS, "inputs": {"xs": XS}, "fixture_output": "x"},
        "run_eval": {**ARGS, "fixture_id": "big"},
    }
    for name, arguments in calls.items():
        started = time.perf_counter()
        envelope = service.invoke(name, arguments)
        assert time.perf_counter() - started < 5, name
        found = codes(envelope) if name != "run_eval" else codes(envelope.result)  # type: ignore[arg-type]
        assert "TQX_FUEL_EXHAUSTED" in found, (name, found)
    report = service.test_package("app", capabilities=["text"])
    assert "TQX_FUEL_EXHAUSTED" in [
        d.code for case in report.result.cases for d in case.diagnostics
    ]  # type: ignore[union-attr]


def test_the_budget_comes_from_the_environment_and_is_checked(
    app: Path, make_service: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPLIQX_RENDER_FUEL", "1234")
    assert make_service(app).render_fuel == 1234
    monkeypatch.setenv("TEMPLIQX_RENDER_FUEL", str(MAX_RENDER_FUEL + 1))
    with pytest.raises(ValueError, match="MAX_RENDER_FUEL"):
        make_service(app)
    assert make_service(app, render_fuel=99).render_fuel == 99  # the argument wins


def _cancel_after(token: threading.Event, seconds: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), token.set()))
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("operation", "extra", "code"),
    [
        ("render_contract", {}, "TQX_CANCELLED"),
        ("execute_contract", {"fixture_output": "x", "stream": True}, "TQX_RUNTIME_CANCELLED"),
    ],
)
def test_a_cancel_token_stops_any_call_within_milliseconds(
    app: Path, make_service: Factory, operation: str, extra: dict[str, Any], code: str
) -> None:
    service = make_service(app, render_fuel=MAX_RENDER_FUEL)
    token = threading.Event()
    setter_started = time.perf_counter()
    setter = _cancel_after(token, 0.3)
    envelope = service.invoke(operation, {**ARGS, "inputs": {"xs": XS}, **extra}, cancel=token)
    stopped = time.perf_counter()
    setter.join()
    assert codes(envelope) == [code]
    assert envelope.diagnostics[0].help
    if extra.get("stream"):  # a cancelled streamed execution still ends in one Failed event
        assert [type(event).__name__ for event in envelope.stream_events or []] == ["Failed"]
    assert stopped - setter_started < 0.3 + 1  # measured: milliseconds after the token


def test_a_cancelled_task_frees_its_worker(app: Path, make_service: Factory) -> None:
    """The MCP wedge in miniature: cancelling the awaiting task cancels the thread's work."""
    service = make_service(app, render_fuel=MAX_RENDER_FUEL)

    async def scenario() -> float:
        task = asyncio.ensure_future(
            service.arender_contract("app", "loops", inputs={"xs": XS}, capabilities=["text"])
        )
        await asyncio.sleep(0.3)
        task.cancel()
        cancelled_at = time.perf_counter()
        with pytest.raises(asyncio.CancelledError):
            await task  # returns once the worker has stopped
        return time.perf_counter() - cancelled_at

    assert asyncio.run(scenario()) < 1.0  # measured: milliseconds
    service.close()


def test_a_call_waiting_for_a_cpu_slot_leaves_when_cancelled(
    app: Path, make_service: Factory
) -> None:
    service = make_service(app, render_fuel=MAX_RENDER_FUEL, cpu_slots=1)
    first_token, second_token = threading.Event(), threading.Event()
    outcome: dict[str, OperationEnvelope] = {}

    def call(name: str, token: threading.Event) -> None:
        outcome[name] = service.invoke(
            "render_contract", {**ARGS, "inputs": {"xs": XS}}, cancel=token
        )

    first = threading.Thread(target=call, args=("first", first_token))
    first.start()
    time.sleep(0.2)
    second = threading.Thread(target=call, args=("second", second_token))
    second.start()
    time.sleep(0.2)
    second_token.set()
    second.join(5)
    assert not second.is_alive()
    assert codes(outcome["second"]) == ["TQX_CANCELLED"]
    assert first.is_alive()  # the slot's holder runs on
    first_token.set()
    first.join(5)
    assert codes(outcome["first"]) == ["TQX_CANCELLED"]


def test_include_fan_out_is_bounded_by_the_nodes_it_splices(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    """99 includes of a partial that includes a leaf 100 times: 9,900 includes (under the
    10,000 limit), ten text nodes a leaf: 99,000 nodes fit; a leaf of eleven does not."""
    leaf = "".join(f"- {{kind: text, value: 'leaf {index} '}}\n" for index in range(11))
    main = (
        "api_version: templiqx/v1alpha1\nid: fan\nversion: 1.0.0\ncapabilities: [text]\n"
        "messages:\n  - role: user\n    content:\n"
        + "      - {kind: include, path: partials/mid.yaml}\n" * 99
        + "output_schema: {type: string}\n"
    )
    write_pkg(
        scratch_root,
        "fan",
        contracts={"fan": main},
        files={
            "partials/mid.yaml": "- {kind: include, path: partials/leaf.yaml}\n" * 100,
            "partials/leaf.yaml": leaf,
        },
    )
    service = make_service(scratch_root)
    started = time.perf_counter()
    refused = service.validate_contract("fan", "fan")
    assert time.perf_counter() - started < 5
    assert codes(refused) == ["TQX_INCLUDE_INVALID"]
    assert "MAX_SPLICED_NODES" in refused.diagnostics[0].message
    assert str(MAX_SPLICED_NODES) in refused.diagnostics[0].message
    (scratch_root / "fan" / "partials" / "leaf.yaml").write_text(leaf.split("\n", 1)[1])
    assert service.validate_contract("fan", "fan").ok


def test_a_refused_contract_leaves_nothing_in_the_caches(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    from templiqx_core import schema

    unique = f"output_schema: {{type: string, description: refused-{time.monotonic_ns()}}}"
    valid = loops().replace("output_schema: {type: string}", unique)
    broken = valid.replace("}\nevals", ", enum: [{a: 1}]}\nevals")
    assert broken != valid
    write_pkg(scratch_root, "app", contracts={"loops": broken})
    service = make_service(scratch_root)
    before = len(schema._cache)
    refused = service.validate_contract("app", "loops")
    assert not refused.ok
    assert len(service._ctx.loader.cache) == 0
    assert len(schema._cache) == before
    (scratch_root / "app" / "contracts" / "loops.yaml").write_text(valid)
    assert service.validate_contract("app", "loops").ok
    assert len(service._ctx.loader.cache) == 1
    assert len(schema._cache) > before
