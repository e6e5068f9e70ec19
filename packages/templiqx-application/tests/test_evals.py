"""Acceptance 3: test_package passes every eval of every reference package; evals always run on
the fake runtime; list_evals and run_eval; authorized contexts verified as the reference does."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_application import (
    AUTHORIZATION_KEY_ENV,
    TempliqxService,
    authorized_context_fingerprint,
    sign_authorized_context,
    validate_authorized_context,
)
from templiqx_contracts import (
    AuthorizedMergeContext,
    EvalCase,
    TestCaseResult,
    TestReport,
    decode_json,
    fingerprint,
)
from templiqx_local import FilesystemPackageStore
from templiqx_mock import ScriptedRuntime
from templiqx_ports import RuntimeFailureCode

CAPS = ["structured_output"]
LEGAL_BINDING = "a14d0cba0844767fcf43bb6e4af8b03e8373c0faaa3ce7a39deda4265e9d19e7"
Factory = Callable[..., TempliqxService]

# (folder below the reference holding the package, package, fixtures, TestReport fingerprint)
PACKAGES = [
    ("", "crm3", 2, "d1ad1c8818cffb157b35bb57b2aade5b3ee0549bd83fad50dc83050008a39a24"),
    (
        "packages",
        "basenet-legal",
        2,
        "0a3f536f3707432beed55e207470adcfe51d5f5bf58c7997b3e0c9a45c9d1ce6",
    ),
    (
        "packages",
        "synthetic-opco",
        2,
        "b8916529f4de539f099f52beaea60321e021fea3b0f528aea02415ca6072225d",
    ),
    ("packages", "demo", 1, None),
]


def test_every_reference_package_with_evals_is_covered(reference: Path) -> None:
    listed = {(folder, name) for folder, name, _, _ in PACKAGES}
    found = {("", "crm3")} | {
        ("packages", p.parent.name) for p in (reference / "packages").glob("*/templiqx.yaml")
    }
    assert found == listed


@pytest.mark.parametrize(("folder", "package", "count", "report_fp"), PACKAGES)
def test_test_package_passes_every_eval(
    reference: Path,
    make_service: Factory,
    folder: str,
    package: str,
    count: int,
    report_fp: str | None,
) -> None:
    service = make_service(reference / folder)
    envelope = service.test_package(package, capabilities=CAPS)
    assert envelope.ok, envelope.diagnostics
    report = envelope.result
    assert isinstance(report, TestReport)
    assert (report.package, report.passed, report.failed) == (package, count, 0)
    assert all(case.passed and case.diagnostics == [] for case in report.cases)
    assert envelope.fingerprints == {}
    if report_fp is not None:
        assert fingerprint(report) == report_fp
    listed = service.list_evals(package)
    assert listed.ok
    assert listed.result == [
        EvalCase(
            contract_id=case.contract_id,
            fixture_id=case.fixture_id,
            required_capabilities=["structured_output"],
        )
        for case in report.cases
    ]
    for case in report.cases:
        single = service.run_eval(package, case.contract_id, case.fixture_id, capabilities=CAPS)
        assert single.ok
        assert single.result == case
        assert single.fingerprints == {}


def test_eval_outputs_fingerprint_like_the_recorded_eval_files(
    reference: Path, make_service: Factory
) -> None:
    recorded = {
        ("crm3", "bli-61-date-term-extraction"): reference / "crm3/evals/bli-61-output.json",
        ("crm3", "bli-62-document-drafting"): reference / "crm3/evals/bli-62-output.json",
    }
    legal = reference / "packages/basenet-legal/evals"
    recorded[("basenet-legal", "legal-matter-extraction")] = legal / "legal-extraction-output.json"
    recorded[("basenet-legal", "legal-document-drafting")] = legal / "legal-draft-output.json"
    for (package, contract), path in recorded.items():
        root = reference if package == "crm3" else reference / "packages"
        report = make_service(root).test_package(package, capabilities=CAPS).result
        assert isinstance(report, TestReport)
        (case,) = [c for c in report.cases if c.contract_id == contract]
        assert case.artifact_fingerprint == fingerprint(decode_json(path.read_bytes()))


def test_evals_run_on_the_fake_runtime_whatever_runtime_is_composed(
    reference: Path, make_service: Factory
) -> None:
    runtime = ScriptedRuntime.failure("never", RuntimeFailureCode.PERMANENT)
    service = make_service(reference, runtime)
    report = service.test_package("crm3", capabilities=CAPS)
    assert report.ok
    assert service.run_eval(
        "crm3", "bli-61-date-term-extraction", "synthetic-fixed-term", capabilities=CAPS
    ).ok
    assert runtime.stats().attempts == 0


def test_missing_capabilities_fail_every_case(reference: Path, make_service: Factory) -> None:
    service = make_service(reference)
    envelope = service.test_package("crm3", capabilities=[])
    assert not envelope.ok
    (summary,) = envelope.diagnostics
    assert (summary.code, summary.message, summary.json_pointer) == (
        "TQX_TEST_FAILED",
        "2 fixture(s) failed",
        "/cases",
    )
    report = envelope.result
    assert isinstance(report, TestReport)
    assert (report.passed, report.failed) == (0, 2)
    for case in report.cases:
        assert case.artifact_fingerprint is None
        assert [d.code for d in case.diagnostics] == ["TQX_CAPABILITY_UNSUPPORTED"]
        assert case.diagnostics[0].file == f"crm3/contracts/{case.contract_id}.yaml"
    wire = envelope.to_builtins()["result"]["cases"][0]
    assert wire["artifact_fingerprint"] is None  # written as null, never omitted

    single = service.run_eval(
        "crm3", "bli-61-date-term-extraction", "synthetic-fixed-term", capabilities=[]
    )
    assert [d.code for d in single.diagnostics] == ["TQX_TEST_FAILED"]
    assert single.diagnostics[0].message == "fixture 'synthetic-fixed-term' failed"
    assert single.diagnostics[0].json_pointer == "/case"
    assert isinstance(single.result, TestCaseResult)


def test_run_eval_unknown_fixture(reference: Path, make_service: Factory) -> None:
    envelope = make_service(reference).run_eval(
        "crm3", "bli-61-date-term-extraction", "nope", capabilities=CAPS
    )
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == "TQX_NOT_FOUND"
    assert diagnostic.message == (
        "eval fixture 'nope' not found for contract 'bli-61-date-term-extraction'"
    )
    assert diagnostic.json_pointer == "/evals"
    assert "result" not in envelope.to_builtins()


def test_schema_invalid_fake_output_keeps_the_artifact_fingerprint(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Callable[..., Path],
    greeting: Callable[..., str],
) -> None:
    source = greeting().replace("fake_output: {greeting: Hello Ada}", "fake_output: {nope: 1}")
    write_pkg(scratch_root, "pkg", contracts={"hello": source})
    envelope = make_service(scratch_root).test_package("pkg", capabilities=CAPS)
    report = envelope.result
    assert isinstance(report, TestReport)
    (case,) = report.cases
    assert not case.passed
    # one diagnostic per violation: the unexpected `nope` and the missing `greeting`
    assert [(d.code, d.json_pointer) for d in case.diagnostics] == [
        ("TQX_OUTPUT_SCHEMA", "/output"),
        ("TQX_OUTPUT_SCHEMA", "/output"),
    ]
    assert sorted(d.message.split(":")[0] for d in case.diagnostics) == [
        "/output breaks `additionalProperties`",
        "/output breaks `required`",
    ]
    assert case.artifact_fingerprint == fingerprint({"nope": 1})


def test_a_contract_that_does_not_load_is_one_failed_case(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Callable[..., Path],
    greeting: Callable[..., str],
) -> None:
    write_pkg(
        scratch_root,
        "pkg",
        contracts={"hello": greeting(), "broken": "api_version: [unterminated"},
    )
    service = make_service(scratch_root)
    envelope = service.test_package("pkg", capabilities=CAPS)
    report = envelope.result
    assert isinstance(report, TestReport)
    assert (report.passed, report.failed) == (1, 1)
    broken = next(case for case in report.cases if case.contract_id == "broken")
    assert broken.fixture_id == ""
    assert [d.code for d in broken.diagnostics] == ["TQX_PARSE_YAML"]
    assert broken.artifact_fingerprint is None
    listed = service.list_evals("pkg")
    assert listed.result == [
        EvalCase(contract_id="hello", fixture_id="ada", required_capabilities=["structured_output"])
    ]
    assert [d.code for d in listed.diagnostics] == ["TQX_PARSE_YAML"]


def test_each_contract_is_read_once_for_all_its_fixtures(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Callable[..., Path],
    greeting: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    three = greeting().replace(
        "evals:\n",
        "evals:\n"
        "  - id: bea\n    inputs: {name: Bea}\n    fake_output: {greeting: Hello Bea}\n"
        "  - id: cy\n    inputs: {name: Cy}\n    fake_output: {greeting: 7}\n",
    )
    write_pkg(scratch_root, "pkg", contracts={"hello": three, "other": greeting("other")})
    reads: list[str] = []
    original = FilesystemPackageStore.contract_source

    def counting(self: FilesystemPackageStore, package: str, contract_id: str) -> str:
        reads.append(contract_id)
        return original(self, package, contract_id)

    monkeypatch.setattr(FilesystemPackageStore, "contract_source", counting)
    service = make_service(scratch_root)
    report = service.test_package("pkg", capabilities=CAPS).result
    assert isinstance(report, TestReport)
    assert [(case.contract_id, case.fixture_id, case.passed) for case in report.cases] == [
        ("hello", "bea", True),
        ("hello", "cy", False),
        ("hello", "ada", True),
        ("other", "ada", True),
    ]
    assert reads == ["hello", "other"]
    reads.clear()
    single = service.run_eval("pkg", "hello", "cy", capabilities=CAPS)
    assert [d.code for d in single.diagnostics] == ["TQX_TEST_FAILED"]
    assert single.result == report.cases[1]
    assert [d.code for d in report.cases[1].diagnostics] == ["TQX_OUTPUT_SCHEMA"]
    assert reads == ["hello"]


def test_package_without_contracts_is_ok_and_empty(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    write_pkg(scratch_root, "empty")
    envelope = make_service(scratch_root).test_package("empty", capabilities=CAPS)
    assert envelope.ok
    assert envelope.result == TestReport(package="empty", passed=0, failed=0, cases=[])


def test_eval_operations_on_a_missing_package(scratch_root: Path, make_service: Factory) -> None:
    service = make_service(scratch_root)
    for envelope in (service.test_package("ghost"), service.list_evals("ghost")):
        assert [d.code for d in envelope.diagnostics] == ["TQX_NOT_FOUND"]
        assert "result" not in envelope.to_builtins()


# --- the authorized merge context, as the reference verifies it ------------------------------


def _legal_context(reference: Path) -> AuthorizedMergeContext:
    data = decode_json(
        (reference / "packages/basenet-legal/fixtures/authorized-context.json").read_bytes()
    )
    return msgspec.convert(data, AuthorizedMergeContext)


def test_legal_authorized_context_binding_fingerprint(reference: Path) -> None:
    context = _legal_context(reference)
    assert authorized_context_fingerprint(context) == LEGAL_BINDING
    assert context.fingerprint == LEGAL_BINDING
    merge = {"_templiqx_authorized_merge": msgspec.to_builtins(context)}
    now = datetime(2027, 1, 1, tzinfo=UTC)
    # the reference's unkeyed binding verifies as package data (an eval fixture) only
    assert validate_authorized_context(merge, now, key=None, package_data=True) == []
    assert [d.code for d in validate_authorized_context(merge, now, key=b"host")] == [
        "TQX_AUTHORIZED_CONTEXT_MISMATCH"
    ]


def test_legal_compile_requires_the_authorized_context(
    reference: Path, make_service: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(reference / "packages")
    request = decode_json(
        (reference / "packages/basenet-legal/evals/legal-extraction-request.json").read_bytes()
    )
    assert request["context"]["_templiqx_authorized_merge"]["fingerprint"] == LEGAL_BINDING
    # A caller's context must carry the host's signature (issue #29); the reference's unkeyed
    # binding is refused, and the same context signed by the host compiles to the same bytes.
    unkeyed = service.compile_contract(
        "basenet-legal",
        "legal-matter-extraction",
        inputs=request["inputs"],
        context=request["context"],
        capabilities=CAPS,
    )
    assert [d.code for d in unkeyed.diagnostics] == ["TQX_AUTHORIZED_CONTEXT_UNVERIFIED"]
    monkeypatch.setenv(AUTHORIZATION_KEY_ENV, "legal-host-key")
    request["context"]["_templiqx_authorized_merge"] = sign_authorized_context(
        request["context"]["_templiqx_authorized_merge"], b"legal-host-key"
    )
    compiled = service.compile_contract(
        "basenet-legal",
        "legal-matter-extraction",
        inputs=request["inputs"],
        context=request["context"],
        capabilities=CAPS,
    )
    assert compiled.ok, compiled.diagnostics
    assert compiled.fingerprints["compiled_interaction"] == (
        "4ab7f8c7aebee33629e13ef9c85bca5003b829df4ad7f1a6521ed0b1504c6c77"
    )
    context = {k: v for k, v in request["context"].items() if k != "_templiqx_authorized_merge"}
    missing = service.compile_contract(
        "basenet-legal",
        "legal-matter-extraction",
        inputs=request["inputs"],
        context=context,
        capabilities=CAPS,
    )
    assert [d.code for d in missing.diagnostics] == ["TQX_AUTHORIZED_CONTEXT_MISSING"]
    assert missing.diagnostics[0].json_pointer == "/context/_templiqx_authorized_merge"


def test_an_operation_reads_the_manifest_once(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Callable[..., Path],
    greeting: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_pkg(scratch_root, "pkg", contracts={"hello": greeting(), "other": greeting("other")})
    reads: list[str] = []
    original = FilesystemPackageStore.manifest

    def counting(self: FilesystemPackageStore, package: str) -> Any:
        reads.append(package)
        return original(self, package)

    monkeypatch.setattr(FilesystemPackageStore, "manifest", counting)
    service = make_service(scratch_root)
    runs: list[Callable[[], Any]] = [
        lambda: service.compile_contract("pkg", "hello", inputs={"name": "Ada"}, capabilities=CAPS),
        lambda: service.render_contract("pkg", "hello", inputs={"name": "Ada"}, capabilities=CAPS),
        lambda: service.execute_contract(
            "pkg",
            "hello",
            inputs={"name": "Ada"},
            capabilities=CAPS,
            fixture_output={"greeting": "Hi"},
        ),
        lambda: service.test_package("pkg", capabilities=CAPS),
        lambda: service.run_eval("pkg", "hello", "ada", capabilities=CAPS),
        lambda: service.list_evals("pkg"),
        lambda: service.validate_package("pkg"),
    ]
    for run in runs:
        reads.clear()
        assert run().ok
        assert reads == ["pkg"]
