"""R16: include fan-out under the include limit is bounded by the content it splices.

Issue #29: a contract including ``mid`` 99 times, ``mid`` including ``leaf`` 100 times (9,999
includes, under the 10,000 ``MAX_INCLUDE_EXPANSIONS``): ~32 KB of files, ``validate`` ok after
15 s and 538 MiB; a 480 KB leaf took more than a minute and 933 MiB. Every file is listed, so
signing and strict mode do not help. Each shape goes through ``validate_contract``,
``render_contract`` and ``validate_package``: refused with ``TQX_INCLUDE_INVALID`` naming
``MAX_SPLICED_NODES`` within :data:`DEADLINE_S` and :data:`MEMORY_BUDGET_MIB` of peak-memory
growth, and one just under the limit still validates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import reliability_kit as kit

from templiqx_contracts import OperationEnvelope
from templiqx_local import compose

SUITE = "R16"
DEADLINE_S = 10.0
MEMORY_BUDGET_MIB = 64.0


def _leaf(nodes: int, value: str) -> str:
    return "".join(f"- {{kind: text, value: '{value}{index} '}}\n" for index in range(nodes))


SHAPES = {
    "99 x 100 includes of a 32-node leaf (~32 KB of files)": _leaf(32, "leaf "),
    "99 x 100 includes of a 480 KB leaf": _leaf(32, "x" * 15_000),
    "99 x 100 includes of a 11-node leaf": _leaf(11, "l"),
}
OPERATIONS: dict[str, dict[str, object]] = {
    "validate_contract": {"package": "fan", "contract": "fan"},
    "render_contract": {"package": "fan", "contract": "fan", "capabilities": ["text"]},
    "validate_package": {"package": "fan"},
}
MAIN = (
    "api_version: templiqx/v1alpha1\nid: fan\nversion: 1.0.0\ncapabilities: [text]\n"
    "messages:\n  - role: user\n    content:\n"
    + "      - {kind: include, path: partials/mid.yaml}\n" * 99
    + "output_schema: {type: string}\n"
)
MANIFEST = (
    "api_version: templiqx/v1alpha1\npackage: fan\nversion: 0.1.0\ncontracts: [fan]\n"
    "components: [partials/mid.yaml, partials/leaf.yaml]\n"
)


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "fan-out calls", ">=", len(SHAPES) * len(OPERATIONS))
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    figures.expect(SUITE, "a contract just under the limit validates (1 = yes)", "==", 1)
    yield
    total = figures.get(SUITE, "fan-out calls")
    figures.expect(SUITE, "refused naming MAX_SPLICED_NODES", "==", total)


def _package(root: Path, leaf: str) -> None:
    folder = root / "fan"
    (folder / "contracts").mkdir(parents=True, exist_ok=True)
    (folder / "partials").mkdir(exist_ok=True)
    (folder / "templiqx.yaml").write_text(MANIFEST)
    (folder / "contracts" / "fan.yaml").write_text(MAIN)
    (folder / "partials" / "mid.yaml").write_text(
        "- {kind: include, path: partials/leaf.yaml}\n" * 100
    )
    (folder / "partials" / "leaf.yaml").write_text(leaf)


def _check(label: str, run: Callable[[], OperationEnvelope]) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "fan-out calls")
    with kit.measure_peak() as peak:
        envelope = run()
    figures.peak(SUITE, "slowest refusal", round(peak.seconds, 3))
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
    assert not kit.envelope_problems(envelope, envelope.operation)
    found = [
        d
        for d in envelope.diagnostics
        if d.code == "TQX_INCLUDE_INVALID" and "MAX_SPLICED_NODES" in d.message
    ]
    if found and not envelope.ok:
        figures.add(SUITE, "refused naming MAX_SPLICED_NODES")
    assert not envelope.ok, f"{label}: accepted"
    assert found, f"{label}: {[d.code for d in envelope.diagnostics]}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_include_fan_out(tmp_path: Path, shape: str, operation: str) -> None:
    _package(tmp_path, SHAPES[shape])
    service = compose(tmp_path)
    _check(f"{operation}: {shape}", lambda: service.invoke(operation, OPERATIONS[operation]))


def test_a_fan_out_just_under_the_limit_still_works(tmp_path: Path) -> None:
    _package(tmp_path, _leaf(10, "l"))  # 99 x 100 x 10 = 99,000 spliced nodes
    envelope = compose(tmp_path).validate_contract("fan", "fan")
    kit.FIGURES.add(SUITE, "a contract just under the limit validates (1 = yes)", int(envelope.ok))
    assert envelope.ok, envelope.diagnostics
