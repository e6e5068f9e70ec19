"""Replaying reference scenario manifests against their golden receipt fingerprints."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from templiqx_conformance import CheckStatus, TargetError
from templiqx_conformance.scenarios import replay_scenarios


def test_every_crm3_scenario_reproduces_its_golden(reference: Path) -> None:
    report = replay_scenarios(reference / "crm3" / "scenarios")
    assert report.ok, [check.message for check in report.failed_checks]
    assert sorted(check.name for check in report.checks) == [
        "scenario.ambiguous-date",
        "scenario.contradictory-evidence",
        "scenario.docx-unresolved-reference",
        "scenario.draft-with-citations",
        "scenario.intake-document-01",
        "scenario.invalid-output-schema",
        "scenario.missing-notice-date",
        "scenario.missing-required-field",
    ]


def test_a_wrong_golden_fails_with_both_fingerprints(reference: Path, tmp_path: Path) -> None:
    package = tmp_path / "crm3"
    shutil.copytree(reference / "crm3", package)
    manifest_path = package / "scenarios" / "intake-document-01" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["golden_receipt_fingerprint"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    report = replay_scenarios(package)
    failed = report.failed_checks
    assert [check.name for check in failed] == ["scenario.intake-document-01"]
    assert f"golden {'0' * 64}" in failed[0].message
    assert "b73126237c73c329bedcdd40e1fce86ebca9c0b09926c0fa2630da69cc869637" in failed[0].message
    assert "execute_streaming" in failed[0].message


def test_a_manifest_without_golden_does_not_apply(reference: Path, tmp_path: Path) -> None:
    package = tmp_path / "crm3"
    shutil.copytree(reference / "crm3", package)
    for path in (package / "scenarios").glob("*/manifest.json"):
        manifest = json.loads(path.read_text())
        manifest.pop("golden_receipt_fingerprint")
        path.write_text(json.dumps(manifest))
    report = replay_scenarios(package / "scenarios")
    assert {check.status for check in report.checks} == {CheckStatus.NOT_APPLICABLE}
    assert report.ok


def test_the_replay_never_writes_beside_the_manifests(reference: Path) -> None:
    before = sorted(p.relative_to(reference) for p in (reference / "crm3").rglob("*"))
    replay_scenarios(reference / "crm3")
    after = sorted(p.relative_to(reference) for p in (reference / "crm3").rglob("*"))
    assert before == after


def test_without_the_extra_the_replay_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A None entry in sys.modules makes `import templiqx_mock` raise ImportError.
    monkeypatch.setitem(sys.modules, "templiqx_mock", None)
    with pytest.raises(TargetError, match=r"templiqx-conformance\[scenarios\]"):
        replay_scenarios(tmp_path)
