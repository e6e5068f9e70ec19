"""The echo runtime: the request's ``fixture_output`` plays the part of the model's answer.

Swap :meth:`EchoRuntime._answer` for a call to your model and keep the rest: the receipt, the
streaming projection, cancellation and the failure mapping are what the conformance kit checks.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs

from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    canonical_json,
    fingerprint,
)
from templiqx_ports import (
    CancelToken,
    InvalidDataError,
    PortError,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
    failed_event,
)

ADAPTER_ID = "acme-echo"
ADAPTER_VERSION = "1.0.0"


class EchoRuntime(RuntimeAdapter):
    """Replays ``fixture_output``; streams its text in ``chunk_size`` pieces.

    ``fail_with`` makes every execution fail with that code (after ``fail_after`` deltas when
    streaming): the hook the conformance kit uses to check the failure projection.
    """

    def __init__(
        self,
        *,
        chunk_size: int = 8,
        fail_with: RuntimeFailureCode | None = None,
        fail_after: int = 1,
    ) -> None:
        self._chunk_size = chunk_size
        self._fail_with = fail_with
        self._fail_after = fail_after

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id=ADAPTER_ID, version=ADAPTER_VERSION, capabilities=["structured_output", "text"]
        )

    # --- the port ---------------------------------------------------------------------------

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        output = self._answer(request)
        if self._fail_with is not None:
            raise self._failure(self._fail_with, "echo runtime was told to fail")
        return self._receipt(request, output)

    def execute_streaming(
        self,
        request: ExecutionRequest,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ExecutionReceipt:
        try:
            output = self._answer(request)
            text = output if isinstance(output, str) else canonical_json(output).decode("utf-8")
            pieces = [text[i : i + self._chunk_size] for i in range(0, len(text), self._chunk_size)]
            for index, piece in enumerate(pieces):
                self._check_cancel(cancel)
                if self._fail_with is not None and index == self._fail_after:
                    raise self._failure(self._fail_with, "echo runtime was told to fail")
                sink(Delta(text=piece))
            self._check_cancel(cancel)
            if self._fail_with is not None:
                raise self._failure(self._fail_with, "echo runtime was told to fail")
            receipt = self._receipt(request, output)
        except PortError as error:
            # Exactly one terminal event, the projection of the error we raise.
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt

    # --- helpers ----------------------------------------------------------------------------

    def _answer(self, request: ExecutionRequest) -> Any:
        if request.fixture_output is None:
            raise InvalidDataError("echo runtime requires fixture_output")
        return request.fixture_output

    def _receipt(self, request: ExecutionRequest, output: Any) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=schema_accepts(request.interaction.output_schema, output),
        )

    def _check_cancel(self, cancel: CancelToken | None) -> None:
        if cancel is not None and cancel.is_set():
            raise self._failure(RuntimeFailureCode.CANCELLED, "cancelled by the caller")

    def _failure(self, code: RuntimeFailureCode, detail: str) -> RuntimeFailureError:
        return RuntimeFailureError(
            RuntimeFailure(
                code=code,
                adapter_id=ADAPTER_ID,
                adapter_version=ADAPTER_VERSION,
                fingerprint=fingerprint({"adapter": ADAPTER_ID, "code": code.value}),
                detail=detail,
            )
        )


def schema_accepts(schema: Any, output: Any) -> bool:
    """Whether ``output`` satisfies ``schema``; a schema that does not compile accepts nothing."""
    try:
        return bool(jsonschema_rs.validator_for(schema).is_valid(output))
    except (ValueError, TypeError):
        return False
