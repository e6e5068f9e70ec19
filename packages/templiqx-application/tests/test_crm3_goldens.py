"""Acceptance 1: every CRM3 scenario, run through the service on ScriptedRuntime, reproduces the
manifest's golden receipt fingerprint — streaming or not, with identical receipts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from templiqx_application import TempliqxService
from templiqx_contracts import Complete, ExecutionReceipt, Failed, decode_json
from templiqx_mock import (
    ScriptedRuntime,
    envelope_outcome_fingerprint,
    load_expected_output,
    load_inventory,
)
from templiqx_ports import validate_event_order

CAPS = ["structured_output"]

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

PINNED = {
    "intake-document-01": "b73126237c73c329bedcdd40e1fce86ebca9c0b09926c0fa2630da69cc869637",
    "draft-with-citations": "4b56841ff9b4c7d492daf830c16352bf5eedf90d73a0a3541bde9a24ce8d249c",
}


def test_inventory_lists_exactly_the_eight_scenarios(reference: Path) -> None:
    inventory = load_inventory(reference / "crm3" / "scenarios" / "inventory.json", "crm3")
    assert inventory.ids() == SCENARIOS


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_scenario_reproduces_golden_receipt_streaming_and_not(
    reference: Path, make_service: Callable[..., TempliqxService], scenario_id: str
) -> None:
    inventory = load_inventory(reference / "crm3" / "scenarios" / "inventory.json", "crm3")
    scenario = inventory.get(scenario_id)
    assert scenario is not None
    manifest = scenario.manifest
    assert manifest.input is not None
    request = decode_json((scenario.path.parent / manifest.input).read_bytes())
    fixture_output = load_expected_output(manifest, scenario.path)

    outcomes = {}
    for stream in (False, True):
        runtime = ScriptedRuntime.from_manifest(manifest)
        service = make_service(reference, runtime)
        envelope = service.execute_contract(
            "crm3",
            manifest.contract,
            inputs=request["inputs"],
            context=request["context"],
            capabilities=CAPS,
            fixture_output=fixture_output,
            stream=stream,
        )
        stats = runtime.stats()
        assert stats.attempts == 1
        assert stats.elapsed_ms <= 25
        assert envelope_outcome_fingerprint(envelope) == manifest.golden_receipt_fingerprint
        assert envelope.ok is (manifest.expected_status == "success")
        found = [d.code for d in envelope.diagnostics]
        for code in manifest.expected_diagnostics:
            assert code in found
        if manifest.expected_failure is not None:
            assert manifest.expected_failure in manifest.expected_diagnostics
            assert found[0] == manifest.expected_failure
        if manifest.receipt_payload_policy == "fingerprints_only":
            assert isinstance(envelope.result, ExecutionReceipt)
            assert set(envelope.fingerprints) == {"request", "output"}
        else:
            assert envelope.to_builtins().get("result") is None
            assert envelope.fingerprints == {}
            assert "adapter=templiqx-scripted-runtime" in (envelope.diagnostics[0].help or "")
        if stream and isinstance(envelope.result, ExecutionReceipt):
            validate_event_order(envelope.stream_events)
            terminal = envelope.stream_events[-1]
            assert isinstance(terminal, Complete)
            assert terminal.receipt == envelope.result
        elif stream:  # a failed stream keeps its events, ending in the diagnostic's code
            validate_event_order(envelope.stream_events)
            terminal = envelope.stream_events[-1]
            assert isinstance(terminal, Failed)
            assert terminal.code == envelope.diagnostics[0].code
        else:
            assert envelope.stream_events == []
        outcomes[stream] = envelope

    plain, streamed = outcomes[False], outcomes[True]
    assert plain.to_builtins().get("result") == streamed.to_builtins().get("result")
    assert plain.diagnostics == streamed.diagnostics
    assert plain.fingerprints == streamed.fingerprints
    if scenario_id in PINNED:
        assert manifest.golden_receipt_fingerprint == PINNED[scenario_id]
        assert envelope_outcome_fingerprint(plain) == PINNED[scenario_id]
