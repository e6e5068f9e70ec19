"""The batch engine (issue #31): service.batch / abatch over in-process scripted runtimes.

Pacing (AIMD on rate limits, retry-after, budgets, bounded retries), dedupe by request
fingerprint, the result cache and ledger seams, cancellation, the per-row hook, evals at scale.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import TempliqxService
from templiqx_application.batch import (
    BatchOptions,
    BatchResult,
    BatchRow,
    CachedAnswer,
    RetryPolicy,
    RowError,
    as_row,
)
from templiqx_contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    Usage,
    fingerprint,
)
from templiqx_ports import (
    AsyncRuntimeAdapter,
    PermanentFailureError,
    RateLimitedError,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    RuntimeUnavailableError,
    report_usage,
)

ServiceFactory = Callable[..., TempliqxService]

CONTRACT = """\
api_version: templiqx/v1alpha1
id: label
version: 1.0.0
inputs:
  text: {schema: {type: string, minLength: 1}, required: true}
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: "Label: "}
      - {kind: interpolate, expression: {kind: ref, path: inputs.text}}
output_schema:
  type: object
  required: [label]
  properties: {label: {type: string}}
"""


def _failure(code: RuntimeFailureCode, retry_after_ms: int | None = None) -> RuntimeFailure:
    return RuntimeFailure(
        code=code,
        adapter_id="scripted",
        adapter_version="1",
        fingerprint="f" * 64,
        detail="scripted failure",
        retry_after_ms=retry_after_ms,
    )


class Scripted(RuntimeAdapter, AsyncRuntimeAdapter):
    """An async runtime answering ``{"label": <text>}`` after ``latency`` seconds.

    ``cap``: calls beyond this many at once are rate limited (with ``retry_after_ms``);
    ``fail``: text -> list of failures to raise, one per call, before answering.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        cap: int | None = None,
        retry_after_ms: int | None = None,
        fail: dict[str, list[RuntimeFailureCode]] | None = None,
        predicts: bool = True,
    ) -> None:
        self.latency = latency
        self.cap = cap
        self.retry_after_ms = retry_after_ms
        self.fail = {key: list(value) for key, value in (fail or {}).items()}
        self.predicts = predicts
        self.calls: list[tuple[float, str]] = []
        self.in_flight = 0
        self.peak = 0
        self.accepted_peak = 0
        self.seen_context: list[Any] = []

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="scripted", version="1", capabilities=["structured_output"])

    def request_fingerprint(self, request: ExecutionRequest) -> str | None:
        return fingerprint(request.interaction) if self.predicts else None

    @staticmethod
    def _text(request: ExecutionRequest) -> str:
        return str(request.interaction.messages[-1].content).removeprefix("Label: ")

    def _receipt(self, request: ExecutionRequest) -> ExecutionReceipt:
        output = {"label": self._text(request)}
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._receipt(request)  # the single calls compared with; the engine awaits

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        text = self._text(request)
        self.calls.append((time.monotonic(), text))
        self.seen_context.append(ROW.get())
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.cap is not None and self.in_flight > self.cap:
                raise RuntimeFailureError(
                    _failure(RuntimeFailureCode.RATE_LIMITED, self.retry_after_ms)
                )
            planned = self.fail.get(text)
            if planned:
                raise RuntimeFailureError(_failure(planned.pop(0)))
            self.accepted_peak = max(self.accepted_peak, self.in_flight)
            if self.latency:
                await asyncio.sleep(self.latency)
            report_usage(Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12))
            return self._receipt(request)
        finally:
            self.in_flight -= 1


ROW: contextvars.ContextVar[int | None] = contextvars.ContextVar("row", default=None)


@pytest.fixture
def root(tmp_path: Path, write_pkg: Callable[..., Path]) -> Path:
    packages = tmp_path / "packages"
    write_pkg(packages, "app", contracts={"label": CONTRACT})
    return packages


def rows(texts: list[str]) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "inputs": {"text": text}} for i, text in enumerate(texts)]


def run_all(service: TempliqxService, given: Any, **options: Any) -> tuple[list[BatchResult], Any]:
    with service.batch("app", "label", given, **options) as run:
        results = list(run)
    return sorted(results, key=lambda r: r.index), run


FAST = RetryPolicy(max_attempts=4, initial_s=0.01, max_s=0.05)


def test_each_row_is_the_execute_contract_of_its_inputs(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted()
    service = make_service(root, runtime)
    results, run = run_all(service, rows(["a", "b", "c"]))
    assert [r.index for r in results] == [0, 1, 2]
    for result, text in zip(results, "abc", strict=True):
        single = service.execute_contract("app", "label", inputs={"text": text})
        assert result.ok
        assert single.ok
        assert result.output == single.result.output == {"label": text}
        assert result.request_fingerprint == single.fingerprints["request"]
        assert result.id == f"r{result.index}"
        assert result.usage == Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12)
        assert result.source == "executed"
        assert result.attempts == 1
        assert result.latency_ms is not None
        assert result.latency_ms >= 0
    summary = run.summary
    assert summary.ok
    assert summary.rows == 3
    assert summary.succeeded == 3
    assert summary.tokens is not None
    assert summary.tokens.total == 36
    assert (
        summary.package_identity
        == service.export_package_identity("app").fingerprints["package_identity"]
    )


def test_refused_rows_are_recorded_and_the_others_run(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted()
    given: list[Any] = [
        {"inputs": {"text": "ok"}},
        {"inputs": {"text": ""}},  # breaks minLength: refused before any call
        BatchRow(index=2, problem=None, inputs={"text": "fine"}, contract="other"),
    ]
    results, run = run_all(make_service(root, runtime), given)
    assert [r.ok for r in results] == [True, False, False]
    assert results[1].source == "refused"
    assert results[1].attempts == 0
    assert results[1].error_code == "TQX_VALUE_SCHEMA"
    assert results[2].error_code == "TQX_BATCH_ROW_INVALID"
    assert [text for _, text in runtime.calls] == ["ok"]
    assert run.summary.by_code == {"TQX_BATCH_ROW_INVALID": 1, "TQX_VALUE_SCHEMA": 1}
    assert run.summary.by_source == {"executed": 1, "refused": 2}


def test_identical_requests_are_executed_once(root: Path, make_service: ServiceFactory) -> None:
    runtime = Scripted(latency=0.02)
    texts = ["x", "y", "x", "x", "y", "z"]
    results, run = run_all(make_service(root, runtime), rows(texts))
    assert sorted(text for _, text in runtime.calls) == ["x", "y", "z"]
    assert [r.output for r in results] == [{"label": t} for t in texts]
    sources = [r.source for r in results]
    assert sources.count("executed") == 3
    assert sources.count("duplicate") == 3
    first_x = results[0].request_fingerprint
    assert results[2].request_fingerprint == results[3].request_fingerprint == first_x
    assert run.summary.calls == 3


def test_a_runtime_that_cannot_predict_its_fingerprint_still_dedupes(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted(predicts=False)
    results, _ = run_all(make_service(root, runtime), rows(["x", "x"]))
    assert len(runtime.calls) == 1
    assert results[0].request_fingerprint == results[1].request_fingerprint is not None


def test_rate_limits_halve_the_concurrency_and_every_row_finishes(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted(latency=0.03, cap=4, retry_after_ms=20)
    texts = [f"t{i}" for i in range(60)]
    options = BatchOptions(concurrency=16, retry=RetryPolicy(max_attempts=30, initial_s=0.01))
    results, run = run_all(make_service(root, runtime), rows(texts), options=options)
    assert all(r.ok for r in results), [r.diagnostics for r in results if not r.ok]
    summary = run.summary
    assert summary.rate_limited > 0
    assert summary.retries >= summary.rate_limited
    assert summary.concurrency["decreases"] >= 1
    assert summary.concurrency["lowest"] <= 8  # halved at least once from 16
    assert runtime.accepted_peak <= 4
    retried = [r for r in results if r.attempts > 1]
    assert retried
    assert all(r.source == "executed" for r in retried)


def test_retry_after_pauses_new_calls_until_it_has_passed(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted(fail={"first": [RuntimeFailureCode.RATE_LIMITED]})
    runtime.fail["first"] = []  # replaced below by a hint-carrying failure

    class Hinted(Scripted):
        rejected = False

        async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
            if self._text(request) == "first" and not self.rejected:
                self.rejected = True
                self.calls.append((time.monotonic(), "first"))
                raise RateLimitedError(_failure(RuntimeFailureCode.RATE_LIMITED, 400))
            return await super().aexecute(request)

    hinted = Hinted()
    options = BatchOptions(concurrency=1, retry=FAST)
    results, run = run_all(
        make_service(root, hinted), rows(["first", "second", "third"]), options=options
    )
    assert all(r.ok for r in results)
    rejected_at = hinted.calls[0][0]
    later = [at for at, _ in hinted.calls[1:]]
    assert min(later) - rejected_at >= 0.39  # nothing started during the 400 ms pause
    assert results[0].attempts == 2
    assert run.summary.rate_limited == 1


def test_transient_failures_are_retried_a_bounded_number_of_times(
    root: Path, make_service: ServiceFactory
) -> None:
    unavailable = RuntimeFailureCode.UNAVAILABLE
    runtime = Scripted(fail={"flaky": [unavailable, unavailable], "down": [unavailable] * 10})
    options = BatchOptions(retry=RetryPolicy(max_attempts=3, initial_s=0.01, max_s=0.02))
    results, run = run_all(make_service(root, runtime), rows(["flaky", "down"]), options=options)
    flaky, down = results
    assert flaky.ok
    assert flaky.attempts == 3
    assert not down.ok
    assert down.attempts == 3
    assert [d.code for d in down.diagnostics] == [
        "TQX_HOST_RETRY_EXHAUSTED",
        "TQX_RUNTIME_UNAVAILABLE",
    ]
    assert run.summary.by_code == {"TQX_HOST_RETRY_EXHAUSTED": 1}
    assert [text for _, text in runtime.calls].count("down") == 3


def test_permanent_failures_are_recorded_and_never_retried(
    root: Path, make_service: ServiceFactory
) -> None:
    permanent = RuntimeFailureCode.PERMANENT
    invalid = RuntimeFailureCode.INVALID_RESPONSE
    runtime = Scripted(fail={"no": [permanent] * 5, "bad": [invalid] * 5})
    results, run = run_all(make_service(root, runtime), rows(["no", "bad", "no"]))
    assert [r.error_code for r in results] == [
        "TQX_RUNTIME_PERMANENT",
        "TQX_RUNTIME_INVALID_RESPONSE",
        "TQX_RUNTIME_PERMANENT",
    ]
    assert [text for _, text in runtime.calls] == ["no", "bad"] or sorted(
        text for _, text in runtime.calls
    ) == ["bad", "no"]
    assert results[0].attempts == 1
    assert results[2].source == "duplicate"
    assert run.summary.retries == 0


def test_exceptions_classify_as_the_port_says() -> None:
    assert RetryPolicy.retryable(RuntimeUnavailableError(_failure(RuntimeFailureCode.UNAVAILABLE)))
    assert not RetryPolicy.retryable(PermanentFailureError(_failure(RuntimeFailureCode.PERMANENT)))
    assert not RetryPolicy.retryable(ValueError("bug"))


def test_a_request_budget_spaces_the_calls(root: Path, make_service: ServiceFactory) -> None:
    runtime = Scripted()
    started = time.monotonic()
    results, _ = run_all(
        make_service(root, runtime),
        rows([f"t{i}" for i in range(30)]),
        requests_per_minute=1200,  # 20 a second, at most one second's worth at once
    )
    elapsed = time.monotonic() - started
    assert all(r.ok for r in results)
    assert elapsed >= 0.45  # 30 calls at 20/s with a burst of 20: at least (30-20)/20 s
    stamps = sorted(at for at, _ in runtime.calls)
    for i, at in enumerate(stamps):  # never more than 20 + 21 in any one-second window
        assert sum(1 for other in stamps[i:] if other - at < 1.0) <= 41


def test_a_token_budget_spaces_the_calls(root: Path, make_service: ServiceFactory) -> None:
    runtime = Scripted()
    started = time.monotonic()
    results, _ = run_all(
        make_service(root, runtime), rows([f"t{i}" for i in range(8)]), tokens_per_minute=600
    )
    assert all(r.ok for r in results)
    # ~12 tokens a call reported, 10 a second refilled: 8 calls need most of a second or more
    assert time.monotonic() - started >= 0.5


class DictCache:
    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], CachedAnswer] = {}

    def get(self, scope: str, key: str) -> CachedAnswer | None:
        return self.answers.get((scope, key))

    def put(self, scope: str, key: str, answer: CachedAnswer) -> None:
        self.answers[(scope, key)] = answer


def test_the_cache_reruns_only_the_requests_that_changed(
    root: Path, make_service: ServiceFactory
) -> None:
    cache = DictCache()
    first = Scripted()
    results, _ = run_all(make_service(root, first), rows(["a", "b", "c"]), cache=cache)
    assert len(first.calls) == 3
    assert len(cache.answers) == 3
    second = Scripted()
    again, run = run_all(make_service(root, second), rows(["a", "B", "c"]), cache=cache)
    assert [text for _, text in second.calls] == ["B"]
    assert [r.source for r in again] == ["cache", "executed", "cache"]
    assert again[0].output == results[0].output
    assert again[0].request_fingerprint == results[0].request_fingerprint
    assert run.summary.calls == 1
    assert run.summary.by_source == {"cache": 2, "executed": 1}


def test_rows_stream_through_a_bounded_window(root: Path, make_service: ServiceFactory) -> None:
    pulled = 0
    runtime = Scripted()

    def source() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for i in range(3000):
            pulled += 1
            yield {"inputs": {"text": f"t{i}"}}

    options = BatchOptions(concurrency=4, window=32)
    ahead = 0
    seen = 0
    with make_service(root, runtime).batch("app", "label", source(), options=options) as run:
        for _ in run:
            seen += 1
            ahead = max(ahead, pulled - seen)
    assert seen == 3000
    assert ahead <= 32 + 64 + 64  # the window, one chunk read ahead, results being handed over


def test_cancel_stops_new_rows_and_cancels_the_calls_in_flight(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted(latency=0.2)
    run = make_service(root, runtime).batch(
        "app", "label", rows([f"t{i}" for i in range(100)]), concurrency=4
    )
    first = next(run)
    run.cancel()
    rest = list(run)
    assert first.ok
    assert len(rest) <= 8  # what had finished; the cancelled calls give no result
    assert len(runtime.calls) <= 16
    summary = run.summary
    assert summary.interrupted
    assert not summary.ok
    assert summary.rows == 1 + len(rest)


def test_a_cancel_token_stops_the_run(root: Path, make_service: ServiceFactory) -> None:
    token = threading.Event()
    runtime = Scripted(latency=0.05)
    results = []
    with make_service(root, runtime).batch(
        "app", "label", rows([f"t{i}" for i in range(200)]), concurrency=2, cancel=token
    ) as run:
        for result in run:
            results.append(result)
            if len(results) == 3:
                token.set()
    assert 3 <= len(results) < 20
    assert run.summary.interrupted


def test_the_row_hook_wraps_each_rows_calls(root: Path, make_service: ServiceFactory) -> None:
    finished: list[tuple[int, bool]] = []

    @contextlib.contextmanager
    def on_row(row: BatchRow) -> Iterator[Callable[[BatchResult], None]]:
        token = ROW.set(row.index)
        try:
            yield lambda result: finished.append((result.index, result.ok))
        finally:
            ROW.reset(token)

    runtime = Scripted(latency=0.01)
    _results, _ = run_all(make_service(root, runtime), rows(["a", "b", "c"]), on_row=on_row)
    assert sorted(finished) == [(0, True), (1, True), (2, True)]
    assert sorted(i for i in runtime.seen_context if i is not None) == [0, 1, 2]


def test_a_run_pinned_to_another_identity_is_refused(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Scripted()
    results, run = run_all(make_service(root, runtime), rows(["a"]), package_identity="0" * 64)
    assert results == []
    assert runtime.calls == []
    assert [d.code for d in run.diagnostics] == ["TQX_BATCH_IDENTITY_MISMATCH"]
    assert not run.summary.ok
    assert run.summary.diagnostics[0].code == "TQX_BATCH_IDENTITY_MISMATCH"


@pytest.mark.parametrize(
    ("package", "contract", "code"),
    [("nope", "label", "TQX_NOT_FOUND"), ("app", "nope", "TQX_NOT_FOUND")],
)
def test_a_run_that_cannot_load_is_refused(
    root: Path, make_service: ServiceFactory, package: str, contract: str, code: str
) -> None:
    run = make_service(root, Scripted()).batch(package, contract, rows(["a"]))
    assert list(run) == []
    assert [d.code for d in run.diagnostics] == [code]


def test_bad_options_are_refused(root: Path, make_service: ServiceFactory) -> None:
    run = make_service(root, Scripted()).batch(
        "app", "label", rows(["a"]), options=BatchOptions(concurrency=0, requests_per_minute=-1)
    )
    assert list(run) == []
    assert [d.code for d in run.diagnostics] == ["TQX_BATCH_OPTION_INVALID"] * 2


def test_abatch_runs_on_the_callers_loop(root: Path, make_service: ServiceFactory) -> None:
    runtime = Scripted(latency=0.01)

    async def source() -> Any:
        for text in ["a", "b", "a"]:
            yield {"inputs": {"text": text}}

    async def main() -> list[BatchResult]:
        run = make_service(root, runtime).abatch("app", "label", source(), concurrency=2)
        async with run:
            return [result async for result in run]

    results = sorted(asyncio.run(main()), key=lambda r: r.index)
    assert [r.output for r in results] == [{"label": "a"}, {"label": "b"}, {"label": "a"}]
    assert len(runtime.calls) == 2


def test_evals_at_scale_score_cases_on_the_fake(root: Path, make_service: ServiceFactory) -> None:
    runtime = Scripted()  # never called: evals run on the deterministic fake
    cases = [
        {
            "contract": "label",
            "inputs": {"text": "a"},
            "output": {"label": "x"},
            "expected": {"label": "x"},
        },
        {
            "contract": "label",
            "inputs": {"text": "b"},
            "output": {"label": "y"},
            "expected": {"label": "z"},
        },
        {"contract": "label", "inputs": {"text": "c"}, "output": {"nolabel": 1}},
        {"contract": "label", "inputs": {"text": "d"}, "output": {"label": "w"}},
    ]
    with make_service(root, runtime).test_dataset("app", cases) as run:
        results = sorted(run, key=lambda r: r.index)
    assert runtime.calls == []
    outcomes = [r.eval for r in results]
    assert [o.passed for o in outcomes if o is not None] == [True, False, False, True]
    assert results[1].eval is not None
    assert results[1].eval.mismatched == ["/label"]
    assert results[2].error_code == "TQX_OUTPUT_SCHEMA"
    score = run.summary.score
    assert score is not None
    assert (score.cases, score.passed, score.failed, score.pass_rate) == (4, 2, 2, 0.5)
    assert score.by_contract == {"label": {"passed": 2, "failed": 2}}
    assert score.fields["label"].matched == 1
    assert score.fields["label"].total == 2
    assert not run.summary.ok


def test_as_row_names_what_is_wrong() -> None:
    assert as_row({"inputs": {"a": 1}, "id": "x"}, 3) == BatchRow(index=3, inputs={"a": 1}, id="x")
    with pytest.raises(RowError, match="unknown key"):
        as_row({"text": "flat"}, 0)
    with pytest.raises(RowError, match="'inputs' must be an object"):
        as_row({"inputs": [1]}, 0)
    with pytest.raises(RowError, match="'id' must be a string"):
        as_row({"id": 5}, 0)


def test_the_fake_knows_its_request_fingerprint_before_the_call(
    root: Path, make_service: ServiceFactory
) -> None:
    from templiqx_application import DeterministicFakeRuntime

    service = make_service(root)
    envelope = service.compile_contract(
        "app", "label", inputs={"text": "x"}, capabilities=["structured_output"]
    )
    assert envelope.ok, envelope.diagnostics
    request = ExecutionRequest(interaction=envelope.result, fixture_output={"label": "x"})
    fake = DeterministicFakeRuntime()
    assert fake.request_fingerprint(request) == fake.execute(request).request_fingerprint
    assert RuntimeAdapter.request_fingerprint(Scripted(predicts=False), request) is None


class Unconfigured(Scripted):
    """A runtime whose settings are incomplete (as the OpenAI runtime without MODEL_ID)."""

    def __init__(self) -> None:
        super().__init__()
        self.warmed = 0

    def check_settings(self) -> None:
        raise PermanentFailureError(_failure(RuntimeFailureCode.PERMANENT))

    def warm_up(self) -> None:
        self.warmed += 1


class Warmed(Scripted):
    """Records when its first call's set-up ran, against its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    def check_settings(self) -> None:
        self.events.append("check")

    def warm_up(self) -> None:
        self.events.append("warm")

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.events.append("call")
        return await super().aexecute(request)


def test_a_misconfigured_runtime_refuses_the_run_once_before_any_row(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Unconfigured()
    results, run = run_all(make_service(root, runtime), rows(["a", "b", "c"]))
    assert results == []
    assert runtime.calls == []
    assert runtime.warmed == 0
    assert [d.code for d in run.diagnostics] == ["TQX_RUNTIME_PERMANENT"]
    assert not run.summary.ok
    assert run.summary.rows == 0


def test_the_runtime_is_checked_and_warmed_before_the_first_call(
    root: Path, make_service: ServiceFactory
) -> None:
    runtime = Warmed()
    results, _ = run_all(make_service(root, runtime), rows(["a", "b"]), requests_per_minute=600)
    assert all(r.ok for r in results)
    assert runtime.events == ["check", "warm", "call", "call"]


class MemoryClaims:
    """A :class:`~templiqx_application.batch.SharedLedger` for engines on one event loop (what
    templiqx-ray's claim keeper is for engines in several processes)."""

    def __init__(self) -> None:
        self.finished: dict[str, BatchResult] = {}
        self.running: dict[str, asyncio.Event] = {}
        self.owned = 0

    async def claim(self, key: str) -> BatchResult | bool:
        await asyncio.sleep(0)  # an answer from elsewhere takes a turn of the loop
        if key in self.finished:
            return self.finished[key]
        if key in self.running:
            return False
        self.running[key] = asyncio.Event()
        self.owned += 1
        return True

    async def wait(self, key: str) -> BatchResult | None:
        while key not in self.finished:
            running = self.running.get(key)
            if running is None:
                self.running[key] = asyncio.Event()
                self.owned += 1
                return None
            await running.wait()
        return self.finished[key]

    def record(self, key: str, result: BatchResult) -> None:
        self.finished[key] = result
        self.running.pop(key).set()

    def release(self, key: str) -> None:
        self.running.pop(key).set()


def test_a_shared_ledger_executes_each_request_once_across_engines(
    root: Path, make_service: ServiceFactory
) -> None:
    """Two engines (two actors' worth) over overlapping rows: every distinct request is
    executed once in all; the other rows are duplicates with its outcome."""
    claims = MemoryClaims()
    first, second = Scripted(latency=0.02), Scripted(latency=0.02)
    texts = [f"t{i % 7}" for i in range(20)]

    async def one(runtime: Scripted, given: list[dict[str, Any]]) -> list[BatchResult]:
        run = make_service(root, runtime).abatch("app", "label", given, shared=claims)
        async with run:
            return [result async for result in run]

    async def both() -> tuple[list[BatchResult], list[BatchResult]]:
        return await asyncio.gather(one(first, rows(texts[:12])), one(second, rows(texts[8:])))

    left, right = asyncio.run(both())
    called = [text for _, text in first.calls + second.calls]
    assert sorted(called) == sorted(set(texts))
    assert claims.owned == 7
    for given, results in ((texts[:12], left), (texts[8:], right)):
        assert sorted((r.index, r.ok, r.output) for r in results) == [
            (i, True, {"label": text}) for i, text in enumerate(given)
        ]
    results = left + right
    assert sum(1 for r in results if r.source == "executed") == 7
    assert sum(1 for r in results if r.source == "duplicate") == 17


def test_a_cancelled_owner_hands_its_request_to_a_waiter(
    root: Path, make_service: ServiceFactory
) -> None:
    claims = MemoryClaims()
    slow, quick = Scripted(latency=5.0), Scripted(latency=0.01)

    async def main() -> tuple[list[BatchResult], list[BatchResult]]:
        owner = make_service(root, slow).abatch("app", "label", rows(["x"]), shared=claims)
        waiter = make_service(root, quick).abatch("app", "label", rows(["x"]), shared=claims)

        async def take(run: Any) -> list[BatchResult]:
            async with run:
                return [result async for result in run]

        owning = asyncio.create_task(take(owner))
        while not slow.calls:
            await asyncio.sleep(0.01)
        waiting = asyncio.create_task(take(waiter))
        await asyncio.sleep(0.1)
        owner.cancel()
        return await owning, await asyncio.wait_for(waiting, 10)

    owned, waited = asyncio.run(main())
    assert owned == []  # cancelled: no result, a resumed run executes it
    assert [(r.ok, r.source, r.output) for r in waited] == [(True, "executed", {"label": "x"})]
    assert len(quick.calls) == 1
    assert claims.owned == 2


def test_cancel_after_the_last_row_was_read_still_ends_the_run(
    root: Path, make_service: ServiceFactory
) -> None:
    """Every row admitted, one call in flight: cancelling ends the run at once (it used to
    interrupt the wait for the last rows and never announce the end)."""
    runtime = Scripted(latency=30.0)

    async def main() -> list[BatchResult]:
        run = make_service(root, runtime).abatch("app", "label", rows(["only"]))

        async def take() -> list[BatchResult]:
            async with run:
                return [result async for result in run]

        taking = asyncio.create_task(take())
        while not runtime.calls:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        run.cancel()
        return await asyncio.wait_for(taking, 10)

    assert asyncio.run(main()) == []


def test_the_default_ledger_keeps_a_bounded_number_of_results_in_memory() -> None:
    from templiqx_application.batch import MemoryLedger

    ledger = MemoryLedger(in_memory=100)
    for i in range(5000):
        ledger.record(f"k{i}", BatchResult(index=i, ok=True, output={"n": i}, source="executed"))
    ledger.record(
        "k7", BatchResult(index=99, ok=False, source="executed")
    )  # the first result stays
    assert ledger.held == 100
    for i in (0, 7, 99, 100, 4999):
        found = ledger.finished(f"k{i}")
        assert found is not None
        assert (found.index, found.output) == (i, {"n": i})
    assert ledger.finished("k5000") is None


def test_a_run_past_the_memory_bound_still_executes_each_request_once(
    root: Path, make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from templiqx_application.batch import MemoryLedger

    monkeypatch.setattr(MemoryLedger, "IN_MEMORY", 5)
    runtime = Scripted()
    texts = [f"t{i % 40}" for i in range(120)]
    results, run = run_all(make_service(root, runtime), rows(texts), concurrency=4)
    assert len(runtime.calls) == 40
    assert [r.output for r in results] == [{"label": t} for t in texts]
    assert run.summary.calls == 40
