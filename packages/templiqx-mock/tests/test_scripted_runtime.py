"""§2.7 to §2.9: ScriptedRuntime constructors, state, execute and thread safety."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from templiqx_contracts import AdapterDescriptor, ExecutionRequest, fingerprint
from templiqx_mock import (
    RuntimeStats,
    ScenarioError,
    ScenarioManifest,
    ScriptedFailure,
    ScriptedRuntime,
    ScriptedSuccess,
    VirtualClock,
)
from templiqx_ports import (
    InvalidDataError,
    RuntimeAdapter,
    RuntimeFailureCode,
    RuntimeFailureError,
)

Data = dict[str, Any]
MakeRequest = Callable[..., ExecutionRequest]

RR = {"id": "rr", "kind": "request_received"}


def test_descriptor_and_port() -> None:
    runtime = ScriptedRuntime.success()
    assert isinstance(runtime, RuntimeAdapter)
    assert runtime.descriptor() == AdapterDescriptor(
        id="templiqx-scripted-runtime", version="0.2.0", capabilities=["structured_output"]
    )
    runtime.descriptor().capabilities.append("mutated")
    assert runtime.descriptor().capabilities == ["structured_output"]
    assert runtime.stats() == RuntimeStats(attempts=0, elapsed_ms=0)


def test_success_uses_fixture_output_or_null(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.success()
    receipt = runtime.execute(make_request({"ok": True}))
    assert receipt.output == {"ok": True}
    assert receipt.output_schema_valid is True
    assert receipt.request_fingerprint == fingerprint(make_request().interaction)
    # The queue is empty now: later calls still succeed. Validity is computed against the
    # request's schema ({"type": "object"}), so a null output is reported invalid.
    second = runtime.execute(make_request())
    assert second.output is None
    assert second.output_fingerprint == fingerprint(None)
    assert second.output_schema_valid is False
    assert runtime.stats().attempts == 2


def test_request_fingerprint_ignores_fixture_output(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.success()
    a = runtime.execute(make_request({"a": 1}))
    b = runtime.execute(make_request({"b": 2}))
    assert a.request_fingerprint == b.request_fingerprint
    assert a.output_fingerprint != b.output_fingerprint
    # known before the call too (batch runs key requests by it, issue #31)
    assert runtime.request_fingerprint(make_request({"c": 3})) == a.request_fingerprint
    assert runtime.stats().attempts == 2


def test_failure_is_single_shot(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.failure("flaky", RuntimeFailureCode.UNAVAILABLE)
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute(make_request())
    failure = caught.value.failure
    assert failure.code is RuntimeFailureCode.UNAVAILABLE
    assert failure.scenario_id == "flaky"
    assert failure.retry_after_ms is None
    assert failure.retryable
    assert caught.value.code == "TQX_RUNTIME_UNAVAILABLE"
    assert (
        str(caught.value)
        == "runtime failure TQX_RUNTIME_UNAVAILABLE: scripted runtime failure: flaky"
    )
    assert runtime.execute(make_request({"x": 1})).output == {"x": 1}
    assert runtime.stats().attempts == 2


def test_rate_limit_gets_a_retry_hint(make_request: MakeRequest) -> None:
    with pytest.raises(RuntimeFailureError) as caught:
        ScriptedRuntime.failure("busy", "TQX_RUNTIME_RATE_LIMITED").execute(make_request())
    assert caught.value.failure.retry_after_ms == 1500
    assert "retry_after_ms=1500" in caught.value.failure.help_text()


@pytest.mark.parametrize(
    "code",
    [
        RuntimeFailureCode.TIMEOUT,
        RuntimeFailureCode.RATE_LIMITED,
        RuntimeFailureCode.UNAVAILABLE,
        RuntimeFailureCode.INVALID_RESPONSE,
        RuntimeFailureCode.PERMANENT,
        RuntimeFailureCode.HOST_RETRY_EXHAUSTED,
    ],
)
def test_runtime_failures_are_deterministic_and_payload_free(
    code: RuntimeFailureCode, make_request: MakeRequest
) -> None:
    """crm3_failures.rs at the port level: one attempt, stable help, identical on a rerun."""
    failures = []
    for _ in range(2):
        runtime = ScriptedRuntime.failure(code.value, code)
        secret_request = make_request({"secret": "payload-text"})
        with pytest.raises(RuntimeFailureError) as caught:
            runtime.execute(secret_request)
        assert runtime.stats().attempts == 1
        help_text = caught.value.failure.help_text()
        assert "adapter=templiqx-scripted-runtime" in help_text.split()
        assert any(token.startswith("fingerprint=") for token in help_text.split())
        assert "payload-text" not in help_text
        assert "payload-text" not in str(caught.value)
        failures.append(caught.value.failure)
    assert failures[0] == failures[1]
    assert failures[0].retryable is code.retryable


def test_sequence_replays_in_order(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.sequence(
        [
            ScriptedFailure.of("first", RuntimeFailureCode.TIMEOUT),
            ScriptedSuccess(),
            ScriptedFailure(
                id="third",
                code=RuntimeFailureCode.PERMANENT,
                detail="custom detail",
                retry_after_ms=42,
            ),
        ]
    )
    with pytest.raises(RuntimeFailureError, match="TQX_RUNTIME_TIMEOUT"):
        runtime.execute(make_request())
    assert runtime.execute(make_request({"n": 2})).output == {"n": 2}
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute(make_request())
    assert caught.value.failure.detail == "custom detail"
    assert caught.value.failure.retry_after_ms == 42
    assert runtime.execute(make_request({"n": 4})).output_schema_valid is True
    assert runtime.stats().attempts == 4


def test_scripted_scenarios_know_retryability() -> None:
    assert not ScriptedSuccess().retryable
    assert ScriptedFailure.of("t", RuntimeFailureCode.TIMEOUT).retryable
    assert ScriptedFailure.of("r", RuntimeFailureCode.RATE_LIMITED).retryable
    assert ScriptedFailure.of("u", RuntimeFailureCode.UNAVAILABLE).retryable
    for code in (
        "TQX_RUNTIME_INVALID_RESPONSE",
        "TQX_RUNTIME_PERMANENT",
        "TQX_HOST_RETRY_EXHAUSTED",
    ):
        assert not ScriptedFailure.of("x", code).retryable
    with pytest.raises(ValueError, match="TQX_NOPE"):
        ScriptedFailure.of("x", "TQX_NOPE")


def test_virtual_clock_saturates() -> None:
    clock = VirtualClock()
    assert clock.now_ms == 0
    clock.advance(25)
    assert clock.now_ms == 25
    clock.advance(1 << 64)
    assert clock.now_ms == (1 << 64) - 1
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)


# --- manifests ------------------------------------------------------------------------------


def test_steps_replay_from_the_top_and_accumulate_time(
    steps_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    manifest = parse(
        steps_manifest(
            steps=[
                RR,
                {"id": "d1", "kind": "delay", "delay_ms": 10},
                {"id": "d2", "kind": "delay", "delay_ms": 15},
                {"id": "ok", "kind": "runtime_success", "output": {"fixed": 1}},
            ]
        )
    )
    runtime = ScriptedRuntime.from_manifest(manifest)
    first = runtime.execute(make_request({"ignored": True}))
    second = runtime.execute(make_request())
    assert first == second
    assert first.output == {"fixed": 1}
    assert first.output_schema_valid is True
    assert runtime.stats() == RuntimeStats(attempts=2, elapsed_ms=50)


def test_step_output_precedence(
    steps_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    manifest = parse(
        steps_manifest(
            steps=[RR, {"id": "ok", "kind": "runtime_success", "output_schema_valid": False}]
        )
    )
    runtime = ScriptedRuntime.from_manifest(manifest)
    assert runtime.execute(make_request({"from": "fixture"})).output == {"from": "fixture"}
    receipt = runtime.execute(make_request())
    assert receipt.output is None
    assert receipt.output_schema_valid is False
    fallback = ScriptedRuntime.from_manifest(manifest, fallback_output={"from": "file"})
    assert fallback.execute(make_request()).output == {"from": "file"}
    assert fallback.execute(make_request({"from": "fixture"})).output == {"from": "fixture"}


def test_step_failures_repeat_on_every_call(
    steps_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    failure = {"code": "TQX_RUNTIME_RATE_LIMITED", "detail": "slow down", "retry_after_ms": 250}
    manifest = parse(
        steps_manifest(steps=[RR, {"id": "limit", "kind": "runtime_failure", "failure": failure}])
    )
    runtime = ScriptedRuntime.from_manifest(manifest)
    seen = []
    for _ in range(3):
        with pytest.raises(RuntimeFailureError) as caught:
            runtime.execute(make_request())
        seen.append(caught.value.failure)
    assert seen[0] == seen[1] == seen[2]
    assert seen[0].retry_after_ms == 250
    assert seen[0].scenario_id == "limit"
    assert seen[0].fingerprint == fingerprint(
        {"id": "limit", "code": "TQX_RUNTIME_RATE_LIMITED", "retry_after_ms": 250}
    )
    assert runtime.stats().attempts == 3


def test_stream_events_aggregate_deterministically_through_sync_adapter(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    manifest = parse(
        stream_manifest(
            [
                {"kind": "start", "id": "s"},
                {"kind": "delta", "id": "a", "text": "a"},
                {"kind": "delta", "id": "b", "text": "b"},
                {"kind": "end", "id": "e"},
                {"kind": "finish", "id": "f"},
            ]
        )
    )
    runtime = ScriptedRuntime.from_manifest(manifest)
    first = runtime.execute(make_request())
    second = runtime.execute(make_request())
    assert first == second
    assert first.output["text"] == "ab"
    assert first.output == {
        "text": "ab",
        "reasoning": "",
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    assert (
        first.output_fingerprint
        == "ce533ba7fbccd728ef2ff3705e916ee0fbe47997fd7b7b8a94833da8d083b13e"
    )
    # The finish omits its flag: computed against {"type": "object"} (the reference said false).
    assert first.output_schema_valid is True
    strict = make_request(output_schema={"type": "object", "required": ["answer"]})
    assert runtime.execute(strict).output_schema_valid is False
    assert runtime.stats() == RuntimeStats(attempts=3, elapsed_ms=0)


def test_events_synthesize_text_reasoning_and_usage(
    stream_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    events = [
        {"kind": "start", "id": "s"},
        {"kind": "reasoning", "id": "r1", "text": "think "},
        {"kind": "delta", "id": "d1", "text": "Hello"},
        {"kind": "usage", "id": "u1", "input_tokens": 10, "output_tokens": 1},
        {"kind": "reasoning", "id": "r2", "text": "more"},
        {"kind": "delta", "id": "d2", "text": ", world"},
        {"kind": "usage", "id": "u2", "input_tokens": 5, "output_tokens": 2},
        {"kind": "end", "id": "e"},
        {"kind": "finish", "id": "f", "output_schema_valid": True},
    ]
    runtime = ScriptedRuntime.from_manifest(parse(stream_manifest(events)))
    receipt = runtime.execute(make_request())
    assert receipt.output == {
        "text": "Hello, world",
        "reasoning": "think more",
        "usage": {"input_tokens": 15, "output_tokens": 3},
    }
    assert receipt.output_schema_valid is True
    assert runtime.execute(make_request({"fixture": 1})).output == {"fixture": 1}
    events[-1] = {"kind": "finish", "id": "f", "output": {"final": True}}
    finished = ScriptedRuntime.from_manifest(parse(stream_manifest(events)))
    final = finished.execute(make_request({"fixture": 1}))
    assert final.output == {"final": True}
    assert final.output_schema_valid is True  # computed: the finish omits its flag
    array_schema = make_request({"fixture": 1}, output_schema={"type": "array"})
    assert finished.execute(array_schema).output_schema_valid is False


def test_from_manifest_validates_and_copies(
    steps_manifest: Callable[..., Data], parse: Any, make_request: MakeRequest
) -> None:
    manifest = parse(
        steps_manifest(steps=[RR, {"id": "ok", "kind": "runtime_success", "output": {"v": 1}}])
    )
    runtime = ScriptedRuntime.from_manifest(manifest)
    manifest.steps[1].output["v"] = 2
    manifest.steps.clear()
    receipt = runtime.execute(make_request())
    assert receipt.output == {"v": 1}
    receipt.output["v"] = 3
    assert runtime.execute(make_request()).output == {"v": 1}
    with pytest.raises(ScenarioError, match="exactly one non-empty steps or events"):
        ScriptedRuntime.from_manifest(manifest)


def test_programmatic_manifest_with_both_sequences_is_refused(
    steps_manifest: Callable[..., Data], parse: Any
) -> None:
    manifest: ScenarioManifest = parse(steps_manifest())
    manifest.events = []
    with pytest.raises(ScenarioError):
        ScriptedRuntime.from_manifest(manifest)


def test_unfingerprintable_output_is_invalid_data(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.success()
    with pytest.raises(InvalidDataError) as caught:
        runtime.execute(make_request({"x": float("nan")}))
    assert caught.value.code == "TQX_DATA_INVALID"
    assert "NaN" in str(caught.value)


def test_missing_terminal_step_is_invalid_data(make_request: MakeRequest) -> None:
    from templiqx_mock.scenario import ScenarioStep, ScenarioStepKind

    runtime = ScriptedRuntime(steps=[ScenarioStep(id="rr", kind=ScenarioStepKind.REQUEST_RECEIVED)])
    with pytest.raises(InvalidDataError) as caught:
        runtime.execute(make_request())
    assert str(caught.value) == "invalid data: mock scenario has no terminal step"


def test_negative_pace_is_refused() -> None:
    with pytest.raises(ValueError, match="pace_ms"):
        ScriptedRuntime.success(pace_ms=-1)


# --- thread safety --------------------------------------------------------------------------


def _hammer(threads: int, calls: int, work: Callable[[], None]) -> None:
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def run() -> None:
        barrier.wait()
        for _ in range(calls):
            try:
                work()
            except BaseException as exc:  # collected, re-raised by the test
                errors.append(exc)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def test_concurrent_executes_count_attempts_and_time_exactly(
    crm3: Any, make_request: MakeRequest
) -> None:
    manifest = ScenarioManifest.load(crm3 / "scenarios" / "intake-document-01" / "manifest.json")
    runtime = ScriptedRuntime.from_manifest(manifest)
    request = make_request({"ok": True})

    def call() -> None:
        runtime.execute(request)

    _hammer(8, 50, call)
    assert runtime.stats() == RuntimeStats(attempts=400, elapsed_ms=400 * 25)


def test_concurrent_calls_consume_the_script_exactly_once(make_request: MakeRequest) -> None:
    runtime = ScriptedRuntime.sequence(
        [ScriptedFailure.of(f"f{i}", RuntimeFailureCode.TIMEOUT) for i in range(100)]
    )
    request = make_request()
    lock = threading.Lock()
    failed: list[str] = []
    succeeded: list[int] = []

    def call() -> None:
        try:
            runtime.execute(request)
        except RuntimeFailureError as error:
            with lock:
                failed.append(error.failure.scenario_id or "")
        else:
            with lock:
                succeeded.append(1)

    _hammer(8, 25, call)
    assert sorted(failed) == sorted(f"f{i}" for i in range(100))
    assert len(succeeded) == 100
    assert runtime.stats().attempts == 200
