"""A rate budget shared by every actor of a Ray batch: one Ray actor holds the buckets.

Each batch actor's engine reserves through :class:`SharedRateBudget` (the engine's
:class:`~templiqx_application.batch.RateBudget` seam): the reservation is made by the one
:class:`BudgetKeeper` actor, which answers how long to wait, and the engine waits locally. So
requests and tokens per minute hold for the whole pipeline however many actors call, at the
cost of one small actor call per model call.
"""

from __future__ import annotations

from typing import Any

import ray

from templiqx_application.batch import LocalRateBudget

__all__ = ["BudgetKeeper", "SharedRateBudget", "start_budget"]


class BudgetKeeper:
    """The buckets (a Ray actor; see :func:`start_budget`)."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self._budget = LocalRateBudget(requests_per_minute, tokens_per_minute)
        self.reserved = 0

    def reserve(self, requests: int, tokens: int) -> float:
        self.reserved += requests
        return self._budget.reserve_now(requests, tokens)

    def settle(self, tokens: int) -> None:
        self._budget.settle_now(tokens)

    def count(self) -> int:
        """Reservations made so far."""
        return self.reserved


def start_budget(requests_per_minute: float | None, tokens_per_minute: float | None) -> Any:
    """A :class:`BudgetKeeper` actor (no CPU reserved: it only does arithmetic)."""
    keeper = ray.remote(num_cpus=0)(BudgetKeeper)
    return keeper.remote(requests_per_minute, tokens_per_minute)


class SharedRateBudget:
    """The engine's view of the keeper (awaits the actor from the engine's event loop)."""

    def __init__(self, keeper: Any) -> None:
        self._keeper = keeper

    async def reserve(self, requests: int, tokens: int) -> float:
        wait: float = await self._keeper.reserve.remote(requests, tokens)
        return wait

    async def settle(self, tokens: int) -> None:
        await self._keeper.settle.remote(tokens)
