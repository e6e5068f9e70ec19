"""§2.6: ``load_inventory`` — every check in order with its exact message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_mock import (
    MOCK_API_VERSION,
    ScenarioError,
    ScenarioIOError,
    ScenarioJSONError,
    load_inventory,
)

Data = dict[str, Any]
Mutation = Callable[[Data], None]

SUCCESS_FP = "66d6c3fbb03611b4b22deabbe9ef669e5ad69f59c1e90be4dee92d9c3a5188de"


def _manifest(scenario_id: str, **overrides: Any) -> Data:
    data: Data = {
        "api_version": MOCK_API_VERSION,
        "id": scenario_id,
        "contract": "greeting",
        "kind": "happy_path",
        "receipt_payload_policy": "fingerprints_only",
        "expected_status": "success",
        "expected_output_fingerprint": SUCCESS_FP,
        "steps": [
            {"id": "rr", "kind": "request_received"},
            {"id": "ok", "kind": "runtime_success"},
        ],
    }
    data.update(overrides)
    return data


def _entry(scenario_id: str, **expectation: Any) -> Data:
    return {
        "id": scenario_id,
        "manifest": f"pkg/scenarios/{scenario_id}/manifest.json",
        "expectation": {
            "status": "success",
            "diagnostic_code": None,
            "output_schema_valid": True,
            "output_fingerprint": SUCCESS_FP,
            "receipt_fingerprint": "not-checked-by-the-loader",
            **expectation,
        },
    }


def _tree(root: Path, inventory: Data, manifests: dict[str, Data]) -> Path:
    scenarios = root / "examples" / "pkg" / "scenarios"
    for scenario_id, manifest in manifests.items():
        folder = scenarios / scenario_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    scenarios.mkdir(parents=True, exist_ok=True)
    path = scenarios / "inventory.json"
    path.write_text(json.dumps(inventory), encoding="utf-8")
    return path


def _inventory(*entries: Data) -> Data:
    return {"api_version": MOCK_API_VERSION, "package": "pkg", "scenarios": list(entries)}


def _base() -> tuple[Data, dict[str, Data]]:
    failure_manifest = _manifest(
        "b",
        kind="missing",
        receipt_payload_policy="no_successful_receipt",
        expected_status="failure",
        expected_failure="TQX_RUNTIME_PERMANENT",
        expected_diagnostics=["TQX_RUNTIME_PERMANENT"],
        expected_output_fingerprint=None,
        steps=[
            {"id": "rr", "kind": "request_received"},
            {
                "id": "nope",
                "kind": "runtime_failure",
                "failure": {"code": "TQX_RUNTIME_PERMANENT", "detail": "no"},
            },
        ],
    )
    inventory = _inventory(
        _entry("a"),
        _entry(
            "b",
            status="failure",
            diagnostic_code="TQX_RUNTIME_PERMANENT",
            output_schema_valid=None,
            output_fingerprint=None,
        ),
    )
    scripted = _manifest(
        "a",
        steps=[
            {"id": "rr", "kind": "request_received"},
            {"id": "ok", "kind": "runtime_success", "output_schema_valid": True},
        ],
    )
    return inventory, {"a": scripted, "b": failure_manifest}


def test_a_consistent_inventory_loads(tmp_path: Path) -> None:
    inventory, manifests = _base()
    loaded = load_inventory(_tree(tmp_path, inventory, manifests), "pkg")
    assert loaded.package == "pkg"
    assert loaded.ids() == ["a", "b"]
    assert loaded.base == (tmp_path / "examples").absolute()
    scenario = loaded.get("b")
    assert scenario is not None
    assert scenario.manifest.expected_failure == "TQX_RUNTIME_PERMANENT"
    assert scenario.path == loaded.base / "pkg/scenarios/b/manifest.json"
    assert loaded.get("zzz") is None


def _entries(index: int, **fields: Any) -> Mutation:
    def mutate(inventory: Data) -> None:
        inventory["scenarios"][index].update(fields)

    return mutate


def _expect(index: int, **fields: Any) -> Mutation:
    def mutate(inventory: Data) -> None:
        inventory["scenarios"][index]["expectation"].update(fields)

    return mutate


def _top(**fields: Any) -> Mutation:
    return lambda inventory: inventory.update(fields)


def _append(entry: Data) -> Mutation:
    return lambda inventory: inventory["scenarios"].append(entry)


CASES: list[tuple[str, Mutation, str]] = [
    ("api-version", _top(api_version="v0"), "unsupported inventory api_version 'v0'"),
    ("package", _top(package="other"), "inventory package 'other' does not match 'pkg'"),
    (
        "api-version-before-package",
        _top(api_version="v0", package="other"),
        "unsupported inventory api_version 'v0'",
    ),
    ("blank-id", _entries(0, id=" "), "inventory entries require non-empty id and manifest"),
    (
        "blank-manifest",
        _entries(1, manifest=""),
        "inventory entries require non-empty id and manifest",
    ),
    ("duplicate-id", _entries(1, id="a"), "duplicate inventory id 'a'"),
    (
        "duplicate-manifest",
        _entries(1, manifest="pkg/scenarios/a/manifest.json"),
        "duplicate inventory manifest 'pkg/scenarios/a/manifest.json'",
    ),
    (
        "absolute",
        _entries(0, manifest="/etc/manifest.json"),
        "inventory manifest path is not package-relative: /etc/manifest.json",
    ),
    (
        "backslash",
        _entries(0, manifest="pkg\\scenarios\\a\\manifest.json"),
        "inventory manifest path is not package-relative: pkg\\scenarios\\a\\manifest.json",
    ),
    (
        "dot-dot",
        _entries(0, manifest="pkg/scenarios/../scenarios/a/manifest.json"),
        "inventory manifest path is not package-relative: "
        "pkg/scenarios/../scenarios/a/manifest.json",
    ),
    (
        "missing",
        _entries(1, manifest="pkg/scenarios/zzz/manifest.json"),
        "inventory manifest is missing: pkg/scenarios/zzz/manifest.json",
    ),
    (
        "directory-is-missing",
        _entries(1, manifest="pkg/scenarios/b"),
        "inventory manifest is missing: pkg/scenarios/b",
    ),
    (
        "id-mismatch",
        _entries(1, manifest="pkg/scenarios/a/manifest.json", id="c"),
        "duplicate inventory manifest 'pkg/scenarios/a/manifest.json'",
    ),
    (
        "id-mismatch-own-file",
        _entries(0, id="c"),
        "inventory id 'c' does not match manifest id 'a'",
    ),
    (
        "status",
        _expect(0, status="failure"),
        "inventory expectation for 'a' does not match its manifest",
    ),
    (
        "diagnostic-code",
        _expect(1, diagnostic_code="TQX_RUNTIME_TIMEOUT"),
        "inventory expectation for 'b' does not match its manifest",
    ),
    (
        "diagnostic-code-null",
        _expect(1, diagnostic_code=None),
        "inventory expectation for 'b' does not match its manifest",
    ),
    (
        "validity",
        _expect(0, output_schema_valid=False),
        "inventory expectation for 'a' does not match its manifest",
    ),
    (
        "validity-null-on-success",
        _expect(0, output_schema_valid=None),
        "inventory expectation for 'a' does not match its manifest",
    ),
    (
        "validity-on-failure",
        _expect(1, output_schema_valid=False),
        "inventory expectation for 'b' does not match its manifest",
    ),
    (
        "output-fingerprint",
        _expect(0, output_fingerprint="0" * 64),
        "inventory expectation for 'a' does not match its manifest",
    ),
    (
        "output-fingerprint-null",
        _expect(0, output_fingerprint=None),
        "inventory expectation for 'a' does not match its manifest",
    ),
    (
        "first-bad-entry-wins",
        _append({**_entry("c"), "manifest": "../c.json"}),
        "inventory manifest path is not package-relative: ../c.json",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_inventory_rules_have_exact_messages(
    tmp_path: Path, mutate: Mutation, message: str
) -> None:
    inventory, manifests = _base()
    mutate(inventory)
    with pytest.raises(ScenarioError) as caught:
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")
    assert type(caught.value) is ScenarioError
    assert caught.value.message == message
    assert str(caught.value) == f"invalid mock scenario: {message}"


def test_expected_package_is_compared(tmp_path: Path) -> None:
    inventory, manifests = _base()
    with pytest.raises(ScenarioError, match="inventory package 'pkg' does not match 'crm3'"):
        load_inventory(_tree(tmp_path, inventory, manifests), "crm3")


def test_receipt_fingerprint_is_not_checked(tmp_path: Path) -> None:
    inventory, manifests = _base()
    _expect(0, receipt_fingerprint="")(inventory)
    assert load_inventory(_tree(tmp_path, inventory, manifests), "pkg").ids() == ["a", "b"]


def test_stream_scenarios_derive_validity_from_finish(tmp_path: Path) -> None:
    inventory, manifests = _base()
    stream = _manifest("a", steps=[])
    stream["events"] = [
        {"kind": "start", "id": "s"},
        {"kind": "end", "id": "e"},
        {"kind": "finish", "id": "f", "output_schema_valid": False},
    ]
    manifests["a"] = stream
    with pytest.raises(ScenarioError, match="inventory expectation for 'a'"):
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")
    _expect(0, output_schema_valid=False)(inventory)
    assert load_inventory(_tree(tmp_path, inventory, manifests), "pkg").ids() == ["a", "b"]


@pytest.mark.parametrize("shape", ["step", "finish"])
def test_a_computed_validity_may_be_declared_either_way_but_not_null(
    tmp_path: Path, shape: str
) -> None:
    # Without a scripted flag the runtime checks the output against the contract's schema,
    # which the loader does not see: any boolean is consistent, null (no output) is not.
    inventory, manifests = _base()
    if shape == "step":
        manifests["a"] = _manifest("a")
    else:
        manifests["a"] = _manifest("a", steps=[])
        manifests["a"]["events"] = [
            {"kind": "start", "id": "s"},
            {"kind": "end", "id": "e"},
            {"kind": "finish", "id": "f"},
        ]
    for declared in (True, False):
        _expect(0, output_schema_valid=declared)(inventory)
        path = _tree(tmp_path, inventory, manifests)
        assert load_inventory(path, "pkg").ids() == ["a", "b"]
    _expect(0, output_schema_valid=None)(inventory)
    with pytest.raises(ScenarioError, match="inventory expectation for 'a'"):
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")


def test_success_validity_follows_the_step_flag(tmp_path: Path) -> None:
    inventory, manifests = _base()
    manifests["a"]["steps"][1]["output_schema_valid"] = False
    with pytest.raises(ScenarioError, match="inventory expectation for 'a'"):
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")
    _expect(0, output_schema_valid=False)(inventory)
    assert load_inventory(_tree(tmp_path, inventory, manifests), "pkg").ids() == ["a", "b"]


def test_manifest_errors_propagate(tmp_path: Path) -> None:
    inventory, manifests = _base()
    manifests["b"]["steps"] = []
    with pytest.raises(ScenarioError) as caught:
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")
    assert caught.value.message == (
        "scenario must contain exactly one non-empty steps or events sequence"
    )
    manifests["b"]["surprise"] = True
    with pytest.raises(ScenarioJSONError, match="unknown field `surprise`"):
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_top(extra=1), "unknown field `extra`"),
        (_entries(0, extra=1), "unknown field `extra`"),
        (_expect(0, extra=1), "unknown field `extra`"),
        (
            lambda inv: inv["scenarios"][0]["expectation"].pop("receipt_fingerprint"),
            "missing required field `receipt_fingerprint`",
        ),
        (
            lambda inv: inv["scenarios"][0]["expectation"].pop("status"),
            "missing required field `status`",
        ),
        (lambda inv: inv.pop("scenarios"), "missing required field `scenarios`"),
        (_expect(0, output_schema_valid="true"), "Expected `bool | null`, got `str`"),
    ],
)
def test_inventory_shape_is_strict(tmp_path: Path, mutate: Mutation, expected: str) -> None:
    inventory, manifests = _base()
    mutate(inventory)
    with pytest.raises(ScenarioJSONError) as caught:
        load_inventory(_tree(tmp_path, inventory, manifests), "pkg")
    assert expected in caught.value.message


def test_optional_expectation_fields_default_to_null(tmp_path: Path) -> None:
    inventory, manifests = _base()
    for field in ("output_schema_valid", "output_fingerprint"):
        del inventory["scenarios"][1]["expectation"][field]
    del inventory["scenarios"][0]["expectation"]["diagnostic_code"]
    assert load_inventory(_tree(tmp_path, inventory, manifests), "pkg").ids() == ["a", "b"]


def test_unreadable_inventory(tmp_path: Path) -> None:
    with pytest.raises(ScenarioIOError, match="No such file or directory"):
        load_inventory(tmp_path / "inventory.json", "pkg")
    (tmp_path / "inventory.json").write_text("{", encoding="utf-8")
    with pytest.raises(ScenarioJSONError):
        load_inventory(tmp_path / "inventory.json", "pkg")


# --- the reference inventory ----------------------------------------------------------------


def test_crm3_scenario_inventory_is_versioned_and_data_driven(crm3: Path) -> None:
    loaded = load_inventory(crm3 / "scenarios" / "inventory.json", "crm3")
    ids = [s.entry.id for s in loaded.scenarios]
    assert len(ids) == 8
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert loaded.ids() == [
        "ambiguous-date",
        "contradictory-evidence",
        "docx-unresolved-reference",
        "draft-with-citations",
        "intake-document-01",
        "invalid-output-schema",
        "missing-notice-date",
        "missing-required-field",
    ]
    assert all(s.manifest.golden_receipt_fingerprint for s in loaded.scenarios)
    kinds = {s.manifest.kind.value for s in loaded.scenarios}
    assert {"happy_path", "ambiguous", "missing", "invalid", "drafting"} <= kinds
    for scenario in loaded.scenarios:
        assert scenario.path.is_file()
        manifest = scenario.manifest
        if manifest.expected_failure is not None:
            assert manifest.expected_failure in manifest.expected_diagnostics
