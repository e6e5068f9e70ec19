"""Acceptance 6 (first half): every catalog operation through the service — ok, result shape and
the envelope's fingerprint keys — called through invoke, the way surfaces call it."""

from __future__ import annotations

import base64
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_application import CATALOG, TempliqxService
from templiqx_contracts import (
    ArtifactContent,
    CompiledInteraction,
    CompiledMessage,
    Contract,
    ContractDiff,
    ContractSummary,
    EvalCase,
    ExecutionReceipt,
    Explanation,
    OperationEnvelope,
    PackageIdentity,
    PackageManifest,
    PackageTrustReport,
    TestCaseResult,
    TestReport,
    WorkspaceArtifact,
    decode_json,
    fingerprint,
    fingerprint_bytes,
)

CAPS = ["structured_output"]
BLI61 = "bli-61-date-term-extraction"
BLI62 = "bli-62-document-drafting"


@pytest.fixture
def root(reference: Path, tmp_path: Path) -> Path:
    target = tmp_path / "root"
    shutil.copytree(reference / "crm3", target / "crm3")
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


@pytest.fixture
def service(root: Path, make_service: Callable[..., TempliqxService]) -> TempliqxService:
    return make_service(root)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


def _request(root: Path, name: str) -> Any:
    return decode_json((root / "crm3" / "evals" / name).read_bytes())


def _ok(envelope: OperationEnvelope, operation: str, result_type: Any, keys: set[str]) -> Any:
    assert envelope.operation == operation
    assert envelope.ok, envelope.diagnostics
    assert set(envelope.fingerprints) == keys
    wire = envelope.to_builtins()
    assert wire["api_version"] == "templiqx/v1alpha1"
    return msgspec.convert(wire["result"], result_type)


def _invoke(service: TempliqxService, operation: str, **arguments: Any) -> OperationEnvelope:
    return service.invoke(operation, arguments)


def test_read_operations(service: TempliqxService, root: Path) -> None:
    specs = _ok(_invoke(service, "catalog"), "catalog", list[dict[str, Any]], set())
    assert len(specs) == len(CATALOG)

    manifests = _ok(
        _invoke(service, "discover_packages"), "discover_packages", list[PackageManifest], set()
    )
    assert [m.package for m in manifests] == ["crm3"]

    contract = _ok(
        _invoke(service, "inspect_contract", package="crm3", contract=BLI61),
        "inspect_contract",
        Contract,
        {"contract"},
    )
    assert contract.id == BLI61
    inspected = _invoke(service, "inspect_contract", package="crm3", contract=BLI61)
    assert inspected.fingerprints["contract"] == (
        "0f730abb6f91fb26926b14ac509c5f28707f0dc9cc2adf028b0d655a76c0d10f"
    )

    summary = _ok(
        _invoke(service, "validate_contract", package="crm3", contract=BLI61),
        "validate_contract",
        ContractSummary,
        {"contract"},
    )
    assert summary == ContractSummary(
        package="crm3",
        id=BLI61,
        version=contract.version,
        fingerprint=inspected.fingerprints["contract"],
    )

    summaries = _ok(
        _invoke(service, "validate_package", package="crm3"),
        "validate_package",
        list[ContractSummary],
        {"package_identity"},
    )
    assert [s.id for s in summaries] == [BLI61, BLI62]
    assert service.validate_package("crm3").fingerprints["package_identity"] == (
        "d6248ec4a4ff85b9ace7a1d47e019704df0c43800e36bf4376cb7f36bbdd4b83"
    )

    identity = _ok(
        _invoke(service, "export_package_identity", package="crm3"),
        "export_package_identity",
        PackageIdentity,
        {"package_identity", "manifest"},
    )
    exported = service.export_package_identity("crm3")
    assert exported.fingerprints["package_identity"] == (
        "d6248ec4a4ff85b9ace7a1d47e019704df0c43800e36bf4376cb7f36bbdd4b83"
    )
    assert exported.fingerprints["manifest"] == fingerprint(service.discover_packages().result[0])
    assert sorted(identity.artifacts) == sorted(
        [
            f"contracts/{BLI61}.yaml",
            f"contracts/{BLI62}.yaml",
            *identity.manifest.evals,
            *identity.manifest.migrations,
            *identity.manifest.templates,
        ]
    )

    trust = _ok(
        _invoke(service, "verify_package_trust", package="crm3"),
        "verify_package_trust",
        PackageTrustReport,
        {"package_identity"},
    )
    assert trust.identity_fingerprint == exported.fingerprints["package_identity"]
    assert trust.verified_key_ids == []

    explanation = _ok(
        _invoke(service, "explain_contract", package="crm3", contract=BLI61),
        "explain_contract",
        Explanation,
        set(),
    )
    assert explanation.contract_id == BLI61

    same = _ok(
        _invoke(
            service,
            "diff_contract",
            left_package="crm3",
            left_contract=BLI61,
            right_package="crm3",
            right_contract=BLI61,
        ),
        "diff_contract",
        ContractDiff,
        set(),
    )
    assert same.equal
    assert same.changes == []
    different = service.diff_contract("crm3", BLI61, "crm3", BLI62).result
    assert isinstance(different, ContractDiff)
    assert not different.equal
    assert "id" in different.changes


def test_compile_render_execute(service: TempliqxService, root: Path) -> None:
    request = _request(root, "bli-61-request.json")
    values = {"inputs": request["inputs"], "context": request["context"], "capabilities": CAPS}
    interaction = _ok(
        _invoke(service, "compile_contract", package="crm3", contract=BLI61, **values),
        "compile_contract",
        CompiledInteraction,
        {"compiled_interaction"},
    )
    compiled = service.compile_contract("crm3", BLI61, **values)
    assert compiled.fingerprints["compiled_interaction"] == (
        "c18d54797d60a8d3b99306f364fc4048f023911533cd1c39e816e73acc38f0f9"
    )
    assert interaction.compiler == "templiqx-core/0.2.0"

    messages = _ok(
        _invoke(service, "render_contract", package="crm3", contract=BLI61, **values),
        "render_contract",
        list[CompiledMessage],
        {"rendered_messages"},
    )
    assert messages == interaction.messages
    rendered = service.render_contract("crm3", BLI61, **values)
    assert rendered.fingerprints["rendered_messages"] == fingerprint(interaction.messages)

    output = _request(root, "bli-61-output.json")
    receipt = _ok(
        _invoke(
            service,
            "execute_contract",
            package="crm3",
            contract=BLI61,
            fixture_output=output,
            **values,
        ),
        "execute_contract",
        ExecutionReceipt,
        {"request", "output"},
    )
    assert receipt.adapter.id == "templiqx.fake"
    assert receipt.output == output
    assert receipt.request_fingerprint == compiled.fingerprints["compiled_interaction"]
    assert receipt.output_fingerprint == (
        "66d6c3fbb03611b4b22deabbe9ef669e5ad69f59c1e90be4dee92d9c3a5188de"
    )
    streamed = _invoke(
        service,
        "execute_contract",
        package="crm3",
        contract=BLI61,
        fixture_output=output,
        stream=True,
        **values,
    )
    assert streamed.to_builtins()["stream_events"][-1]["kind"] == "Complete"

    # Drafting on the extraction's output (the CRM3 flow): notice_date carried through.
    draft = _request(root, "bli-62-request.json")
    draft["inputs"]["extracted_facts"] = receipt.output
    drafted = service.execute_contract(
        "crm3",
        BLI62,
        inputs=draft["inputs"],
        context=draft["context"],
        capabilities=CAPS,
        fixture_output=_request(root, "bli-62-output.json"),
    )
    assert drafted.ok
    assert drafted.fingerprints["output"] == (
        "54eae956be0ca2f14a0afc83294c656ebe7c1ee6358387094262faa4d46c8084"
    )


def test_eval_operations(service: TempliqxService) -> None:
    report = _ok(
        _invoke(service, "test_package", package="crm3", capabilities=CAPS),
        "test_package",
        TestReport,
        set(),
    )
    assert (report.passed, report.failed) == (2, 0)
    cases = _ok(_invoke(service, "list_evals", package="crm3"), "list_evals", list[EvalCase], set())
    assert cases == [
        EvalCase(
            contract_id=BLI61,
            fixture_id="synthetic-fixed-term",
            required_capabilities=["structured_output"],
        ),
        EvalCase(
            contract_id=BLI62,
            fixture_id="synthetic-draft",
            required_capabilities=["structured_output"],
        ),
    ]
    case = _ok(
        _invoke(
            service,
            "run_eval",
            package="crm3",
            contract=BLI61,
            fixture_id="synthetic-fixed-term",
            capabilities=CAPS,
        ),
        "run_eval",
        TestCaseResult,
        set(),
    )
    assert case.passed


def test_package_lifecycle(
    service: TempliqxService, root: Path, greeting: Callable[..., str]
) -> None:
    created = _ok(
        _invoke(service, "create_package", name="parity", version="0.1.0"),
        "create_package",
        PackageManifest,
        {"package"},
    )
    assert created.package == "parity"
    assert created.contracts == []
    assert (root / "parity" / "templiqx.yaml").is_file()
    token = service.create_package("again", "0.1.0").fingerprints["package"]
    assert token == fingerprint(service.discover_packages().result[0])

    put = _ok(
        _invoke(service, "put_contract", package="parity", contract="hello", source=greeting()),
        "put_contract",
        ContractSummary,
        {"contract"},
    )
    inspected = service.inspect_contract("parity", "hello")
    assert put.fingerprint == inspected.fingerprints["contract"]
    listed = service.discover_packages().result
    assert next(m for m in listed if m.package == "parity").contracts == ["hello"]

    replaced = service.put_contract(
        "parity",
        "hello",
        greeting().replace("Greets someone.", "Greets anyone."),
        expected_fingerprint=put.fingerprint,
    )
    assert replaced.ok
    deleted = _ok(
        _invoke(
            service,
            "delete_contract",
            package="parity",
            contract="hello",
            expected_fingerprint=replaced.fingerprints["contract"],
        ),
        "delete_contract",
        ContractSummary,
        {"contract"},
    )
    assert (deleted.id, deleted.version) == ("hello", "1.0.0")
    assert not (root / "parity" / "contracts" / "hello.yaml").exists()

    manifest_token = service.export_package_identity("parity").fingerprints["manifest"]
    updated = _ok(
        _invoke(
            service,
            "update_package",
            package="parity",
            expected_fingerprint=manifest_token,
            version="0.2.0",
            description="behavior parity",
        ),
        "update_package",
        PackageManifest,
        {"package"},
    )
    assert (updated.version, updated.description) == ("0.2.0", "behavior parity")
    gone = _ok(
        _invoke(
            service,
            "delete_package",
            package="parity",
            expected_fingerprint=fingerprint(updated),
        ),
        "delete_package",
        PackageManifest,
        {"package"},
    )
    assert gone == updated
    assert service.delete_package("parity", expected_fingerprint="x").diagnostics[0].code == (
        "TQX_NOT_FOUND"
    )
    assert not (root / "parity").exists()


def test_sign_package_operation(service: TempliqxService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", "k")
    token = service.export_package_identity("crm3").fingerprints["manifest"]
    signed = _ok(
        _invoke(service, "sign_package", package="crm3", key_id="ci", expected_fingerprint=token),
        "sign_package",
        PackageManifest,
        {"package"},
    )
    assert [s.key_id for s in signed.signatures] == ["ci"]


def test_workspace_artifact_operations(service: TempliqxService, workspace: Path) -> None:
    folder = workspace / "crm3"
    (folder / "out").mkdir(parents=True)
    (folder / "proof.txt").write_text("parity-proof", "utf-8")
    (folder / "out" / "draft.docx").write_bytes(b"PK\x03\x04binary")
    (folder / "out" / "data.json").write_bytes(b'{"a":1}')
    (folder / "out" / "latin.txt").write_bytes(b"caf\xe9")

    artifacts = _ok(
        _invoke(service, "list_workspace_artifacts", package="crm3"),
        "list_workspace_artifacts",
        list[WorkspaceArtifact],
        set(),
    )
    assert artifacts == [
        WorkspaceArtifact(path="out/data.json", size=7),
        WorkspaceArtifact(path="out/draft.docx", size=10),
        WorkspaceArtifact(path="out/latin.txt", size=4),
        WorkspaceArtifact(path="proof.txt", size=12),
    ]
    prefixed = service.list_workspace_artifacts("crm3", prefix="out/")
    assert [a.path for a in prefixed.result] == ["out/data.json", "out/draft.docx", "out/latin.txt"]

    content = _ok(
        _invoke(service, "read_artifact", package="crm3", path="proof.txt"),
        "read_artifact",
        ArtifactContent,
        {"artifact"},
    )
    assert content == ArtifactContent(
        path="proof.txt", content_type="text/plain", content_encoding="utf8", content="parity-proof"
    )
    docx = service.read_artifact("crm3", "out/draft.docx").result
    assert isinstance(docx, ArtifactContent)
    assert docx.content_encoding == "base64"
    assert docx.content_type.endswith("wordprocessingml.document")
    assert base64.b64decode(docx.content) == b"PK\x03\x04binary"
    json_content = service.read_artifact("crm3", "out/data.json").result
    assert isinstance(json_content, ArtifactContent)
    assert (json_content.content_type, json_content.content) == ("application/json", '{"a":1}')
    latin = service.read_artifact("crm3", "out/latin.txt").result
    assert isinstance(latin, ArtifactContent)
    assert (latin.content_type, latin.content_encoding) == ("text/plain", "base64")

    stale = service.delete_workspace_artifact("crm3", "proof.txt", expected_fingerprint="0" * 64)
    assert [d.code for d in stale.diagnostics] == ["TQX_CAS_CONFLICT"]
    proof = fingerprint_bytes(b"parity-proof")
    assert proof == "dccb80bc98603381e1b1590e2a226513ec3dd60f305395ad9515a919a9bd11d6"
    removed = _ok(
        _invoke(
            service,
            "delete_workspace_artifact",
            package="crm3",
            path="proof.txt",
            expected_fingerprint=proof,
        ),
        "delete_workspace_artifact",
        WorkspaceArtifact,
        {"artifact"},
    )
    assert removed == WorkspaceArtifact(path="proof.txt", size=12)
    assert (
        service.delete_workspace_artifact("crm3", "proof.txt", expected_fingerprint=proof)
        .diagnostics[0]
        .code
        == "TQX_NOT_FOUND"
    )
    escape = service.delete_workspace_artifact("crm3", "../outside", expected_fingerprint=proof)
    assert [d.code for d in escape.diagnostics] == ["TQX_PATH_INVALID"]


def test_every_operation_is_exercised_in_this_module() -> None:
    called = set(re.findall(r'_invoke\(\s*service,\s*"(\w+)"', Path(__file__).read_text()))
    assert called == {spec.name for spec in CATALOG}
