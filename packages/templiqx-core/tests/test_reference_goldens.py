"""Fingerprint goldens against the reference corpus (read in place via `reference`)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from templiqx_contracts import Contract, RenderRequest, decode_json, fingerprint
from templiqx_core import (
    compile_interaction,
    explain_contract,
    parse_contract,
    validate_contract,
    validate_output,
)

TARGETS = ["structured_output"]


def load(path: Path) -> Contract:
    contract, diagnostics = parse_contract(path.read_text(encoding="utf-8"), str(path))
    assert diagnostics == []
    assert contract is not None
    return contract


def request_file(path: Path) -> RenderRequest:
    return msgspec.convert(decode_json(path.read_bytes()), RenderRequest)


def reference_contracts(root: Path) -> list[Path]:
    found = sorted((root / "crm3" / "contracts").glob("*.yaml"))
    found += sorted((root / "packages").glob("*/contracts/*.yaml"))
    assert found, f"no reference contracts under {root}"
    return found


@pytest.mark.parametrize(
    ("name", "request_name", "contract_fp", "compiled_fp"),
    [
        (
            "bli-61-date-term-extraction",
            "bli-61-request.json",
            "0f730abb6f91fb26926b14ac509c5f28707f0dc9cc2adf028b0d655a76c0d10f",
            "c18d54797d60a8d3b99306f364fc4048f023911533cd1c39e816e73acc38f0f9",
        ),
        (
            "bli-62-document-drafting",
            "bli-62-request.json",
            "f21e84a8642b09cf5382d05d98e121cf2bd527fee1e4202c9ff667ef2cd181c1",
            "73ac55bac233fe9fdd7f7d7ea9d5c891a60d8c1b27c97b36bc2b765c615a46c2",
        ),
    ],
)
def test_crm3_compiled_goldens(
    reference: Path, name: str, request_name: str, contract_fp: str, compiled_fp: str
) -> None:
    contract = load(reference / "crm3" / "contracts" / f"{name}.yaml")
    assert fingerprint(contract) == contract_fp
    request = request_file(reference / "crm3" / "evals" / request_name)
    compiled, diagnostics = compile_interaction(contract, request, TARGETS)
    assert diagnostics == []
    assert compiled is not None
    assert fingerprint(compiled) == compiled_fp


def test_bli_62_renders_the_validated_facts_as_canonical_json(reference: Path) -> None:
    contract = load(reference / "crm3" / "contracts" / "bli-62-document-drafting.yaml")
    request = request_file(reference / "crm3" / "evals" / "bli-62-request.json")
    compiled, _ = compile_interaction(contract, request, TARGETS)
    assert compiled is not None
    user = compiled.messages[1].content
    assert user.startswith("Cliënt: Voorbeeldhandel B.V.\nZaak: SYN-2026-0042\n")
    assert 'Gevalideerde feiten: {"effective_date":"2026-09-01","end_date":"2027-08-31",' in user
    assert user.endswith('"notice_date":"2027-05-31","term_months":12}')


def test_greeting_goldens(reference: Path) -> None:
    contract = load(reference / "packages" / "demo" / "contracts" / "greeting.yaml")
    assert fingerprint(contract) == (
        "4115586b3ca64e8fcc73dcd5b90f3623b4325b0b56783db4192557772bb2ff4c"
    )
    request = RenderRequest(inputs={"name": "Ryan"}, context={"organization": "Blinqx"})
    compiled, diagnostics = compile_interaction(contract, request, TARGETS)
    assert diagnostics == []
    assert compiled is not None
    assert [(m.role, m.content) for m in compiled.messages] == [
        ("system", "You write concise greetings."),
        ("user", "Hello Ryan for Blinqx"),
    ]
    assert fingerprint(compiled) == (
        "90c77a91f737c9190b6fe5cfe78f44dc2b6c02deab99b62ed110acf6c739bebf"
    )
    assert fingerprint(compiled.messages) == (
        "4cdcb40e91b6e49b2394941ea181c5bad031511224c8d12db9373112fc3736f7"
    )
    explanation = explain_contract(contract)
    assert explanation.components == ["salutation"]
    assert explanation.unresolved_references == []


def test_every_reference_contract_validates_and_its_evals_compile(reference: Path) -> None:
    compiled_cases = 0
    for path in reference_contracts(reference):
        contract = load(path)
        assert validate_contract(contract) == [], path
        for fixture in contract.evals:
            request = RenderRequest(inputs=fixture.inputs, context=fixture.context)
            compiled, diagnostics = compile_interaction(contract, request, TARGETS)
            assert diagnostics == [], (path.name, fixture.id)
            assert compiled is not None
            assert validate_output(contract.output_schema, fixture.fake_output) == []
            compiled_cases += 1
    assert compiled_cases >= 7


def test_eval_outputs_satisfy_their_contracts(reference: Path) -> None:
    pairs = [("bli-61-date-term-extraction", "bli-61-output.json")]
    pairs.append(("bli-62-document-drafting", "bli-62-output.json"))
    for contract_name, output_name in pairs:
        contract = load(reference / "crm3" / "contracts" / f"{contract_name}.yaml")
        output = decode_json((reference / "crm3" / "evals" / output_name).read_bytes())
        assert validate_output(contract.output_schema, output) == []
        broken = dict(output)
        broken.pop(sorted(broken)[0])
        failures = validate_output(contract.output_schema, broken)
        assert [d.code for d in failures] == ["TQX_OUTPUT_SCHEMA"]
