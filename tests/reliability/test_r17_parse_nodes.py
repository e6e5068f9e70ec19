"""R17: parsing within the size limits is bounded by nodes as well as bytes.

Issue #29: an 8 KB contract whose aliases expand to ~330,000 maps compiled in 3.9 s and
171 MiB, and a 3 MB flow list of a million ``{}`` took 15 s — both under every byte and alias
limit. ``MAX_EXPANDED_NODES`` (100,000 nodes after alias expansion) refuses such documents while
reading: each shape, as a ``put_contract`` source, a stored contract, a translation bundle and a
manifest, must be refused with the reader's stable code, ``TQX_PARSE_LIMIT``, naming
``MAX_EXPANDED_NODES`` — or, where the document is read on the way to something else, the code
that relays it as docs/reliability.md's limits table says (a translation bundle:
``TQX_TRANSLATION_INVALID``; a manifest: ``TQX_DATA_INVALID``) — within :data:`DEADLINE_S` and
:data:`MEMORY_BUDGET_MIB`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import reliability_kit as kit

from templiqx_contracts import OperationEnvelope
from templiqx_core import limits
from templiqx_local import compose

SUITE = "R17"
DEADLINE_S = 10.0
MEMORY_BUDGET_MIB = 64.0
HEAD = "api_version: templiqx/v1alpha1\nid: nodes\nversion: 1.0.0\ncapabilities: [text]\n"
TAIL = (
    "messages:\n  - role: user\n    content: [{kind: text, value: hi}]\n"
    "output_schema: {type: string}\n"
)


def alias_maps() -> str:
    """8 KB: a map aliased 60 times, that list aliased 60 times ... 330,000 maps expanded."""
    return (
        HEAD
        + "runtime_policy:\n"
        + "  a: &a {x: 1, y: 2}\n"
        + "  b: &b ["
        + ", ".join(["*a"] * 60)
        + "]\n"
        + "  c: &c ["
        + ", ".join(["*b"] * 60)
        + "]\n"
        + "  d: ["
        + ", ".join(["*c"] * 92)
        + "]\n"
        + TAIL
    )


def flow_list() -> str:
    """3 MB: a flow list of a million empty maps."""
    return HEAD + "runtime_policy:\n  junk: [" + ",".join(["{}"] * 1_000_000) + "]\n" + TAIL


def bundle() -> str:
    return "".join(f"k{index}: v\n" for index in range(60_000))


SOURCES: dict[str, Callable[[], str]] = {
    "alias maps (8 KB, 330,000 maps expanded)": alias_maps,
    "flow list (3 MB, 1,000,000 {})": flow_list,
}
LIMIT_NAMES = ("MAX_EXPANDED_NODES", "ALIAS_EXPANSION_FACTOR")


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "node-heavy documents", ">=", 8)
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    yield
    total = figures.get(SUITE, "node-heavy documents")
    figures.expect(SUITE, "refused naming the node limit", "==", total)


def test_the_documents_stay_under_every_byte_limit() -> None:
    for build in SOURCES.values():
        assert len(build().encode()) < limits.MAX_DOCUMENT_BYTES
    assert len(bundle()) < limits.MAX_DOCUMENT_BYTES


def _check(label: str, run: Callable[[], OperationEnvelope], code: str = "TQX_PARSE_LIMIT") -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "node-heavy documents")
    with kit.measure_peak() as peak:
        envelope = run()
    figures.peak(SUITE, "slowest refusal", round(peak.seconds, 3))
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
    assert not kit.envelope_problems(envelope, envelope.operation)
    found = [d for d in envelope.diagnostics if any(name in d.message for name in LIMIT_NAMES)]
    if found and not envelope.ok:
        figures.add(SUITE, "refused naming the node limit")
    assert not envelope.ok, f"{label}: accepted"
    assert found, f"{label}: {[d.message[:100] for d in envelope.diagnostics]}"
    assert {d.code for d in found} == {code}, f"{label}: {[d.code for d in found]}, not {code}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    kit.fresh_welcome(tmp_path / "root")
    return tmp_path / "root"


@pytest.mark.parametrize("shape", list(SOURCES))
def test_a_put_contract_source(root: Path, shape: str) -> None:
    service = compose(root)
    source = SOURCES[shape]()
    _check(
        f"put_contract: {shape}",
        lambda: service.put_contract("welcome", "nodes", source),
    )


@pytest.mark.parametrize("shape", list(SOURCES))
@pytest.mark.parametrize("operation", ["validate_contract", "compile_contract"])
def test_a_stored_contract(root: Path, shape: str, operation: str) -> None:
    (root / "welcome" / "contracts" / "nodes.yaml").write_text(SOURCES[shape]())
    service = compose(root)
    arguments: dict[str, object] = {"package": "welcome", "contract": "nodes"}
    if operation == "compile_contract":
        arguments["capabilities"] = ["text"]
    _check(f"{operation}: {shape}", lambda: service.invoke(operation, arguments))


def test_a_translation_bundle(root: Path) -> None:
    (root / "welcome" / "translations" / "en.yaml").write_text(bundle())
    service = compose(root)
    _check(
        "render_contract: a 60,000-key bundle (120,000 nodes)",
        lambda: service.render_contract(
            "welcome", "onboarding-summary", capabilities=["structured_output"]
        ),
        code="TQX_TRANSLATION_INVALID",
    )


def test_a_manifest(root: Path) -> None:
    manifest = root / "welcome" / "templiqx.yaml"
    manifest.write_text(manifest.read_text() + "x-junk: [" + ",".join(["{}"] * 1_000_000) + "]\n")
    assert manifest.stat().st_size < limits.MAX_DOCUMENT_BYTES
    service = compose(root)
    _check(
        "validate_package: a manifest of a million {}",
        lambda: service.validate_package("welcome"),
        code="TQX_DATA_INVALID",
    )
