"""templiqx-ports installed alone: a minimal adapter and the default streaming projection."""

from typing import Any

from templiqx_contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    fingerprint,
)
from templiqx_ports import (
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    validate_event_order,
)

DESCRIPTOR = AdapterDescriptor(id="smoke-echo", version="1.0.0", capabilities=["text"])


class Echo(RuntimeAdapter):
    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        output: Any = request.fixture_output
        if output is None:
            raise RuntimeFailureError(
                RuntimeFailure(
                    code=RuntimeFailureCode.PERMANENT,
                    adapter_id=DESCRIPTOR.id,
                    adapter_version=DESCRIPTOR.version,
                    fingerprint=fingerprint(request),
                    detail="no fixture output",
                )
            )
        return ExecutionReceipt(
            adapter=DESCRIPTOR,
            request_fingerprint=fingerprint(request),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


interaction = CompiledInteraction(
    compiler="templiqx-core/0.2.0",
    contract_id="smoke",
    contract_version="1.0.0",
    messages=[],
    output_schema={"type": "string"},
    required_capabilities=[],
    target_capabilities=["text"],
    runtime_policy={},
    extensions={},
)
events: list[StreamEvent] = []
receipt = Echo().execute_streaming(
    ExecutionRequest(interaction=interaction, fixture_output="hi"), events.append
)
validate_event_order(events)
check(events == [Complete.of(receipt)], "one Complete carrying the receipt")
failures: list[StreamEvent] = []
try:
    Echo().execute_streaming(ExecutionRequest(interaction=interaction), failures.append)
    raise SystemExit("smoke check failed: a failing execution must raise")
except RuntimeFailureError as error:
    check(error.code == "TQX_RUNTIME_PERMANENT", "the failure code")
validate_event_order(failures)
check(len(failures) == 1 and isinstance(failures[0], Failed), "exactly one Failed")
print("ok")
