"""Payload-free fingerprints of scenarios and execution outcomes.

Each is the canonical-JSON SHA-256 of a small object; none includes prompt, input or output
text (outputs enter only through their own fingerprints). The recipes match the reference
byte for byte, so the goldens checked into the reference's scenario manifests reproduce.
"""

from __future__ import annotations

from typing import Any

import msgspec

from templiqx_contracts import ExecutionReceipt, OperationEnvelope, fingerprint
from templiqx_mock.scenario import (
    RuntimeFailureSpec,
    ScenarioManifest,
    ScenarioStep,
    ScenarioStreamEvent,
    StreamDelta,
    StreamEnd,
    StreamFinish,
    StreamReasoning,
    StreamStart,
    StreamToolCall,
    StreamUsage,
)

__all__ = [
    "envelope_outcome_fingerprint",
    "failure_receipt_fingerprint",
    "runtime_failure_fingerprint",
    "scenario_fingerprint",
    "success_receipt_fingerprint",
]


def runtime_failure_fingerprint(scenario_id: str, code: str, retry_after_ms: int | None) -> str:
    """The ``fingerprint`` of a scripted runtime failure.

    ``fp({"id", "code", "retry_after_ms"})``: neither the detail text nor the adapter identity
    takes part, so the same scripted failure has the same fingerprint everywhere.
    """
    return fingerprint({"id": scenario_id, "code": str(code), "retry_after_ms": retry_after_ms})


def success_receipt_fingerprint(receipt: ExecutionReceipt) -> str:
    """The outcome fingerprint of a successful execution (its two fingerprints and validity)."""
    return fingerprint(
        {
            "outcome": "success",
            "request_fingerprint": receipt.request_fingerprint,
            "output_fingerprint": receipt.output_fingerprint,
            "output_schema_valid": receipt.output_schema_valid,
        }
    )


def failure_receipt_fingerprint(
    code: str, failure_fingerprint: str, retry_after_ms: int | None
) -> str:
    """The outcome fingerprint of a failed execution.

    For a runtime failure ``failure_fingerprint`` is the failure's own fingerprint; for a
    schema-invalid output it is the output fingerprint (with code ``TQX_OUTPUT_SCHEMA``).
    """
    return fingerprint(
        {
            "outcome": "failure",
            "code": str(code),
            "failure_fingerprint": failure_fingerprint,
            "retry_after_ms": retry_after_ms,
        }
    )


def envelope_outcome_fingerprint(envelope: OperationEnvelope) -> str:
    """The outcome fingerprint of an ``execute_contract`` envelope, as the scenario goldens use it.

    * a receipt and ``ok`` -> :func:`success_receipt_fingerprint` of the receipt;
    * a receipt but not ``ok`` (schema-invalid output) -> a failure with the first diagnostic's
      code and the receipt's output fingerprint, no retry hint;
    * no receipt -> a failure with the first diagnostic's code and the ``fingerprint=`` and
      ``retry_after_ms=`` tokens of its ``help`` (missing fingerprint -> ``""``; missing or
      ``none`` retry -> ``null``).

    Raises ``ValueError`` for an envelope that has neither a receipt nor a diagnostic.
    """
    receipt = _receipt_of(envelope.result)
    if receipt is not None and envelope.ok:
        return success_receipt_fingerprint(receipt)
    if not envelope.diagnostics:
        raise ValueError("a failed envelope without diagnostics has no outcome fingerprint")
    first = envelope.diagnostics[0]
    if receipt is not None:
        return failure_receipt_fingerprint(first.code, receipt.output_fingerprint, None)
    failure_fp = ""
    retry: int | None = None
    for token in (first.help or "").split():
        if token.startswith("fingerprint="):
            failure_fp = token.removeprefix("fingerprint=")
        elif token.startswith("retry_after_ms="):
            value = token.removeprefix("retry_after_ms=")
            retry = int(value) if value.isdigit() else None
    return failure_receipt_fingerprint(first.code, failure_fp, retry)


def _receipt_of(result: Any) -> ExecutionReceipt | None:
    if isinstance(result, ExecutionReceipt):
        return result
    if isinstance(result, dict) and "request_fingerprint" in result:
        try:
            return msgspec.convert(result, ExecutionReceipt, strict=True)
        except msgspec.ValidationError:
            return None
    return None


def scenario_fingerprint(manifest: ScenarioManifest) -> str:
    """The payload-free identity of a scenario.

    Covers the identity, kind, expectations, policy, lifecycle (steps or events) and the
    evidence and document expectations; excludes ``input``, ``expected_output``,
    ``golden_receipt_fingerprint`` and every payload file.
    """
    return fingerprint(
        {
            "api_version": manifest.api_version,
            "id": manifest.id,
            "contract": manifest.contract,
            "kind": manifest.kind.value,
            "expected_output_fingerprint": manifest.expected_output_fingerprint,
            "expected_diagnostics": list(manifest.expected_diagnostics),
            "expected_status": manifest.expected_status,
            "expected_failure": manifest.expected_failure,
            "receipt_payload_policy": manifest.receipt_payload_policy.value,
            "steps": [_step(step) for step in manifest.steps],
            "events": None if manifest.events is None else [_event(e) for e in manifest.events],
            "evidence": [
                {
                    "document_id": item.document_id,
                    "fragment_id": item.fragment_id,
                    "quote_sha256": item.quote_sha256,
                }
                for item in manifest.evidence
            ],
            "document_expectation": {
                "status": manifest.document_expectation.status,
                "unresolved_references": manifest.document_expectation.unresolved_references,
            },
        }
    )


def _failure(spec: RuntimeFailureSpec) -> dict[str, Any]:
    data: dict[str, Any] = {"code": spec.code.value, "detail": spec.detail}
    if spec.retry_after_ms is not None:
        data["retry_after_ms"] = spec.retry_after_ms
    return data


def _step(step: ScenarioStep) -> dict[str, Any]:
    data: dict[str, Any] = {"id": step.id, "kind": step.kind.value}
    if step.delay_ms is not None:
        data["delay_ms"] = step.delay_ms
    if step.output is not None:
        data["output"] = step.output
    if step.output_schema_valid is not None:
        data["output_schema_valid"] = step.output_schema_valid
    if step.failure is not None:
        data["failure"] = _failure(step.failure)
    return data


def _event(event: ScenarioStreamEvent) -> dict[str, Any]:
    if isinstance(event, (StreamStart, StreamEnd)):
        kind = "start" if isinstance(event, StreamStart) else "end"
        return {"kind": kind, "id": event.id}
    if isinstance(event, (StreamDelta, StreamReasoning)):
        kind = "delta" if isinstance(event, StreamDelta) else "reasoning"
        return {"kind": kind, "id": event.id, "text": event.text}
    if isinstance(event, StreamUsage):
        return {
            "kind": "usage",
            "id": event.id,
            "input_tokens": event.input_tokens,
            "output_tokens": event.output_tokens,
        }
    if isinstance(event, StreamToolCall):  # not in the reference: written field by field
        return {
            "kind": "tool_call",
            "id": event.id,
            "call_id": event.call_id,
            "name": event.name,
            "arguments": event.arguments,
        }
    finish: StreamFinish = event
    flag = finish.output_schema_valid
    data: dict[str, Any] = {
        "kind": "finish",
        "id": finish.id,
        # The reference's recipe: an omitted flag is written as its old default, false.
        "output_schema_valid": flag if isinstance(flag, bool) else False,
    }
    if finish.output is not None:
        data["output"] = finish.output
    return data
