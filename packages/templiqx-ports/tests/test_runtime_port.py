from __future__ import annotations

import pickle

import pytest

from templiqx_contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCallDelta,
    fingerprint,
)
from templiqx_ports import (
    RETRYABLE_CODES,
    ConflictError,
    EventOrderError,
    InvalidDataError,
    InvalidPathError,
    NotFoundError,
    PortError,
    PortIOError,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    UnsupportedError,
    validate_event_order,
)

INTERACTION = CompiledInteraction(
    compiler="templiqx-core/0.2.0",
    contract_id="c",
    contract_version="1.0.0",
    messages=[],
    output_schema={"type": "object"},
    required_capabilities=[],
    target_capabilities=[],
    runtime_policy={},
    extensions={},
)
REQUEST = ExecutionRequest(interaction=INTERACTION, fixture_output={"ok": True})
DESCRIPTOR = AdapterDescriptor(id="test.echo", version="1.0.0", capabilities=["text"])


class Echo(RuntimeAdapter):
    def descriptor(self) -> AdapterDescriptor:
        return DESCRIPTOR

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=DESCRIPTOR,
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(request.fixture_output),
            output=request.fixture_output,
            output_schema_valid=True,
        )


class Broken(Echo):
    def __init__(self, error: PortError) -> None:
        self.error = error

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise self.error


def test_default_streaming_emits_one_complete_with_the_execute_receipt() -> None:
    events: list[StreamEvent] = []
    adapter = Echo()
    receipt = adapter.execute_streaming(REQUEST, events.append)
    assert receipt == adapter.execute(REQUEST)
    assert events == [Complete.of(receipt)]
    assert isinstance(events[0], Complete)
    assert events[0].receipt == receipt
    validate_event_order(events)


FAILURE = RuntimeFailure(
    code=RuntimeFailureCode.RATE_LIMITED,
    adapter_id="test.echo",
    adapter_version="1.0.0",
    fingerprint="f" * 64,
    detail="slow down",
    retry_after_ms=250,
)


@pytest.mark.parametrize(
    ("error", "code", "text"),
    [
        (NotFoundError("greeting"), "TQX_NOT_FOUND", "not found: greeting"),
        (ConflictError("expected a, found b"), "TQX_CAS_CONFLICT", "conflict: expected a, found b"),
        (InvalidPathError("../x"), "TQX_PATH_INVALID", "invalid path: ../x"),
        (UnsupportedError("nope"), "TQX_UNSUPPORTED", "unsupported: nope"),
        (PortIOError("disk"), "TQX_IO", "I/O error: disk"),
        (InvalidDataError("bad"), "TQX_DATA_INVALID", "invalid data: bad"),
        (
            RuntimeFailureError(FAILURE),
            "TQX_RUNTIME_RATE_LIMITED",
            "runtime failure TQX_RUNTIME_RATE_LIMITED: slow down",
        ),
    ],
)
def test_default_streaming_projects_failures(error: PortError, code: str, text: str) -> None:
    assert error.code == code
    assert str(error) == text
    events: list[StreamEvent] = []
    with pytest.raises(PortError) as raised:
        Broken(error).execute_streaming(REQUEST, events.append)
    assert raised.value is error
    assert events == [Failed(code=code, message=text)]
    validate_event_order(events)


def test_runtime_failure_codes_and_retryability() -> None:
    assert [c.value for c in RuntimeFailureCode] == [
        "TQX_RUNTIME_TIMEOUT",
        "TQX_RUNTIME_RATE_LIMITED",
        "TQX_RUNTIME_UNAVAILABLE",
        "TQX_RUNTIME_INVALID_RESPONSE",
        "TQX_RUNTIME_PERMANENT",
        "TQX_HOST_RETRY_EXHAUSTED",
        "TQX_RUNTIME_CANCELLED",
    ]
    assert (
        {c for c in RuntimeFailureCode if c.retryable}
        == set(RETRYABLE_CODES)
        == {
            RuntimeFailureCode.TIMEOUT,
            RuntimeFailureCode.RATE_LIMITED,
            RuntimeFailureCode.UNAVAILABLE,
        }
    )
    assert not RuntimeFailureCode.CANCELLED.retryable
    assert FAILURE.retryable


def test_runtime_failure_help_and_pickling() -> None:
    assert FAILURE.help_text() == (
        f"adapter=test.echo version=1.0.0 scenario=none retry_after_ms=250 fingerprint={'f' * 64}"
    )
    error = RuntimeFailureError(FAILURE)
    clone = pickle.loads(pickle.dumps(error))
    assert clone.failure == FAILURE
    assert str(clone) == str(error)
    assert pickle.loads(pickle.dumps(NotFoundError("x"))).detail == "x"


def test_a_port_error_may_carry_its_fix() -> None:
    assert NotFoundError("x").help is None
    error = NotFoundError("x", help="look elsewhere")
    assert (str(error), error.code, error.help) == (
        "not found: x",
        "TQX_NOT_FOUND",
        "look elsewhere",
    )
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.detail, clone.help) == ("x", "look elsewhere")


COMPLETE = Complete.of(Echo().execute(REQUEST))
FAILED = Failed(code="TQX_RUNTIME_TIMEOUT", message="runtime failure TQX_RUNTIME_TIMEOUT: late")


@pytest.mark.parametrize(
    "events",
    [
        [COMPLETE],
        [FAILED],
        [Delta(text="a"), Delta(text="b"), COMPLETE],
        [ToolCallDelta(name="t", arguments_fragment="{"), Delta(text="a"), FAILED],
    ],
)
def test_valid_streams(events: list[StreamEvent]) -> None:
    validate_event_order(events)


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "empty"),
        ([Delta(text="a")], "no terminal"),
        ([COMPLETE, COMPLETE], "2 terminal events"),
        ([FAILED, COMPLETE], "2 terminal events"),
        ([COMPLETE, Delta(text="late")], "not last"),
        ([Delta(text="a"), FAILED, Delta(text="b")], "not last"),
    ],
)
def test_invalid_streams(events: list[StreamEvent], message: str) -> None:
    with pytest.raises(EventOrderError, match=message):
        validate_event_order(events)
