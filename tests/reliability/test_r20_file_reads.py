"""R20: every file read is bounded, whatever its extension.

Issue #29: partials and templates that are not ``*.yaml`` were read whole — a 1 GiB
``partials/big.txt`` cost ``render`` 2 GB and 13.6 s, 3 GiB ended in ``TQX_INTERNAL``
``MemoryError`` in render, validate and verify-package-trust, and listed templates were read
whole to hash them. Sparse files of 1 GiB and 3 GiB are used as an included partial, a listed
template and a workspace artifact, through every operation that reads them: each must be
refused naming the limit (``MAX_ARTIFACT_BYTES``) with the code docs/reliability.md's limits
table gives it — ``TQX_DATA_INVALID``, relayed by an include as ``TQX_INCLUDE_UNRESOLVED`` —
never ``TQX_INTERNAL``, within :data:`DEADLINE_S` and :data:`MEMORY_BUDGET_MIB`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import reliability_kit as kit
import yaml

from templiqx_contracts import OperationEnvelope
from templiqx_local import compose

SUITE = "R20"
DEADLINE_S = 5.0
MEMORY_BUDGET_MIB = 64.0
GIB = 1 << 30
INCLUDING = (
    "api_version: templiqx/v1alpha1\nid: big\nversion: 1.0.0\ncapabilities: [text]\n"
    "messages:\n  - role: user\n    content: [{kind: include, path: partials/big.txt}]\n"
    "output_schema: {type: string}\n"
)


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "huge-file reads", ">=", 12)
    figures.expect(SUITE, "largest file", ">=", 3, " GiB")
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    yield
    total = figures.get(SUITE, "huge-file reads")
    figures.expect(SUITE, "refused naming MAX_ARTIFACT_BYTES", "==", total)


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)


def _check(
    label: str, size: int, run: Callable[[], OperationEnvelope], code: str = "TQX_DATA_INVALID"
) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "huge-file reads")
    figures.peak(SUITE, "largest file", size // GIB, " GiB")
    with kit.measure_peak() as peak:
        envelope = run()
    figures.peak(SUITE, "slowest refusal", round(peak.seconds, 3))
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
    problems = kit.envelope_problems(envelope, envelope.operation)
    assert not problems, problems
    text = str(envelope.to_builtins())
    if not envelope.ok and "MAX_ARTIFACT_BYTES" in text:
        figures.add(SUITE, "refused naming MAX_ARTIFACT_BYTES")
    assert not envelope.ok, f"{label}: accepted"
    assert "MAX_ARTIFACT_BYTES" in text, f"{label}: {[d.message for d in envelope.diagnostics]}"
    naming = {d.code for d in envelope.diagnostics if "MAX_ARTIFACT_BYTES" in d.message}
    assert naming == {code}, f"{label}: {sorted(naming)}, not {code}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


@pytest.mark.parametrize("size", [GIB, 3 * GIB])
def test_a_huge_partial_that_is_not_yaml(tmp_path: Path, size: int) -> None:
    root = tmp_path / "root"
    package = kit.fresh_welcome(root)
    (package / "contracts" / "big.yaml").write_text(INCLUDING)
    _sparse(package / "partials" / "big.txt", size)
    service = compose(root)
    calls = {
        "render_contract": {"package": "welcome", "contract": "big", "capabilities": ["text"]},
        "validate_contract": {"package": "welcome", "contract": "big"},
        "inspect_contract": {"package": "welcome", "contract": "big"},
    }
    for operation, arguments in calls.items():
        _check(
            f"{operation}: {size // GIB} GiB partial",
            size,
            lambda operation=operation, arguments=arguments: service.invoke(operation, arguments),
            code="TQX_INCLUDE_UNRESOLVED",
        )


@pytest.mark.parametrize("size", [GIB, 3 * GIB])
def test_a_huge_listed_template(tmp_path: Path, size: int) -> None:
    root = tmp_path / "root"
    package = kit.fresh_welcome(root)
    manifest = package / "templiqx.yaml"
    data = yaml.safe_load(manifest.read_text())
    data["templates"] = [*data.get("templates", []), "templates/letter.docx"]
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    _sparse(package / "templates" / "letter.docx", size)
    service = compose(root)
    for operation in ("verify_package_trust", "export_package_identity"):
        _check(
            f"{operation}: {size // GIB} GiB template",
            size,
            lambda operation=operation: service.invoke(operation, {"package": "welcome"}),
        )


def test_a_huge_workspace_artifact(tmp_path: Path) -> None:
    root = tmp_path / "root"
    kit.fresh_welcome(root)
    _sparse(root / ".templiqx-workspace" / "welcome" / "out" / "big.bin", 3 * GIB)
    service = compose(root)
    _check(
        "read_artifact: 3 GiB",
        3 * GIB,
        lambda: service.read_artifact("welcome", "out/big.bin"),
    )
    _check(
        "delete_workspace_artifact: 3 GiB",
        3 * GIB,
        lambda: service.delete_workspace_artifact(
            "welcome", "out/big.bin", expected_fingerprint="0" * 64
        ),
    )
