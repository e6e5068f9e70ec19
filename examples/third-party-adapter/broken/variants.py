"""Deliberately broken variants of the echo runtime, one broken invariant each.

The kit's own tests run the conformance suite against each variant and assert that exactly the
check named in :data:`EXPECTED_FAILURE` fails. Import with ``src``, ``tests`` and this folder on
``sys.path``; each ``<variant>_target`` is also usable from the command, e.g.
``templiqx-conformance run variants:two_terminals_target``.
"""

from __future__ import annotations

from typing import Any

from acme_echo import EchoRuntime
from conformance_target import failure_cases

from templiqx_conformance import AdapterTarget
from templiqx_contracts import (
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    fingerprint,
)
from templiqx_ports import CancelToken, RuntimeFailureCode, StreamSink


class StreamingReceiptDiffers(EchoRuntime):
    """Bug: the streamed receipt carries the streamed text as its output, not the parsed value."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        pieces: list[str] = []
        final: list[ExecutionReceipt] = []

        def forward(event: StreamEvent) -> None:
            if isinstance(event, Delta):
                pieces.append(event.text)
            if isinstance(event, Complete):
                text = "".join(pieces)
                receipt = ExecutionReceipt(
                    adapter=event.adapter,
                    request_fingerprint=event.request_fingerprint,
                    output_fingerprint=fingerprint(text),
                    output=text,
                    output_schema_valid=event.output_schema_valid,
                )
                final.append(receipt)
                event = Complete.of(receipt)
            sink(event)

        super().execute_streaming(request, forward, cancel=cancel)
        return final[-1]


class TwoTerminals(EchoRuntime):
    """Bug: a successful stream ends with Complete twice."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        receipt = super().execute_streaming(request, sink, cancel=cancel)
        sink(Complete.of(receipt))
        return receipt


class FailedCodeDiffers(EchoRuntime):
    """Bug: a scripted failure is announced as TQX_RUNTIME_UNAVAILABLE, whatever is raised."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        def announce(event: StreamEvent) -> None:
            if isinstance(event, Failed) and self._fail_with is not None:
                event = Failed(code=RuntimeFailureCode.UNAVAILABLE.value, message=event.message)
            sink(event)

        return super().execute_streaming(request, announce, cancel=cancel)


class IgnoresCancel(EchoRuntime):
    """Bug: the cancel token is never looked at."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        return super().execute_streaming(request, sink, cancel=None)


class LiesAboutSchema(EchoRuntime):
    """Bug: output_schema_valid is always true."""

    def _receipt(self, request: ExecutionRequest, output: Any) -> ExecutionReceipt:
        receipt = super()._receipt(request, output)
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=receipt.output_fingerprint,
            output=receipt.output,
            output_schema_valid=True,
        )


def _target(runtime: type[EchoRuntime]) -> AdapterTarget:
    return AdapterTarget(factory=runtime, failures=failure_cases(runtime))


streaming_receipt_differs_target = _target(StreamingReceiptDiffers)
two_terminals_target = _target(TwoTerminals)
failed_code_differs_target = _target(FailedCodeDiffers)
ignores_cancel_target = _target(IgnoresCancel)
lies_about_schema_target = _target(LiesAboutSchema)

EXPECTED_FAILURE: dict[str, tuple[AdapterTarget, str, str]] = {
    "streaming_receipt_differs": (
        streaming_receipt_differs_target,
        "streaming.complete_matches_execute",
        "the streamed receipt (returned and in Complete) must equal the execute receipt",
    ),
    "two_terminals": (
        two_terminals_target,
        "streaming.event_order",
        "exactly one terminal event",
    ),
    "failed_code_differs": (
        failed_code_differs_target,
        "failure.projection",
        "Failed.code",
    ),
    "ignores_cancel": (
        ignores_cancel_target,
        "cancellation.token",
        "a set cancel token must end the stream",
    ),
    "lies_about_schema": (
        lies_about_schema_target,
        "receipt.output_schema_valid",
        "output_schema_valid must agree with the interaction's output schema",
    ),
}
"""Variant -> (its target, the one check that must fail, a phrase its message must contain)."""
