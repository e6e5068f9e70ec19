"""The port checks against the example adapter, its deliberately broken variants, and others.

Acceptance 3: each broken variant of the example makes exactly its own check fail, with a message
that names the broken invariant.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import pytest
from acme_echo import EchoRuntime
from conformance_target import failure_cases, target
from variants import EXPECTED_FAILURE

from templiqx_conformance import (
    KIT_SECRET,
    AdapterTarget,
    CheckStatus,
    FailureCase,
    TargetError,
    check_names,
    run_check,
    run_conformance,
)
from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_ports import (
    CancelToken,
    RuntimeAdapter,
    RuntimeFailureCode,
    StreamSink,
    UnsupportedError,
)


def test_the_example_adapter_passes_every_check() -> None:
    report = run_conformance(target)
    assert report.ok, [check.message for check in report.failed_checks]
    assert [check.name for check in report.checks] == check_names()
    assert report.adapter == EchoRuntime().descriptor()
    statuses = {check.name: check.status for check in report.checks}
    assert statuses["streaming.default_projection"] is CheckStatus.NOT_APPLICABLE
    assert statuses["failure.projection"] is CheckStatus.PASSED
    assert statuses["cancellation.token"] is CheckStatus.PASSED


@pytest.mark.parametrize("variant", sorted(EXPECTED_FAILURE))
def test_each_broken_variant_fails_exactly_its_check(variant: str) -> None:
    broken, check, phrase = EXPECTED_FAILURE[variant]
    report = run_conformance(broken)
    assert [result.name for result in report.failed_checks] == [check]
    assert phrase in report.check(check).message
    assert not report.ok


def test_without_failure_cases_the_kit_drives_a_failure_after_deltas_itself() -> None:
    result = run_check("failure.projection", EchoRuntime)
    assert result.status is CheckStatus.PASSED, result.message


class NoFailedAfterDeltas(EchoRuntime):
    """Bug: once a delta went out, a failure is raised without its Failed event."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        sent = [0]

        def forward(event: Any) -> None:
            if isinstance(event, Delta):
                sent[0] += 1
            elif sent[0] and not isinstance(event, Complete):
                return  # the Failed after deltas is lost
            sink(event)

        return super().execute_streaming(request, forward, cancel=cancel)


def test_the_kits_own_failure_after_deltas_catches_a_missing_failed() -> None:
    report = run_conformance(NoFailedAfterDeltas)
    assert [result.name for result in report.failed_checks] == ["failure.projection"]
    message = report.check("failure.projection").message
    assert "cancelled when the first delta arrived (structured-valid) via execute_streaming: " in (
        message
    )
    assert "exactly one Failed must be emitted, got 0 in [Delta]: before raising, send " in message
    assert report.check("cancellation.token").status is CheckStatus.NOT_RUN


class DeafEcho(EchoRuntime):
    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        return super().execute_streaming(request, sink, cancel=None)


def test_a_projection_nothing_could_exercise_is_not_applicable_never_passed() -> None:
    report = run_conformance(DeafEcho)
    projection = report.check("failure.projection")
    assert projection.status is CheckStatus.NOT_APPLICABLE
    assert projection.message.startswith("not exercised: no failure case was supplied")
    assert [result.name for result in report.failed_checks] == ["cancellation.token"]


def test_without_failure_cases_a_default_streaming_adapter_is_not_judged() -> None:
    result = run_check("failure.projection", StreamsDefault)
    assert result.status is CheckStatus.NOT_APPLICABLE
    assert "projects every failure by construction" in result.message


def test_a_failure_case_that_does_not_fail_is_reported() -> None:
    case = FailureCase(code="TQX_RUNTIME_TIMEOUT", factory=EchoRuntime)
    result = run_check("failure.projection", EchoRuntime, failures=[case])
    assert result.status is CheckStatus.FAILED
    assert "did not fail" in result.message


def test_a_failure_case_with_the_wrong_code_is_reported() -> None:
    case = FailureCase(
        code="TQX_RUNTIME_TIMEOUT",
        factory=functools.partial(EchoRuntime, fail_with=RuntimeFailureCode.PERMANENT),
    )
    result = run_check("failure.projection", EchoRuntime, failures=[case])
    assert result.status is CheckStatus.FAILED
    assert "expected 'TQX_RUNTIME_TIMEOUT'" in result.message


# --- adapters broken in other ways -------------------------------------------------------------


class BadDescriptor(EchoRuntime):
    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="has space", version="", capabilities=["structured_output", "text", "text"]
        )


class WrongOutputFingerprint(EchoRuntime):
    def _receipt(self, request: ExecutionRequest, output: Any) -> ExecutionReceipt:
        receipt = super()._receipt(request, output)
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=fingerprint({"wrapped": output}),
            output=output,
            output_schema_valid=receipt.output_schema_valid,
        )


class UnstableRequestFingerprint(EchoRuntime):
    _calls = 0

    def _receipt(self, request: ExecutionRequest, output: Any) -> ExecutionReceipt:
        receipt = super()._receipt(request, output)
        UnstableRequestFingerprint._calls += 1
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=fingerprint(UnstableRequestFingerprint._calls),
            output_fingerprint=receipt.output_fingerprint,
            output=output,
            output_schema_valid=receipt.output_schema_valid,
        )


class RefusesText(EchoRuntime):
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        if "text" in request.interaction.required_capabilities:
            raise UnsupportedError("text output")
        return super().execute(request)


class LateEvents(EchoRuntime):
    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        receipt = super().execute_streaming(request, sink, cancel=cancel)
        threading.Timer(0.01, lambda: sink(Delta(text="late"))).start()
        return receipt


class Hangs(EchoRuntime):
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        time.sleep(1.0)
        return super().execute(request)


class NotThreadSafe(EchoRuntime):
    def __init__(self) -> None:
        super().__init__()
        self._current: Any = None

    def _receipt(self, request: ExecutionRequest, output: Any) -> ExecutionReceipt:
        self._current = []
        time.sleep(0.01)
        self._current.append(output)
        return super()._receipt(request, list(self._current))


class RaisesKeyError(EchoRuntime):
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise KeyError("fixture_output")


class StreamsDefault(RuntimeAdapter):
    """A default-streaming adapter whose execute is fine."""

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="plain", version="1", capabilities=["structured_output"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        receipt = EchoRuntime().execute(request)
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=receipt.output_fingerprint,
            output=receipt.output,
            output_schema_valid=receipt.output_schema_valid,
        )


@pytest.mark.parametrize(
    ("adapter", "check", "phrase"),
    [
        (BadDescriptor, "descriptor.well_formed", 'capabilities list ["text"] more than once'),
        (WrongOutputFingerprint, "receipt.output_fingerprint", "fingerprint(output) is"),
        (UnstableRequestFingerprint, "receipt.request_fingerprint", "repeated call"),
        (RefusesText, "descriptor.capabilities_honest", "UnsupportedError [TQX_UNSUPPORTED]"),
        (LateEvents, "streaming.event_order", "after execute_streaming had ended"),
        (NotThreadSafe, "concurrency.parallel_execute", "differs from the first"),
        (RaisesKeyError, "receipt.well_formed", "raised KeyError"),
    ],
)
def test_other_broken_adapters_fail_their_check(
    adapter: type[RuntimeAdapter], check: str, phrase: str
) -> None:
    result = run_check(check, adapter)
    assert result.status is CheckStatus.FAILED
    assert phrase in result.message


def test_a_hanging_adapter_fails_instead_of_hanging_the_kit() -> None:
    start = time.monotonic()
    result = run_check("receipt.output_fingerprint", AdapterTarget(factory=Hangs, call_timeout=0.2))
    assert result.status is CheckStatus.FAILED
    assert "still running after 0.2 s" in result.message
    assert time.monotonic() - start < 1.0


def test_a_default_streaming_adapter_gets_the_default_projection_check() -> None:
    report = run_conformance(StreamsDefault)
    statuses = {check.name: check.status for check in report.checks}
    assert report.ok
    assert statuses["streaming.default_projection"] is CheckStatus.PASSED
    assert statuses["cancellation.token"] is CheckStatus.NOT_APPLICABLE


def test_a_factory_that_raises_or_returns_something_else_is_named() -> None:
    def boom() -> RuntimeAdapter:
        raise RuntimeError("no credentials")

    raised = run_check("descriptor.well_formed", boom)
    assert raised.status is CheckStatus.FAILED
    assert "the adapter factory must return a ready adapter" in raised.message
    wrong = run_check("descriptor.well_formed", lambda: object())
    assert "must return a templiqx_ports.RuntimeAdapter, got object" in wrong.message


def test_an_adapter_declaring_nothing_the_kit_can_send_is_reported() -> None:
    class Exotic(StreamsDefault):
        def descriptor(self) -> AdapterDescriptor:
            return AdapterDescriptor(id="exotic", version="1", capabilities=["vision"])

    result = run_check("receipt.output_fingerprint", Exotic)
    assert "declare a capability the kit can exercise" in result.message


def test_unknown_checks_and_transports_are_refused() -> None:
    with pytest.raises(TargetError, match="no check called"):
        run_check("nope", EchoRuntime)
    with pytest.raises(TargetError, match="unknown check"):
        run_conformance(EchoRuntime, checks=["nope"])
    with pytest.raises(TargetError, match="unknown transport"):
        AdapterTarget(factory=EchoRuntime, transport="grpc")


def test_a_run_can_be_restricted_to_named_checks() -> None:
    report = run_conformance(EchoRuntime, checks=["receipt.output_fingerprint"])
    assert [check.name for check in report.checks] == ["receipt.output_fingerprint"]


def test_failure_cases_given_beside_a_target_are_added() -> None:
    bare = AdapterTarget(factory=EchoRuntime)
    report = run_conformance(bare, failures=failure_cases(), checks=["failure.projection"])
    assert report.checks[0].status is CheckStatus.PASSED


def test_complete_events_are_compared_field_by_field() -> None:
    class Relabels(EchoRuntime):
        def execute_streaming(
            self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
        ) -> ExecutionReceipt:
            def forward(event: Any) -> None:
                if isinstance(event, Complete):
                    event = Complete.of(
                        ExecutionReceipt(
                            adapter=event.adapter,
                            request_fingerprint=event.request_fingerprint,
                            output_fingerprint=event.output_fingerprint,
                            output=event.output,
                            output_schema_valid=not event.output_schema_valid,
                        )
                    )
                sink(event)

            return super().execute_streaming(request, forward, cancel=cancel)

    result = run_check("streaming.complete_matches_execute", Relabels)
    assert result.status is CheckStatus.FAILED
    assert "output_schema_valid: execute true != Complete false" in result.message


# --- checks that need no author input ----------------------------------------------------------


class FirstLookOnly:
    """A token that tells the truth the first time it is asked, and "not set" ever after."""

    def __init__(self, token: CancelToken) -> None:
        self.token, self.asked = token, False

    def is_set(self) -> bool:
        first, self.asked = not self.asked, True
        return first and self.token.is_set()


class CancelOnlyAtStart(EchoRuntime):
    """Bug: the token is looked at before the first delta, never again."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        looked = FirstLookOnly(cancel) if cancel is not None else None
        return super().execute_streaming(request, sink, cancel=looked)


class DropsFirstDelta(EchoRuntime):
    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        seen: list[Any] = []

        def forward(event: Any) -> None:
            if isinstance(event, Delta) and not seen:
                seen.append(event)
                return
            sink(event)

        return super().execute_streaming(request, forward, cancel=cancel)


def test_a_token_set_at_the_first_delta_must_end_the_stream() -> None:
    result = run_check("cancellation.token", CancelOnlyAtStart)
    assert result.status is CheckStatus.FAILED
    assert "token set by the sink at the first delta (structured-valid): the stream ended in" in (
        result.message
    )
    assert "token set before the call" not in result.message


def test_deltas_must_join_to_the_output_in_fixture_mode_too() -> None:
    result = run_check("streaming.deltas_match_output", DropsFirstDelta)
    assert result.status is CheckStatus.FAILED
    assert 'structured-valid: the Delta texts join to "\\"conformant' in result.message


class KeyedEcho(EchoRuntime):
    """Holds a credential; with ``leak`` its failures name it."""

    def __init__(self, *, api_key: str, leak: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self._key, self._leak = api_key, leak

    def _failure(self, code: RuntimeFailureCode, detail: str) -> Any:
        return super()._failure(code, f"{detail} (key {self._key})" if self._leak else detail)


@pytest.mark.parametrize("leak", [False, True])
def test_declared_secrets_are_looked_for_in_every_failure(leak: bool) -> None:
    secret = "sk-declared-7c1e55"
    case = FailureCase(
        code="TQX_RUNTIME_TIMEOUT",
        factory=functools.partial(
            KeyedEcho, api_key=secret, leak=leak, fail_with=RuntimeFailureCode.TIMEOUT
        ),
    )
    target = AdapterTarget(
        factory=functools.partial(KeyedEcho, api_key=secret, leak=leak),
        failures=[case],
        secrets=[secret],
    )
    result = run_check("secrets.not_exposed", target)
    if not leak:
        assert result.status is CheckStatus.PASSED, result.message
        return
    assert result.status is CheckStatus.FAILED
    assert "TQX_RUNTIME_TIMEOUT via execute: declared secret #1 (18 characters) appears in" in (
        result.message
    )
    assert secret not in result.message


def test_a_factory_taking_api_key_receives_the_marker_credential() -> None:
    received: list[str] = []

    def factory(api_key: str) -> EchoRuntime:
        received.append(api_key)
        return EchoRuntime()

    assert run_check("secrets.not_exposed", factory).status is CheckStatus.PASSED
    assert set(received) == {KIT_SECRET}


class TextOnlyAlwaysValid(EchoRuntime):
    """Bug, in a text-only adapter: output_schema_valid is always true."""

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="acme-echo", version="1.0.0", capabilities=["text"])

    def _receipt(self, request: ExecutionRequest, output: Any) -> ExecutionReceipt:
        receipt = super()._receipt(request, output)
        return ExecutionReceipt(
            adapter=receipt.adapter,
            request_fingerprint=receipt.request_fingerprint,
            output_fingerprint=receipt.output_fingerprint,
            output=receipt.output,
            output_schema_valid=True,
        )


def test_a_text_only_adapter_is_judged_on_an_invalid_text_too() -> None:
    result = run_check("receipt.output_schema_valid", TextOnlyAlwaysValid)
    assert result.status is CheckStatus.FAILED
    assert (
        'text-invalid via execute: the adapter claims output_schema_valid=True but output "maybe"'
        in (result.message)
    )


class IgnoresFixtures(EchoRuntime):
    """Always answers the same valid output, whatever the request's fixture says."""

    def _answer(self, request: ExecutionRequest) -> Any:
        if "structured_output" in request.interaction.required_capabilities:
            return {"note": "fixed", "ok": True}
        return "yes"


def test_a_validity_check_that_never_saw_an_invalid_output_is_not_a_pass() -> None:
    result = run_check("receipt.output_schema_valid", IgnoresFixtures)
    assert result.status is CheckStatus.NOT_APPLICABLE
    assert result.message.startswith("not exercised: the kit asked for outputs that break")
    assert "structured-invalid, text-invalid" in result.message
