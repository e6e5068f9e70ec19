"""How fast a batch calls the runtime: adaptive concurrency, rate budgets, retries.

* :class:`AdaptiveLimit` — how many calls run at once. It starts at the ceiling the caller set
  and adapts like TCP's congestion window (AIMD): each rate-limited answer halves it (once per
  round of calls: the answers of calls that started before the last halving do not halve it
  again), each success adds ``1/limit`` (one more call per round of successes), never above
  the ceiling nor below the floor. A ``retry-after`` hint pauses every new call until then.
* :class:`TokenBucket` / :class:`LocalRateBudget` — optional requests-per-minute and
  tokens-per-minute budgets. A call reserves one request and its estimated tokens and waits
  until the budget has them; when the runtime reports what the call really used, the
  difference is settled. Each refills continuously, holding at most one second's worth
  (so a budget is a steady rate, not a burst of a minute's worth at the start).
  :class:`RateBudget` is the seam for a budget shared by several processes (templiqx-ray keeps
  one in a Ray actor for every worker).
* :class:`RetryPolicy` — which failures are retried and how long to wait: timeouts, rate
  limits and unavailability (``RuntimeFailureCode.retryable``) a bounded number of times with
  exponential back-off and jitter, a ``retry-after`` hint honoured as given; every other failure
  is permanent and never retried.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from templiqx_ports import PortError, RuntimeFailureCode, RuntimeFailureError

__all__ = [
    "AdaptiveLimit",
    "LocalRateBudget",
    "RateBudget",
    "RetryPolicy",
    "TokenBucket",
]

Clock = Callable[[], float]


class AdaptiveLimit:
    """Bounded, adaptive concurrency for one event loop (see the module docstring)."""

    def __init__(self, ceiling: int, *, floor: int = 1, clock: Clock = time.monotonic) -> None:
        if ceiling < 1 or floor < 1 or floor > ceiling:
            raise ValueError("concurrency needs 1 <= floor <= ceiling")
        self.ceiling = ceiling
        self.floor = floor
        self.limit = float(ceiling)
        self.lowest = float(ceiling)
        self.in_flight = 0
        self.epoch = 0
        self.decreases = 0
        self._clock = clock
        self._resume_at = 0.0
        self._changed = asyncio.Event()

    @property
    def allowed(self) -> int:
        """Calls allowed at once now."""
        return max(self.floor, int(self.limit))

    def paused_for(self) -> float:
        """Seconds until a ``retry-after`` pause ends (0 when not paused)."""
        return max(0.0, self._resume_at - self._clock())

    async def acquire(self) -> int:
        """Wait for a slot (and for any pause to end); the epoch the call starts in."""
        while True:
            pause = self.paused_for()
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            if self.in_flight < self.allowed:
                self.in_flight += 1
                return self.epoch
            self._changed.clear()
            await self._changed.wait()

    def release(self) -> None:
        self.in_flight -= 1
        self._changed.set()

    def succeeded(self) -> None:
        """Additive increase: one more call per round of successes."""
        self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
        self._changed.set()

    def rate_limited(self, epoch: int, retry_after_s: float | None) -> None:
        """Multiplicative decrease (once per round) and the server's pause, if it gave one."""
        if epoch == self.epoch:
            self.limit = max(float(self.floor), math.floor(self.limit / 2))
            self.lowest = min(self.lowest, self.limit)
            self.epoch += 1
            self.decreases += 1
        if retry_after_s is not None and retry_after_s > 0:
            self._resume_at = max(self._resume_at, self._clock() + retry_after_s)


class TokenBucket:
    """A continuously refilled budget of ``per_minute`` units holding one second's worth.

    :meth:`reserve` always succeeds and returns how long to wait before using what it took
    (the bucket may go below zero: later reservations then wait longer), so waiting callers
    are served in the order they reserved.
    """

    def __init__(self, per_minute: float, *, clock: Clock = time.monotonic) -> None:
        if not per_minute > 0 or math.isinf(per_minute):
            raise ValueError("a budget per minute must be a positive number")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self._level = self.capacity
        self._clock = clock
        self._updated = clock()

    def _refill(self) -> float:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._updated) * self.rate)
        self._updated = now
        return now

    def reserve(self, amount: float) -> float:
        """Take ``amount``; the seconds to wait before it is really there (0: at once)."""
        self._refill()
        self._level -= amount
        return 0.0 if self._level >= 0 else -self._level / self.rate

    def settle(self, difference: float) -> None:
        """Take ``difference`` more (or give it back when negative): estimate vs. actual."""
        self._refill()
        self._level = min(self.capacity, self._level - difference)


@runtime_checkable
class RateBudget(Protocol):
    """Requests and tokens per minute, possibly shared with other processes."""

    async def reserve(self, requests: int, tokens: int) -> float:
        """Reserve for one call; the seconds the caller waits before calling."""
        ...

    async def settle(self, tokens: int) -> None:
        """The call used ``tokens`` more than it reserved (negative: fewer)."""
        ...


class LocalRateBudget:
    """A :class:`RateBudget` for one process: a bucket per limit that is set."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self.requests = (
            TokenBucket(requests_per_minute, clock=clock) if requests_per_minute else None
        )
        self.tokens = TokenBucket(tokens_per_minute, clock=clock) if tokens_per_minute else None

    def reserve_now(self, requests: int, tokens: int) -> float:
        """The synchronous :meth:`reserve` (what a shared budget's owner calls)."""
        wait = 0.0
        if self.requests is not None:
            wait = max(wait, self.requests.reserve(requests))
        if self.tokens is not None:
            wait = max(wait, self.tokens.reserve(tokens))
        return wait

    def settle_now(self, tokens: int) -> None:
        if self.tokens is not None and tokens:
            self.tokens.settle(tokens)

    async def reserve(self, requests: int, tokens: int) -> float:
        return self.reserve_now(requests, tokens)

    async def settle(self, tokens: int) -> None:
        self.settle_now(tokens)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries of transient failures, with exponential back-off and jitter.

    ``max_attempts`` counts every call of a row (1 = never retry). The wait before retry ``n``
    is ``initial_s * 2**(n-1)`` capped at ``max_s`` and scaled by a random factor in
    [0.5, 1.0]; a ``retry-after`` hint from the runtime replaces it (waited as given, plus up to
    10% so a crowd of rows does not come back at the same instant).
    """

    max_attempts: int = 4
    initial_s: float = 0.5
    max_s: float = 30.0

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= 100:
            raise ValueError("max_attempts must be between 1 and 100")
        if self.initial_s < 0 or self.max_s < 0:
            raise ValueError("back-off times must not be negative")

    @staticmethod
    def retryable(error: BaseException) -> bool:
        """Whether a failure is transient (worth another attempt)."""
        return isinstance(error, RuntimeFailureError) and error.failure.retryable

    @staticmethod
    def rate_limited(error: BaseException) -> bool:
        return (
            isinstance(error, RuntimeFailureError)
            and error.failure.code is RuntimeFailureCode.RATE_LIMITED
        )

    @staticmethod
    def retry_after_s(error: BaseException) -> float | None:
        """The runtime's ``retry-after`` hint in seconds, when it gave one."""
        if isinstance(error, RuntimeFailureError) and error.failure.retry_after_ms is not None:
            return max(0.0, error.failure.retry_after_ms / 1000.0)
        return None

    def delay(self, attempt: int, error: PortError | BaseException, rng: random.Random) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next."""
        hint = self.retry_after_s(error)
        if hint is not None:
            return hint * (1.0 + 0.1 * rng.random())
        backoff = min(self.max_s, self.initial_s * 2.0 ** (attempt - 1))
        return backoff * (0.5 + 0.5 * rng.random())
