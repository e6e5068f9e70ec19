"""The reference corpus parses, with the reference's fingerprints, and round-trips as JSON."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from templiqx_contracts import (
    Contract,
    PackageManifest,
    TextNode,
    TypedComponent,
    canonical_json,
    fingerprint,
)
from templiqx_core.parse import (
    parse_contract,
    parse_manifest,
    parse_node_list,
    parse_translation_bundle,
)

REPO = Path(__file__).resolve().parents[3]
WELCOME = REPO / "fixtures" / "packages" / "welcome"


def load_contract(path: Path) -> Contract:
    contract, diagnostics = parse_contract(path.read_bytes(), str(path))
    assert diagnostics == [], diagnostics
    assert contract is not None
    return contract


def reference_contracts(reference: Path) -> list[Path]:
    paths = sorted(reference.glob("crm3/contracts/*.yaml"))
    paths += sorted(reference.glob("packages/*/contracts/*.yaml"))
    assert len(paths) >= 7
    return paths


@pytest.mark.parametrize(
    ("relative", "digest"),
    [
        (
            "packages/demo/contracts/greeting.yaml",
            "4115586b3ca64e8fcc73dcd5b90f3623b4325b0b56783db4192557772bb2ff4c",
        ),
        (
            "crm3/contracts/bli-61-date-term-extraction.yaml",
            "0f730abb6f91fb26926b14ac509c5f28707f0dc9cc2adf028b0d655a76c0d10f",
        ),
        (
            "crm3/contracts/bli-62-document-drafting.yaml",
            "f21e84a8642b09cf5382d05d98e121cf2bd527fee1e4202c9ff667ef2cd181c1",
        ),
    ],
)
def test_contract_fingerprints_match_the_reference(
    reference: Path, relative: str, digest: str
) -> None:
    assert fingerprint(load_contract(reference / relative)) == digest


def test_contract_parsed_from_text_and_bytes_agree(reference: Path) -> None:
    path = reference / "packages/demo/contracts/greeting.yaml"
    from_text, diagnostics = parse_contract(path.read_text(encoding="utf-8"))
    assert diagnostics == []
    assert from_text == load_contract(path)


def test_greeting_materializes_every_default(reference: Path) -> None:
    contract = load_contract(reference / "packages/demo/contracts/greeting.yaml")
    data = msgspec.json.decode(canonical_json(contract))
    assert list(data) == sorted(
        [
            "api_version",
            "capabilities",
            "components",
            "context",
            "description",
            "evals",
            "extensions",
            "id",
            "inputs",
            "messages",
            "output_schema",
            "provenance",
            "runtime_policy",
            "version",
        ]
    )
    assert data["runtime_policy"] == {"temperature": 0}
    assert b'"temperature":0}' in canonical_json(contract)
    assert data["components"]["salutation"][1]["filters"] == ["trim"]
    assert data["messages"][0]["content"][0] == {
        "kind": "text",
        "value": "You write concise greetings.",
    }


def test_demo_manifest_fingerprint_matches_the_reference(reference: Path) -> None:
    manifest, diagnostics = parse_manifest((reference / "packages/demo/templiqx.yaml").read_bytes())
    assert diagnostics == []
    assert manifest is not None
    assert manifest.translations == ["en", "nl"]
    assert fingerprint(manifest) == (
        "d76a04783829d02200f577f99558d1c7fcaf9805ac6bbb9eaa55788e5b29c1f8"
    )


def test_every_reference_contract_parses(reference: Path) -> None:
    for path in reference_contracts(reference):
        contract = load_contract(path)
        assert contract.id == path.stem


def test_every_reference_manifest_parses(reference: Path) -> None:
    paths = sorted(reference.rglob("templiqx.yaml"))
    assert len(paths) >= 4
    for path in paths:
        manifest, diagnostics = parse_manifest(path.read_bytes(), str(path))
        assert diagnostics == [], (path, diagnostics)
        assert isinstance(manifest, PackageManifest)
        assert manifest.package == path.parent.name
    legal, _ = parse_manifest((reference / "packages/basenet-legal/templiqx.yaml").read_bytes())
    assert legal is not None
    assert legal.definitions == ["definitions/dunning-letter-v1.yaml"]
    assert legal.provenance["requires_authorized_context"] == "true"


def test_reference_translations_parse_as_bundles(reference: Path) -> None:
    bundles = {}
    for path in sorted(reference.glob("packages/*/translations/*.yaml")):
        bundle, diagnostics = parse_translation_bundle(path.read_bytes(), str(path))
        assert diagnostics == [], diagnostics
        bundles[path.stem] = bundle
    assert bundles["nl"] == {
        "greeting.title": "Hallo",
        "greeting.body": "Welkom bij het demopakket",
    }
    assert set(bundles) == {"en", "nl"}


def test_reference_contracts_round_trip_through_json(reference: Path) -> None:
    for path in [*reference_contracts(reference), *sorted(WELCOME.glob("contracts/*.yaml"))]:
        contract = load_contract(path)
        encoded = msgspec.json.encode(contract)
        decoded = msgspec.json.decode(encoded, type=Contract)
        assert decoded == contract
        assert canonical_json(decoded) == canonical_json(contract)
        assert fingerprint(decoded) == fingerprint(contract)


def test_welcome_fixture_exercises_every_node_kind() -> None:
    contract = load_contract(WELCOME / "contracts" / "onboarding-summary.yaml")
    kinds = {node.__struct_config__.tag for node in contract.messages[1].content}
    assert kinds == {"component", "text", "interpolate", "for_each", "when"}
    assert isinstance(contract.components["plan_line"], TypedComponent)
    assert isinstance(contract.components["salutation"], list)
    assert type(contract.runtime_policy["temperature"]) is float
    assert type(contract.evals[0].inputs["customer"]["monthly_fee"]) is float
    assert type(contract.evals[1].inputs["customer"]["monthly_fee"]) is int
    manifest, diagnostics = parse_manifest((WELCOME / "templiqx.yaml").read_bytes())
    assert diagnostics == []
    assert manifest is not None
    partial, diagnostics = parse_node_list((WELCOME / "partials" / "house-style.yaml").read_bytes())
    assert diagnostics == []
    assert partial is not None
    assert all(isinstance(node, TextNode) for node in partial)
    for path in WELCOME.glob("translations/*.yaml"):
        bundle, diagnostics = parse_translation_bundle(path.read_bytes())
        assert diagnostics == []
        assert bundle
