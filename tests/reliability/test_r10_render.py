"""R10: small requests that would render huge prompts are refused while rendering.

Issue #18 item 3: a ``for_each`` that interpolates an outer input rendered a 500 MB prompt
from 1 MB of arguments (1.96 s, 1.5 GB). Every operation that renders (``compile_contract``,
``render_contract``, ``execute_contract``, ``test_package``, ``run_eval``) is given requests
that multiply their size through loops, nested loops, components and separators, and one
contract whose compiled request would pass ``MAX_COMPILED_BYTES``. Each must be refused with
``TQX_RENDER_TOO_LARGE`` naming the limit, within one second, while peak memory grows by at
most 64 MiB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit

from templiqx_application import TempliqxService
from templiqx_contracts import Diagnostic, OperationEnvelope
from templiqx_local import compose

SUITE = "R10"
DEADLINE_S = 1.0
MEMORY_BUDGET_MIB = 64.0
MEGABYTE = 1_000_000

AMPLIFY = """\
api_version: templiqx/v1alpha1
id: amplify
version: 1.0.0
inputs:
  items: {required: true, schema: {type: array, items: {type: integer}}}
  note: {required: true, schema: {type: string}}
capabilities: [text]
components:
  echo:
    parameters:
      text: {required: true, schema: {type: string}}
    content:
      - {kind: interpolate, expression: {kind: ref, path: text}}
      - {kind: interpolate, expression: {kind: ref, path: text}}
messages:
  - role: user
    content:
      - kind: when
        condition:
          kind: equals
          left: {kind: ref, path: inputs.note}
          right: {kind: literal, value: "nested"}
        then:
          - kind: for_each
            collection: {kind: ref, path: inputs.items}
            item: a
            body:
              - kind: for_each
                collection: {kind: ref, path: inputs.items}
                item: b
                body: [{kind: text, value: "{hundred}"}]
        else:
          - kind: for_each
            collection: {kind: ref, path: inputs.items}
            item: i
            separator: "{separator}"
            body:
              - kind: component
                name: echo
                with: {text: {kind: ref, path: inputs.note}}
output_schema: {type: string}
evals:
  - id: amplified
    inputs: {items: [{items}], note: "{note}"}
    fake_output: fine
"""

SCHEMAS = """\
api_version: templiqx/v1alpha1
id: schemas
version: 1.0.0
inputs:
  note: {required: true, schema: {type: string}}
capabilities: [text]
messages:
  - role: user
    content: [{kind: interpolate, expression: {kind: ref, path: inputs.note}}]
output_schema:
  type: object
  properties:
    a: {type: string, description: &d {text}}
    b: {type: string, description: *d}
    c: {type: string, description: *d}
    d: {type: string, description: *d}
"""


def _amplify(separator: str = "", items: str = "1", note: str = "n") -> str:
    return (
        AMPLIFY.replace("{separator}", separator)
        .replace("{hundred}", "0123456789" * 10)
        .replace("{items}", items)
        .replace("{note}", note)
    )


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TempliqxService]:
    root = tmp_path_factory.mktemp("r10") / "root"
    package = kit.fresh_welcome(root)
    contracts = package / "contracts"
    (contracts / "amplify.yaml").write_text(_amplify(), encoding="utf-8")
    (contracts / "schemas.yaml").write_text(
        SCHEMAS.replace("{text}", "s" * 3_900_000), encoding="utf-8"
    )
    manifest = package / "templiqx.yaml"
    listed = manifest.read_text(encoding="utf-8").replace(
        "contracts:\n", "contracts:\n  - amplify\n  - schemas\n", 1
    )
    manifest.write_text(listed, encoding="utf-8")
    return root, compose(root)


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "amplifying requests", ">=", 13)
    figures.expect(SUITE, "largest prompt asked for", ">=", 100, " MB")
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    yield
    total = figures.get(SUITE, "amplifying requests")
    figures.expect(SUITE, "refused with TQX_RENDER_TOO_LARGE naming the limit", "==", total)


AMPLIFY_ARGS = {"package": "welcome", "contract": "amplify", "capabilities": ["text"]}
FIXTURE = {"fixture_output": "fine"}
# label -> (inputs, size in bytes the request asks for)
REQUESTS: dict[str, tuple[dict[str, Any], int]] = {
    "500 x a 1 MB outer input (the issue's case)": (
        {"items": list(range(500)), "note": "n" * MEGABYTE},
        500 * 2 * MEGABYTE,
    ),
    "100,000 elements x a 1 KB input": (
        {"items": [0] * 100_000, "note": "n" * 1000},
        100_000 * 2 * 1000,
    ),
    "3,000 x 3,000 nested loops of 100 bytes": (
        {"items": list(range(3000)), "note": "nested"},
        3000 * 3000 * 100,
    ),
}
OPERATIONS: dict[str, dict[str, Any]] = {
    "compile_contract": AMPLIFY_ARGS,
    "render_contract": AMPLIFY_ARGS,
    "execute_contract": {**AMPLIFY_ARGS, **FIXTURE},
}
LIMITS = ("MAX_RENDERED_BYTES", "MAX_COMPILED_BYTES")


def _check(label: str, asked: int, run: Callable[[], OperationEnvelope]) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "amplifying requests")
    figures.peak(SUITE, "largest prompt asked for", round(asked / MEGABYTE))
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
        if d.code == "TQX_RENDER_TOO_LARGE" and any(limit in d.message for limit in LIMITS)
    ]
    if not envelope.ok and found:
        figures.add(SUITE, "refused with TQX_RENDER_TOO_LARGE naming the limit")
    assert not envelope.ok, f"{label}: rendered"
    assert found, f"{label}: {[(d.code, d.message) for d in envelope.diagnostics]}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("request_label", list(REQUESTS))
def test_amplifying_requests(
    sandbox: tuple[Path, TempliqxService], operation: str, request_label: str
) -> None:
    _, service = sandbox
    inputs, asked = REQUESTS[request_label]
    arguments = {**OPERATIONS[operation], "inputs": inputs}
    _check(f"{operation}: {request_label}", asked, lambda: service.invoke(operation, arguments))


def test_a_separator_amplified_by_a_long_list(sandbox: tuple[Path, TempliqxService]) -> None:
    root, service = sandbox
    path = root / "welcome" / "contracts" / "amplify.yaml"
    path.write_text(_amplify(separator="-" * 4096), encoding="utf-8")
    try:
        arguments = {**AMPLIFY_ARGS, "inputs": {"items": [0] * 100_000, "note": ""}}
        _check(
            "4 KiB separator x 100,000 elements",
            4096 * 100_000,
            lambda: service.invoke("compile_contract", arguments),
        )
    finally:
        path.write_text(_amplify(), encoding="utf-8")


@pytest.mark.parametrize("operation", ["test_package", "run_eval"])
def test_amplifying_eval_fixtures(sandbox: tuple[Path, TempliqxService], operation: str) -> None:
    root, service = sandbox
    path = root / "welcome" / "contracts" / "amplify.yaml"
    items = ", ".join(["0"] * 2000)
    path.write_text(_amplify(items=items, note="n" * 100_000), encoding="utf-8")
    arguments: dict[str, Any] = {"package": "welcome", "capabilities": ["text"]}
    if operation == "run_eval":
        arguments.update(contract="amplify", fixture_id="amplified")

    def run() -> OperationEnvelope:
        envelope = service.invoke(operation, arguments)
        # an eval reports the case's own diagnostics inside its result
        result = envelope.to_builtins().get("result", {})
        cases = result.get("cases", [result])
        case = next(c for c in cases if c.get("contract_id") == "amplify")
        inner = [Diagnostic.error(d["code"], d["message"], "") for d in case["diagnostics"]]
        return OperationEnvelope.build(operation, diagnostics=[*envelope.diagnostics, *inner])

    try:
        _check(f"{operation}: 2,000 x a 100 KB fixture input", 2000 * 2 * 100_000, run)
    finally:
        path.write_text(_amplify(), encoding="utf-8")


def test_a_compiled_request_over_its_limit(sandbox: tuple[Path, TempliqxService]) -> None:
    _, service = sandbox
    arguments = {
        "package": "welcome",
        "contract": "schemas",
        "capabilities": ["text"],
        "inputs": {"note": "n" * 2 * MEGABYTE},
    }
    _check(
        "15.6 MB of output schema + a 2 MB message",
        int(17.6 * MEGABYTE),
        lambda: service.invoke("compile_contract", arguments),
    )
