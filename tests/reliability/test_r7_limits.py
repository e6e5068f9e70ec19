"""R7: YAML bombs, 100 MB inputs and 10,000-deep nesting are refused fast, in bounded memory.

Every hostile document reaches templiqx the way a user's would: as a ``put_contract`` source,
as a file stored in a package (contract, manifest, lock, include partial, translation bundle),
as request arguments (``inputs``, ``context``, ``fixture_output``), or as a mock scenario
manifest. Each must be refused within one second with a ``TQX_*`` diagnostic (or port error)
whose message names the documented limit it hit, while the process's peak resident memory
grows by no more than :data:`MEMORY_BUDGET_MIB`.

The parser-level limit tests live in ``packages/templiqx-core/tests/test_yaml_limits.py``; this
suite proves the limits hold on every path *into* the parser.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit

from templiqx_application import TempliqxService
from templiqx_contracts import OperationEnvelope
from templiqx_local import compose
from templiqx_mock import runtime_from_path
from templiqx_ports import PortError

SUITE = "R7"
DEADLINE_S = 1.0
MEMORY_BUDGET_MIB = 64.0
HUGE = 100 * 1024 * 1024
DEPTH = 10_000

SIZE = ("MAX_DOCUMENT_BYTES", "MAX_ARGUMENT_BYTES", "MAX_SCENARIO_BYTES")
NESTING = ("MAX_NESTING_DEPTH", "MAX_ARGUMENT_DEPTH")
ALIASES = ("MAX_EXPANDED_NODES", "ALIAS_EXPANSION_FACTOR")


def laughs(levels: int = 9, fan_out: int = 10) -> str:
    """The billion-laughs document: ``fan_out ** levels`` strings through nested aliases."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * fan_out) + "]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


def huge_text() -> str:
    return "a: " + "x" * HUGE


BOMBS: dict[str, Callable[[], str]] = {
    "billion laughs (9 levels of 10 aliases)": laughs,
    "alias budget (5 levels)": lambda: laughs(5),
    "alias fan-out (600 x 2,000 nodes)": lambda: (
        "a: &a [" + ", ".join(["x"] * 2000) + "]\nb: [" + ", ".join(["*a"] * 600) + "]\n"
    ),
    "aliases nested past the depth limit": lambda: (
        f"a: &d {'[' * 100}{']' * 100}\nb: {'[' * 30}*d{']' * 30}\n"
    ),
}
DEEP: dict[str, Callable[[], str]] = {
    "10,000-deep flow sequences": lambda: "[" * DEPTH + "]" * DEPTH,
    "10,000-deep flow mappings": lambda: "{a: " * DEPTH + "}" * DEPTH,
    "10,000-deep block sequences": lambda: "- " * DEPTH + "x\n",
}


def _limits_for(label: str) -> tuple[str, ...]:
    if label in BOMBS:
        return NESTING if "depth" in label else ALIASES
    if label in DEEP:
        return NESTING
    return SIZE


DOCUMENTS: dict[str, Callable[[], str]] = {**BOMBS, **DEEP, "100 MB document": huge_text}


@dataclass
class Outcome:
    codes: list[str]
    messages: list[str]


def _from_envelope(envelope: OperationEnvelope, operation: str) -> Outcome:
    problems = kit.envelope_problems(envelope, operation)
    assert not problems, problems
    assert not envelope.ok, f"{operation} accepted the hostile input"
    errors = [d for d in envelope.diagnostics if d.severity == "error"]
    return Outcome([d.code for d in errors], [d.message for d in errors])


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TempliqxService]:
    root = tmp_path_factory.mktemp("r7") / "root"
    kit.fresh_welcome(root)
    return root, compose(root)


def _check(label: str, run: Callable[[], Outcome], limits: tuple[str, ...]) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "hostile inputs")
    with kit.measure_peak() as peak:
        outcome = run()
    figures.peak(SUITE, "slowest refusal", round(peak.seconds, 3))
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
    codes_ok = bool(outcome.codes) and all(kit.CODE.fullmatch(code) for code in outcome.codes)
    named = any(limit in message for message in outcome.messages for limit in limits)
    if codes_ok and named:
        figures.add(SUITE, "refused with a TQX_* error naming the limit")
    assert codes_ok, f"{label}: no TQX_* error: {outcome}"
    assert named, f"{label}: no message names {' or '.join(limits)}: {outcome.messages}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "hostile inputs", ">=", 60)
    figures.expect(SUITE, "refused with a TQX_* error naming the limit", ">=", 60)
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    yield
    total = figures.get(SUITE, "hostile inputs")
    figures.expect(SUITE, "refused with a TQX_* error naming the limit", "==", total)


# --- put_contract sources -------------------------------------------------------------------


@pytest.mark.parametrize("label", list(DOCUMENTS))
def test_put_contract_source(sandbox: tuple[Path, TempliqxService], label: str) -> None:
    _, service = sandbox
    source = DOCUMENTS[label]()

    def run() -> Outcome:
        arguments = {"package": "welcome", "contract": "hostile", "source": source}
        return _from_envelope(service.invoke("put_contract", arguments), "put_contract")

    _check(f"put_contract: {label}", run, _limits_for(label))


# --- files stored in a package --------------------------------------------------------------

STORED: dict[str, tuple[str, list[tuple[str, dict[str, Any]]]]] = {
    "contract": (
        "contracts/onboarding-summary.yaml",
        [
            ("inspect_contract", {"package": "welcome", "contract": "onboarding-summary"}),
            ("compile_contract", {"package": "welcome", "contract": "onboarding-summary"}),
        ],
    ),
    "manifest": (
        "templiqx.yaml",
        [("discover_packages", {}), ("validate_package", {"package": "welcome"})],
    ),
    "lock": ("templiqx.lock", [("validate_package", {"package": "welcome"})]),
    "include partial": (
        "partials/house-style.yaml",
        [("compile_contract", {"package": "welcome", "contract": "onboarding-summary"})],
    ),
    "translation bundle": (
        "translations/nl.yaml",
        [("compile_contract", {"package": "welcome", "contract": "onboarding-summary"})],
    ),
}


@pytest.mark.parametrize("label", list(DOCUMENTS))
@pytest.mark.parametrize("stored", list(STORED))
def test_stored_document(sandbox: tuple[Path, TempliqxService], stored: str, label: str) -> None:
    root, service = sandbox
    relative, calls = STORED[stored]
    target = root / "welcome" / relative
    original = target.read_bytes() if target.exists() else None
    target.write_text(DOCUMENTS[label](), encoding="utf-8")
    try:
        for operation, arguments in calls:

            def run(operation: str = operation, arguments: dict[str, Any] = arguments) -> Outcome:
                return _from_envelope(service.invoke(operation, arguments), operation)

            _check(f"stored {stored} / {operation}: {label}", run, _limits_for(label))
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_bytes(original)


# --- request arguments ------------------------------------------------------------------------


def _deep_dict() -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(DEPTH):
        value = {"a": value}
    return value


def _deep_list() -> list[Any]:
    value: list[Any] = []
    for _ in range(DEPTH):
        value = [value]
    return value


DIGEST = {"package": "welcome", "contract": "account-digest"}
REQUESTS: dict[str, tuple[str, Callable[[], dict[str, Any]], tuple[str, ...]]] = {
    "10,000-deep inputs": ("compile_contract", lambda: {**DIGEST, "inputs": _deep_dict()}, NESTING),
    "10,000-deep context": (
        "render_contract",
        lambda: {**DIGEST, "context": {"c": _deep_list()}},
        NESTING,
    ),
    "10,000-deep fixture output": (
        "execute_contract",
        lambda: {
            **DIGEST,
            "inputs": {"account": "a", "open_tickets": 1},
            "fixture_output": _deep_list(),
        },
        NESTING,
    ),
    "100 MB input string": (
        "compile_contract",
        lambda: {**DIGEST, "inputs": {"account": "x" * HUGE, "open_tickets": 1}},
        SIZE,
    ),
    "100 MB context": (
        "render_contract",
        lambda: {**DIGEST, "context": {"notes": ["y" * (HUGE // 4)] * 4}},
        SIZE,
    ),
    "100 MB fixture output": (
        "execute_contract",
        lambda: {
            **DIGEST,
            "inputs": {"account": "a", "open_tickets": 1},
            "fixture_output": "z" * HUGE,
        },
        SIZE,
    ),
}


@pytest.mark.parametrize("label", list(REQUESTS))
def test_request_arguments(sandbox: tuple[Path, TempliqxService], label: str) -> None:
    _, service = sandbox
    operation, build, limits = REQUESTS[label]
    arguments = build()

    def run() -> Outcome:
        return _from_envelope(service.invoke(operation, arguments), operation)

    _check(f"{operation}: {label}", run, limits)


# --- mock scenario manifests ------------------------------------------------------------------

SCENARIOS: dict[str, tuple[str, Callable[[], str], tuple[str, ...]]] = {
    "YAML billion laughs": ("bomb.yaml", laughs, ALIASES),
    "100 MB YAML": ("huge.yaml", huge_text, SIZE),
    "100 MB JSON": ("huge.json", lambda: '{"a": "' + "x" * HUGE + '"}', SIZE),
    "10,000-deep YAML flow": ("deep.yaml", DEEP["10,000-deep flow sequences"], NESTING),
    "10,000-deep YAML block": ("deep-block.yaml", DEEP["10,000-deep block sequences"], NESTING),
    "10,000-deep JSON array": ("deep.json", lambda: "[" * DEPTH + "]" * DEPTH, NESTING),
    "10,000-deep JSON object": (
        "deep-object.json",
        lambda: '{"a":' * DEPTH + "1" + "}" * DEPTH,
        NESTING,
    ),
}


@pytest.mark.parametrize("label", list(SCENARIOS))
def test_mock_scenario_manifest(tmp_path: Path, label: str) -> None:
    name, build, limits = SCENARIOS[label]
    path = tmp_path / name
    with path.open("w", encoding="utf-8") as out:
        out.write(build())

    def run() -> Outcome:
        try:
            runtime_from_path(path)
        except PortError as error:
            return Outcome([error.code], [str(error)])
        raise AssertionError("the hostile scenario manifest was accepted")

    _check(f"scenario manifest: {label}", run, limits)
    os.unlink(path)
