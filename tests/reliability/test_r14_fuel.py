"""R14: work is bounded, not only bytes — render fuel, static refusal and cancellation.

Issue #29 items 1: three nested ``for_each`` with an empty body over a 3 KB array rendered
nothing for 15 s (300 items) and more than a minute (1,000 items); a chain of components each
calling the next twice (a 1.5 KB contract that ``validate`` passed) took 79 s and 165 MiB at
depth 24 and was killed after 600 s at 864 MiB at depth 28. Every rendering operation is given
such work: each must be refused with ``TQX_FUEL_EXHAUSTED`` (naming the budget), statically
where the contract alone proves it (the component chains, before any request), within
:data:`DEADLINE_S` and :data:`MEMORY_BUDGET_MIB` of peak-memory growth. A call whose cancel
token is set while it renders must stop within :data:`CANCEL_S`.

The bounds are generous for a loaded, shared machine; docs/reliability.md has the figures
measured (the default budget, a million steps, is about half a second of rendering).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit

from templiqx_application import TempliqxService
from templiqx_contracts import Diagnostic, OperationEnvelope
from templiqx_core.fuel import MAX_RENDER_FUEL
from templiqx_local import compose

SUITE = "R14"
DEADLINE_S = 10.0
MEMORY_BUDGET_MIB = 64.0
CANCEL_S = 1.0

HEADER = "api_version: templiqx/v1alpha1\nid: {id}\nversion: 1.0.0\ncapabilities: [text]\n"
LOOPS = (
    HEADER.format(id="loops")
    + """\
inputs:
  xs: {required: true, schema: {type: array, items: {type: integer}}}
  big: {required: false, schema: {type: string}}
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
  - id: heavy
    inputs: {xs: [LIST]}
    fake_output: fine
"""
)
WORK = (
    HEADER.format(id="work")
    + """\
inputs:
  xs: {required: true, schema: {type: array, items: {type: integer}}}
  big: {required: true, schema: {type: string}}
  same: {required: true, schema: {type: string}}
messages:
  - role: user
    content:
      - kind: for_each
        collection: {kind: ref, path: inputs.xs}
        item: a
        body:
          - kind: when
            condition:
              kind: equals
              left: {kind: ref, path: inputs.big}
              right: {kind: ref, path: inputs.same}
            then: []
          - kind: interpolate
            expression: {kind: ref, path: inputs.big}
            filters: [trim, trim]
output_schema: {type: string}
"""
)


def chain(depth: int) -> str:
    """Components each calling the next twice: 2**depth expansions of a tiny contract."""
    lines = [HEADER.format(id=f"chain{depth}"), "components:\n"]
    for index in range(depth):
        call = f"{{kind: component, name: c{index + 1}}}"
        lines.append(f"  c{index}:\n    content: [{call}, {call}]\n")
    lines.append(f"  c{depth}:\n    content: [{{kind: text, value: x}}]\n")
    lines.append("messages:\n  - role: user\n    content: [{kind: component, name: c0}]\n")
    lines.append("output_schema: {type: string}\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TempliqxService]:
    root = tmp_path_factory.mktemp("r14") / "root"
    package = kit.fresh_welcome(root)
    contracts = {
        "loops": LOOPS.replace("LIST", ", ".join(map(str, range(1000)))),
        "work": WORK,
        "chain24": chain(24),
        "chain28": chain(28),
    }
    listed = []
    for name, source in contracts.items():
        (package / "contracts" / f"{name}.yaml").write_text(source, encoding="utf-8")
        listed.append(f"  - {name}\n")
    manifest = package / "templiqx.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("contracts:\n", "contracts:\n" + "".join(listed), 1))
    return root, compose(root)


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "work-amplifying calls", ">=", 15)
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    figures.expect(SUITE, "slowest stop after a cancel", "<=", CANCEL_S, " s")
    yield
    total = figures.get(SUITE, "work-amplifying calls")
    figures.expect(SUITE, "refused with TQX_FUEL_EXHAUSTED naming the budget", "==", total)


def _eval_diagnostics(envelope: OperationEnvelope, contract: str) -> OperationEnvelope:
    """An eval envelope with its case's own diagnostics added (they live in its result)."""
    result = envelope.to_builtins().get("result", {})
    cases = result.get("cases", [result])
    case = next(c for c in cases if c.get("contract_id") == contract)
    inner = [Diagnostic.error(d["code"], d["message"], "") for d in case["diagnostics"]]
    return OperationEnvelope.build(envelope.operation, diagnostics=[*envelope.diagnostics, *inner])


def _check(label: str, run: Callable[[], OperationEnvelope], *, static: bool = False) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "work-amplifying calls")
    with kit.measure_peak() as peak:
        envelope = run()
    figures.peak(SUITE, "slowest refusal", round(peak.seconds, 3))
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
    problems = kit.envelope_problems(envelope, envelope.operation)
    assert not problems, problems
    found = [
        d
        for d in envelope.diagnostics
        if d.code == "TQX_FUEL_EXHAUSTED" and "TEMPLIQX_RENDER_FUEL" in d.message
    ]
    if found and not envelope.ok:
        figures.add(SUITE, "refused with TQX_FUEL_EXHAUSTED naming the budget")
        if static and "every render of this contract" in found[0].message:
            figures.add(SUITE, "refused statically, before any request")
    assert not envelope.ok, f"{label}: finished"
    assert found, f"{label}: {[(d.code, d.message[:120]) for d in envelope.diagnostics]}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


CALL = {"package": "welcome", "capabilities": ["text"]}
RENDERING = ("compile_contract", "render_contract", "execute_contract")


@pytest.mark.parametrize("operation", RENDERING)
@pytest.mark.parametrize("items", [300, 1000])
def test_nested_loops_without_output(
    sandbox: tuple[Path, TempliqxService], operation: str, items: int
) -> None:
    _, service = sandbox
    arguments: dict[str, Any] = {**CALL, "contract": "loops", "inputs": {"xs": list(range(items))}}
    if operation == "execute_contract":
        arguments["fixture_output"] = "fine"
    _check(f"{operation}: 3 x {items} loops", lambda: service.invoke(operation, arguments))


@pytest.mark.parametrize("operation", ["test_package", "run_eval"])
def test_an_eval_fixture_that_loops(sandbox: tuple[Path, TempliqxService], operation: str) -> None:
    _, service = sandbox
    arguments: dict[str, Any] = {"package": "welcome", "capabilities": ["text"]}
    if operation == "run_eval":
        arguments.update(contract="loops", fixture_id="heavy")
    _check(
        f"{operation}: a 1,000-item fixture",
        lambda: _eval_diagnostics(service.invoke(operation, arguments), "loops"),
    )


@pytest.mark.parametrize("depth", [24, 28])
@pytest.mark.parametrize("operation", ["validate_contract", "render_contract"])
def test_component_call_trees(
    sandbox: tuple[Path, TempliqxService], depth: int, operation: str
) -> None:
    _, service = sandbox
    arguments: dict[str, Any] = {"package": "welcome", "contract": f"chain{depth}"}
    if operation == "render_contract":
        arguments["capabilities"] = ["text"]
    _check(
        f"{operation}: components 2**{depth}",
        lambda: service.invoke(operation, arguments),
        static=True,
    )


@pytest.mark.parametrize("operation", RENDERING)
def test_comparisons_and_filters_over_large_values(
    sandbox: tuple[Path, TempliqxService], operation: str
) -> None:
    """An ``equals`` of two 1 MB strings and ``trim`` of 1 MB of spaces, 10,000 times over:
    10 GB of work that renders nothing (the values differ, trim leaves nothing)."""
    _, service = sandbox
    big = " " * 1_000_000
    inputs = {"xs": list(range(10_000)), "big": big, "same": big[:-1] + "!"}
    arguments: dict[str, Any] = {**CALL, "contract": "work", "inputs": inputs}
    if operation == "execute_contract":
        arguments["fixture_output"] = "fine"
    _check(f"{operation}: large equals and filters", lambda: service.invoke(operation, arguments))


def test_statically_refused_calls_are_counted() -> None:
    """Runs after the component cases: each of them was refused by validation."""
    assert kit.FIGURES.get(SUITE, "refused statically, before any request") >= 4


@pytest.mark.parametrize(
    ("operation", "code"),
    [
        ("render_contract", "TQX_CANCELLED"),
        ("compile_contract", "TQX_CANCELLED"),
        ("execute_contract", "TQX_RUNTIME_CANCELLED"),
    ],
)
def test_a_cancelled_call_stops_as_it_draws_fuel(
    sandbox: tuple[Path, TempliqxService], operation: str, code: str
) -> None:
    root, _ = sandbox
    service = compose(root)
    unlimited = TempliqxService(
        service._ctx.store, service._ctx.workspace, render_fuel=MAX_RENDER_FUEL
    )
    token = threading.Event()
    arguments: dict[str, Any] = {**CALL, "contract": "loops", "inputs": {"xs": list(range(1000))}}
    if operation == "execute_contract":
        arguments["fixture_output"] = "fine"
    stopped: list[float] = []
    outcome: list[OperationEnvelope] = []

    def call() -> None:
        outcome.append(unlimited.invoke(operation, arguments, cancel=token))
        stopped.append(time.perf_counter())

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.5)
    assert worker.is_alive(), "the call should still be rendering"
    cancelled_at = time.perf_counter()
    token.set()
    worker.join(30)
    assert not worker.is_alive()
    latency = stopped[0] - cancelled_at
    kit.FIGURES.peak(SUITE, "slowest stop after a cancel", round(latency, 4), " s")
    kit.FIGURES.add(SUITE, "cancelled calls")
    assert [d.code for d in outcome[0].diagnostics] == [code]
    assert latency <= CANCEL_S, f"stopped {latency:.3f} s after the cancel"
