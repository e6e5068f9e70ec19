"""Typed runtime errors, the failure's shown message and remedy, and the usage meter."""

from __future__ import annotations

import asyncio
import pickle
import threading

import pytest

from templiqx_contracts import Usage
from templiqx_ports import (
    HostRetryExhaustedError,
    InvalidResponseError,
    PermanentFailureError,
    RateLimitedError,
    RuntimeCancelledError,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    RuntimeTimeoutError,
    RuntimeUnavailableError,
    report_usage,
    usage_meter,
)

CLASSES = {
    RuntimeFailureCode.TIMEOUT: RuntimeTimeoutError,
    RuntimeFailureCode.RATE_LIMITED: RateLimitedError,
    RuntimeFailureCode.UNAVAILABLE: RuntimeUnavailableError,
    RuntimeFailureCode.INVALID_RESPONSE: InvalidResponseError,
    RuntimeFailureCode.PERMANENT: PermanentFailureError,
    RuntimeFailureCode.HOST_RETRY_EXHAUSTED: HostRetryExhaustedError,
    RuntimeFailureCode.CANCELLED: RuntimeCancelledError,
}


def _failure(code: RuntimeFailureCode, **extra: object) -> RuntimeFailure:
    return RuntimeFailure(
        code=code,
        adapter_id="a",
        adapter_version="1",
        fingerprint="f" * 64,
        detail="model server returned HTTP 401",
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("code", list(RuntimeFailureCode))
def test_every_code_has_its_own_error_class(code: RuntimeFailureCode) -> None:
    assert set(CLASSES) == set(RuntimeFailureCode)
    error = RuntimeFailureError(_failure(code))
    assert type(error) is CLASSES[code]
    assert isinstance(error, RuntimeFailureError)
    assert error.FAILURE_CODE is code
    assert error.code == code.value
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is CLASSES[code]
    assert clone.failure == error.failure


def test_a_typed_catch() -> None:
    with pytest.raises(RateLimitedError) as caught:
        raise RuntimeFailureError(_failure(RuntimeFailureCode.RATE_LIMITED, retry_after_ms=5))
    assert caught.value.failure.retry_after_ms == 5


def test_the_message_shows_server_and_provider_words_and_the_remedy_is_the_help() -> None:
    bare = RuntimeFailureError(_failure(RuntimeFailureCode.PERMANENT))
    assert str(bare) == "runtime failure TQX_RUNTIME_PERMANENT: model server returned HTTP 401"
    assert bare.help is None  # no remedy: the help line is the identity (the mock's goldens)
    assert bare.failure.help_text().startswith("adapter=a version=1 scenario=none")
    full = RuntimeFailureError(
        _failure(
            RuntimeFailureCode.PERMANENT,
            status=401,
            server="api.example:443",
            provider_message="Incorrect API key provided: [redacted]",
            remedy="check MODEL_API_KEY",
        )
    )
    assert str(full) == (
        "runtime failure TQX_RUNTIME_PERMANENT: model server returned HTTP 401 "
        '(api.example:443): "Incorrect API key provided: [redacted]"'
    )
    assert full.help == full.failure.help_text() == "check MODEL_API_KEY"
    assert full.failure.fingerprint == bare.failure.fingerprint
    assert full.detail == bare.detail


def test_usage_reports_reach_the_open_meter_and_add_up() -> None:
    report_usage(Usage(prompt_tokens=9, completion_tokens=9, total_tokens=18))  # no meter: ignored
    with usage_meter() as meter:
        assert meter.usage is None
        report_usage(Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3))
        report_usage(Usage(prompt_tokens=10, completion_tokens=20, total_tokens=30))
    assert meter.usage == Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33)
    report_usage(Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2))  # closed meter
    assert meter.usage == Usage(prompt_tokens=11, completion_tokens=22, total_tokens=33)


def test_concurrent_calls_never_see_each_other_s_usage() -> None:
    barrier = threading.Barrier(8)
    seen: dict[int, Usage | None] = {}

    def call(n: int) -> None:
        with usage_meter() as meter:
            barrier.wait()
            report_usage(Usage(prompt_tokens=n, completion_tokens=n, total_tokens=2 * n))
            barrier.wait()
        seen[n] = meter.usage

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert seen == {
        n: Usage(prompt_tokens=n, completion_tokens=n, total_tokens=2 * n) for n in range(8)
    }


def test_an_async_task_reports_to_the_meter_of_its_caller() -> None:
    async def model(n: int) -> None:
        await asyncio.sleep(0)
        report_usage(Usage(prompt_tokens=n, completion_tokens=0, total_tokens=n))

    async def caller(n: int) -> Usage | None:
        with usage_meter() as meter:
            await asyncio.create_task(model(n))
        return meter.usage

    async def main() -> list[Usage | None]:
        return list(await asyncio.gather(*(caller(n) for n in (1, 2, 3))))

    assert asyncio.run(main()) == [
        Usage(prompt_tokens=n, completion_tokens=0, total_tokens=n) for n in (1, 2, 3)
    ]
