"""The reference CRM3 scenarios, the Appendix A vectors and the HTTP conformance golden.

Everything here is recomputed from the reference data with this package's helpers; no expected
digest is derived from the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import (
    AdapterDescriptor,
    Diagnostic,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    decode_json,
    fingerprint,
)
from templiqx_mock import (
    ScenarioManifest,
    ScriptedRuntime,
    envelope_outcome_fingerprint,
    failure_receipt_fingerprint,
    load_expected_output,
    load_inventory,
    runtime_failure_fingerprint,
    scenario_fingerprint,
    success_receipt_fingerprint,
)
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError

SCENARIOS = [
    "ambiguous-date",
    "contradictory-evidence",
    "docx-unresolved-reference",
    "draft-with-citations",
    "intake-document-01",
    "invalid-output-schema",
    "missing-notice-date",
    "missing-required-field",
]

# Appendix A: scenario_fingerprint of each manifest.
SCENARIO_FINGERPRINTS = {
    "ambiguous-date": "11aa4008e15c8f3aad1508acea11ff04d6a53637e4302df0c670dbf3c14713e6",
    "contradictory-evidence": "8cc8f7bf8d009c28a981d16599b06abccc14ef26e8805ac82b8254a62325a946",
    "docx-unresolved-reference": "463c8e51f3998b94f06a4e80e49939f2c7469064b441d84cb90fcdd16e891d6e",
    "draft-with-citations": "09437dd6bcb849d22d1730142e6615663aa3cb1f789c8d657a8a4f18720c06b4",
    "intake-document-01": "8b3e2aa73cd378f719289e3011572725c911434a361113e81a800ece84681e10",
    "invalid-output-schema": "29f6eac42a7fd4e5fcccb5150f090e7452426156a3cc59e6f5d6661779123013",
    "missing-notice-date": "89a24fa96224a0e0e13479a17da4d06833d5a28e65182fc78d65f4f0ff0f771f",
    "missing-required-field": "2c0ddeb680573523cd37d5c37f77089998c62e217012e27f72000e7ab3ad28e1",
}

# Appendix A: failure fingerprints of the step-scripted failures.
STEP_FAILURE_FINGERPRINTS = {
    "ambiguous-date": "4b1db6b7fad3247e7013070e1e8ba95b18eb86fbcfd9ebdfe98d54a3f8cee031",
    "contradictory-evidence": "78fcbdaa415cb6b7283a5b8eb3fe2add6c1d0c1198de497251e9abc9f06e48ed",
    "missing-notice-date": "df4bcd46c837ff52557ef6a95408bb0812563228b59e502c9bebce939f6ef43c",
    "missing-required-field": "7a9f118135da7a623154e4313dc50e07e852e432cc210553d72d2f4ba102446b",
}

BLI_61_OUTPUT_FP = "66d6c3fbb03611b4b22deabbe9ef669e5ad69f59c1e90be4dee92d9c3a5188de"
BLI_62_OUTPUT_FP = "54eae956be0ca2f14a0afc83294c656ebe7c1ee6358387094262faa4d46c8084"
GATEWAY_REQUEST_FPS = {
    "bli-61-date-term-extraction": (
        "84181d131d5f37ede5841b813f3aca358de383f639a65eab908658c31eae827b"
    ),
    "bli-62-document-drafting": "8c9158fef4307ddc5167235bd63880678822994e2697eb0b092411f5e03c5b0e",
}
# In-process compiled-interaction fingerprints (Appendix A; need the real compiler).
COMPILED_REQUEST_FPS = {
    "bli-61-date-term-extraction": (
        "c18d54797d60a8d3b99306f364fc4048f023911533cd1c39e816e73acc38f0f9"
    ),
    "bli-62-document-drafting": "73ac55bac233fe9fdd7f7d7ea9d5c891a60d8c1b27c97b36bc2b765c615a46c2",
}

GatewayRequest = Callable[[str, Any], ExecutionRequest]


def _manifest(crm3: Path, scenario_id: str) -> tuple[ScenarioManifest, Path]:
    path = crm3 / "scenarios" / scenario_id / "manifest.json"
    return ScenarioManifest.load(path), path


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_reference_manifest_loads_validates_and_fingerprints(crm3: Path, scenario_id: str) -> None:
    manifest, path = _manifest(crm3, scenario_id)
    manifest.validate()
    assert manifest.id == scenario_id
    assert scenario_fingerprint(manifest) == SCENARIO_FINGERPRINTS[scenario_id]
    assert manifest.steps[0].kind.value == "request_received"
    assert manifest.events is None
    if manifest.expected_output is not None:
        output = load_expected_output(manifest, path)
        assert fingerprint(output) == manifest.expected_output_fingerprint
        assert manifest.expected_output_fingerprint in (BLI_61_OUTPUT_FP, BLI_62_OUTPUT_FP)
    if manifest.input is not None:
        request_file = path.parent / manifest.input
        assert isinstance(decode_json(request_file.read_bytes()), dict)


def test_scenario_fingerprint_excludes_payload_paths_and_golden(crm3: Path) -> None:
    manifest, _ = _manifest(crm3, "intake-document-01")
    changed = ScenarioManifest.from_json(
        (crm3 / "scenarios" / "intake-document-01" / "manifest.json")
        .read_text(encoding="utf-8")
        .replace("../../evals/bli-61-request.json", "elsewhere.json")
        .replace(manifest.golden_receipt_fingerprint or "", "0" * 64)
    )
    assert scenario_fingerprint(changed) == scenario_fingerprint(manifest)
    changed.evidence[0].quote_sha256 = "1" * 64
    assert scenario_fingerprint(changed) != scenario_fingerprint(manifest)


def _outcome(runtime: ScriptedRuntime, request: ExecutionRequest) -> tuple[str, str | None]:
    """Run once; return (transport outcome fingerprint, code) as the HTTP runner derives it."""
    try:
        receipt = runtime.execute(request)
    except RuntimeFailureError as error:
        failure = error.failure
        code = failure.code.value
        return failure_receipt_fingerprint(code, failure.fingerprint, failure.retry_after_ms), code
    if receipt.output_schema_valid:
        return success_receipt_fingerprint(receipt), None
    return (
        failure_receipt_fingerprint("TQX_OUTPUT_SCHEMA", receipt.output_fingerprint, None),
        "TQX_OUTPUT_SCHEMA",
    )


def test_every_inventory_scenario_matches_its_transport_expectation(
    crm3: Path, gateway_request: GatewayRequest
) -> None:
    """What the reference gateway computes for each scenario equals the inventory expectation."""
    loaded = load_inventory(crm3 / "scenarios" / "inventory.json", "crm3")
    assert len(loaded.scenarios) == 8
    for scenario in loaded.scenarios:
        manifest = scenario.manifest
        output = load_expected_output(manifest, scenario.path)
        runtime = ScriptedRuntime.from_manifest(manifest)
        request = gateway_request(manifest.contract, output)
        assert fingerprint(request.interaction) == GATEWAY_REQUEST_FPS[manifest.contract]
        receipt_fp, code = _outcome(runtime, request)
        expectation = scenario.entry.expectation
        assert receipt_fp == expectation.receipt_fingerprint, manifest.id
        assert code == expectation.diagnostic_code
        assert ("success" if code is None else "failure") == expectation.status
        stats = runtime.stats()
        assert stats.attempts == 1
        assert stats.elapsed_ms == (25 if manifest.id == "intake-document-01" else 0)


@pytest.mark.parametrize("scenario_id", sorted(STEP_FAILURE_FINGERPRINTS))
def test_runtime_failure_goldens_reproduce(
    crm3: Path, scenario_id: str, make_request: Callable[..., ExecutionRequest]
) -> None:
    """Failure goldens do not depend on the request: any request reproduces them."""
    manifest, _ = _manifest(crm3, scenario_id)
    runtime = ScriptedRuntime.from_manifest(manifest)
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute(make_request())
    failure = caught.value.failure
    step = manifest.steps[-1]
    assert step.failure is not None
    assert failure.code == step.failure.code
    assert failure.code.value == manifest.expected_failure
    assert failure.detail == step.failure.detail
    assert failure.scenario_id == step.id
    assert failure.adapter_id == "templiqx-scripted-runtime"
    assert failure.adapter_version == "0.2.0"
    assert failure.retry_after_ms is None
    assert failure.fingerprint == STEP_FAILURE_FINGERPRINTS[scenario_id]
    assert failure.fingerprint == runtime_failure_fingerprint(step.id, failure.code, None)
    golden = failure_receipt_fingerprint(failure.code.value, failure.fingerprint, None)
    assert golden == manifest.golden_receipt_fingerprint
    assert str(caught.value) == f"runtime failure {failure.code.value}: {step.failure.detail}"
    # The application's diagnostic help for this failure yields the same outcome fingerprint.
    envelope = OperationEnvelope.build(
        "execute_contract",
        diagnostics=[
            Diagnostic.error(failure.code.value, str(caught.value), help=failure.help_text())
        ],
    )
    assert envelope_outcome_fingerprint(envelope) == manifest.golden_receipt_fingerprint


def test_schema_invalid_golden_reproduces(
    crm3: Path, make_request: Callable[..., ExecutionRequest]
) -> None:
    manifest, _ = _manifest(crm3, "invalid-output-schema")
    receipt = ScriptedRuntime.from_manifest(manifest).execute(make_request({"ignored": True}))
    assert receipt.output == {"effective_date": "not-a-date"}
    assert receipt.output_schema_valid is False
    assert (
        receipt.output_fingerprint
        == "74fccc7917e17a8701088adad9a3c3070b8c47931ece8f78f019ce1dc2ac1bc1"
    )
    golden = failure_receipt_fingerprint("TQX_OUTPUT_SCHEMA", receipt.output_fingerprint, None)
    assert golden == manifest.golden_receipt_fingerprint
    envelope = OperationEnvelope.build(
        "execute_contract",
        result=receipt,
        diagnostics=[
            Diagnostic.error(
                "TQX_OUTPUT_SCHEMA",
                "runtime output does not satisfy the contract schema",
                "/output",
            )
        ],
    )
    assert envelope_outcome_fingerprint(envelope) == manifest.golden_receipt_fingerprint
    as_json = OperationEnvelope.build(
        "execute_contract",
        result=envelope.to_builtins()["result"],
        diagnostics=envelope.diagnostics,
    )
    assert envelope_outcome_fingerprint(as_json) == manifest.golden_receipt_fingerprint


@pytest.mark.parametrize(
    ("scenario_id", "contract"),
    [
        ("intake-document-01", "bli-61-date-term-extraction"),
        ("draft-with-citations", "bli-62-document-drafting"),
        ("docx-unresolved-reference", "bli-62-document-drafting"),
    ],
)
def test_success_golden_recipe_with_the_compiled_request_fingerprint(
    crm3: Path, scenario_id: str, contract: str
) -> None:
    """With the compiled interaction fingerprint (Appendix A) the success recipe gives the golden.

    The end-to-end check through the real compiler lives in test_crm3_compiled_goldens.py.
    """
    manifest, _ = _manifest(crm3, scenario_id)
    receipt = ExecutionReceipt(
        adapter=AdapterDescriptor(
            id="templiqx-scripted-runtime", version="0.2.0", capabilities=["structured_output"]
        ),
        request_fingerprint=COMPILED_REQUEST_FPS[contract],
        output_fingerprint=manifest.expected_output_fingerprint or "",
        output=None,
        output_schema_valid=True,
    )
    assert success_receipt_fingerprint(receipt) == manifest.golden_receipt_fingerprint
    envelope = OperationEnvelope.build("execute_contract", result=receipt)
    assert envelope_outcome_fingerprint(envelope) == manifest.golden_receipt_fingerprint


def test_http_conformance_golden_reproduces(
    reference: Path, crm3: Path, gateway_request: GatewayRequest
) -> None:
    """Recompute the runner's intake line the way the reference gateway and runner do."""
    golden = json.loads((reference / "golden" / "http-conformance.json").read_text("utf-8"))
    loaded = load_inventory(crm3 / "scenarios" / "inventory.json", "crm3")
    scenario = loaded.get("intake-document-01")
    assert scenario is not None
    manifest = scenario.manifest
    runtime = ScriptedRuntime.from_manifest(manifest)
    receipt = runtime.execute(
        gateway_request(manifest.contract, load_expected_output(manifest, scenario.path))
    )
    line = {
        "api_version": "templiqx/http-conformance/v1",
        "attempts": runtime.stats().attempts,
        "code": None,
        "ok": receipt.output_schema_valid,
        "output_fingerprint": receipt.output_fingerprint,
        "receipt_fingerprint": success_receipt_fingerprint(receipt),
        "request_fingerprint": receipt.request_fingerprint,
        "scenario_id": manifest.id,
        "schema_valid": receipt.output_schema_valid,
        "status": "success",
    }
    assert line == golden
    assert line["receipt_fingerprint"] == scenario.entry.expectation.receipt_fingerprint


# --- Appendix A vectors -------------------------------------------------------------------

SCRIPTED_FAILURE_FINGERPRINTS = [
    (
        "TQX_RUNTIME_TIMEOUT",
        RuntimeFailureCode.TIMEOUT,
        None,
        "43dfdb53bbe066354cff9bbbc1c54bdbc450d50d041658a7874f4df0364a4667",
    ),
    (
        "TQX_RUNTIME_RATE_LIMITED",
        RuntimeFailureCode.RATE_LIMITED,
        1500,
        "fff001c58cb36b3456e0aef91a17fe8ba37d5899438acad7a632522e13b7aefa",
    ),
    (
        "TQX_RUNTIME_UNAVAILABLE",
        RuntimeFailureCode.UNAVAILABLE,
        None,
        "48017ba9079f5c3ac677ec1d5e96c2cadcf915eb1debc5ed513607419d5aa4a7",
    ),
    (
        "TQX_RUNTIME_INVALID_RESPONSE",
        RuntimeFailureCode.INVALID_RESPONSE,
        None,
        "6120c91d2b165337b50e28ef01f08aa7864a2d474dc04c34b56bb09f9ec81ba9",
    ),
    (
        "TQX_RUNTIME_PERMANENT",
        RuntimeFailureCode.PERMANENT,
        None,
        "743c1ac3e23da2fe70aae02e32b95745fad4e8d70c1fcbd4c5c41c1468ee8171",
    ),
    (
        "host-retry-exhausted",
        RuntimeFailureCode.HOST_RETRY_EXHAUSTED,
        None,
        "1e8a422116d94c94cbcdbffe906c0ad4b421f593a4c424665ea14a271a122c15",
    ),
    (
        "mid-stream",
        RuntimeFailureCode.INVALID_RESPONSE,
        None,
        "81c091287a8b8b9b3c5f91e88d35a25a17fdcd9a896bd624784a4b0a3fd50bd3",
    ),
]


@pytest.mark.parametrize(("failure_id", "code", "retry", "expected"), SCRIPTED_FAILURE_FINGERPRINTS)
def test_scripted_failure_fingerprints(
    failure_id: str,
    code: RuntimeFailureCode,
    retry: int | None,
    expected: str,
    make_request: Callable[..., ExecutionRequest],
) -> None:
    with pytest.raises(RuntimeFailureError) as caught:
        ScriptedRuntime.failure(failure_id, code).execute(make_request())
    failure = caught.value.failure
    assert failure.fingerprint == expected
    assert failure.retry_after_ms == retry
    assert failure.detail == f"scripted runtime failure: {failure_id}"
    assert runtime_failure_fingerprint(failure_id, code.value, retry) == expected


def test_appendix_a_plain_vectors(make_request: Callable[..., ExecutionRequest]) -> None:
    assert fingerprint(None) == "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
    assert (
        fingerprint({"ok": True})
        == "4062edaf750fb8074e7e83e0c9028c94e32468a8b6f1614774328ef045150f93"
    )
    request = make_request({"ok": True})
    receipt = ScriptedRuntime.success().execute(request)
    assert (
        receipt.request_fingerprint
        == "6aea6fa72da18ad92ffd9450ddabe3bde318f07f9d4012403117f54755d7649e"
    )
    # The mock fingerprints the interaction only; the whole request hashes differently.
    assert (
        fingerprint(request) == "22b76fdc4205bf04d990551d7e43de6846d601292c4ba8bb143a7db967a974b2"
    )
    assert receipt.output_fingerprint == fingerprint({"ok": True})
