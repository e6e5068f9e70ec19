"""Render fuel: the step budget that bounds the *work* of one call, whatever it produces.

Byte limits (:data:`~templiqx_core.limits.MAX_RENDERED_BYTES`) bound what a render writes, not
what it does: three nested ``for_each`` with an empty body over a few hundred items, or a chain
of components each calling the next twice, produce nothing and run for minutes. Every unit of
rendering work therefore draws from a :class:`Fuel` budget:

* one step per content node rendered, per ``for_each`` iteration, per component expansion and
  per expression evaluated;
* one step per KiB of text a filter or an ``equals`` reads, and per value an ``equals`` walks;
* one step per content node an ``include`` splices (the application's include expansion).

A call that runs out stops with ``TQX_FUEL_EXHAUSTED`` naming the budget, and validation refuses
a contract whose every render provably needs more (:func:`minimum_steps`). One step is roughly
half a microsecond of work on current hardware, so the default budget
(:data:`DEFAULT_RENDER_FUEL`, one million steps) is about half a second of CPU; a host may lower
it and may raise it up to :data:`MAX_RENDER_FUEL`.

Cancellation is checked as fuel is drawn (every :data:`CANCEL_CHECK_STEPS` steps, well under a
millisecond of work): a call whose cancel token is set stops with ``TQX_CANCELLED`` instead of
running to the end of its budget. A call's fuel is found through a context variable
(:func:`metered` installs it, :func:`current_fuel` reads it), so the service can give every
call one budget and one token without threading them through each function in between; a
worker pool adds its own cancel token for the work it runs (:func:`cancelled_by`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, Protocol

from templiqx_contracts import Diagnostic
from templiqx_core import codes

__all__ = [
    "CANCEL_CHECK_STEPS",
    "DEFAULT_RENDER_FUEL",
    "FUEL_ENV",
    "MAX_RENDER_FUEL",
    "CallCancelledError",
    "CancelLike",
    "Fuel",
    "FuelExhaustedError",
    "cancelled_by",
    "check_cancelled",
    "current_fuel",
    "fuel_limit",
    "metered",
    "provably_exhausted",
    "text_steps",
]

DEFAULT_RENDER_FUEL: Final = 1_000_000
"""Steps one call may take by default (about half a second of rendering work)."""

MAX_RENDER_FUEL: Final = 50_000_000
"""The hard ceiling a host may raise the budget to (about half a minute of work)."""

FUEL_ENV: Final = "TEMPLIQX_RENDER_FUEL"
"""The environment variable that sets the budget of a composed service (1 to the ceiling)."""

CANCEL_CHECK_STEPS: Final = 2048
"""How many steps may be drawn between two looks at the cancel token (about a millisecond)."""

_TEXT_STEP_BYTES: Final = 1024


class CancelLike(Protocol):
    """A cancellation token: anything with ``is_set()`` (a ``threading.Event``)."""

    def is_set(self) -> bool:
        """Whether the call was cancelled."""
        ...


class FuelExhaustedError(Exception):
    """The call used up its budget; ``diagnostic`` names it."""

    def __init__(self, limit: int, doing: str = "") -> None:
        self.diagnostic = exhausted(limit, doing)
        super().__init__(self.diagnostic.message)


class CallCancelledError(Exception):
    """The call's cancel token was set while it was working."""

    def __init__(self) -> None:
        self.diagnostic = cancelled()
        super().__init__(self.diagnostic.message)


def exhausted(limit: int, doing: str = "", pointer: str = "") -> Diagnostic:
    """The ``TQX_FUEL_EXHAUSTED`` diagnostic of a budget of ``limit`` steps."""
    what = f" while {doing}" if doing else ""
    return codes.problem(
        codes.FUEL_EXHAUSTED,
        f"the call used more than its {limit} steps of render fuel{what} "
        f"(DEFAULT_RENDER_FUEL is {DEFAULT_RENDER_FUEL}; a host sets {FUEL_ENV}, at most "
        f"{MAX_RENDER_FUEL}); loops, component calls and includes repeat more work than a "
        "call may do",
        pointer,
    )


def provably_exhausted(limit: int, pointer: str) -> Diagnostic:
    """``TQX_FUEL_EXHAUSTED`` for content whose every render needs more than ``limit`` steps."""
    return codes.problem(
        codes.FUEL_EXHAUSTED,
        f"every render of this contract takes more than the {limit} steps of render fuel a "
        f"call has (DEFAULT_RENDER_FUEL is {DEFAULT_RENDER_FUEL}; a host sets {FUEL_ENV}, at "
        f"most {MAX_RENDER_FUEL}), whatever the request: its components call each other, or "
        "loop over literal lists, too many times over",
        pointer,
    )


def cancelled() -> Diagnostic:
    """The ``TQX_CANCELLED`` diagnostic."""
    return codes.problem(
        codes.CANCELLED, "the call was cancelled by its caller while templiqx was working on it"
    )


def text_steps(size: int) -> int:
    """The steps charged for reading ``size`` characters of text: one per KiB, at least one."""
    return 1 + size // _TEXT_STEP_BYTES


def fuel_limit(value: int | str | None) -> int:
    """A budget setting checked: ``None`` is the default; else 1 to :data:`MAX_RENDER_FUEL`.

    Raises ``ValueError`` naming the setting and its range for anything else.
    """
    if value is None:
        return DEFAULT_RENDER_FUEL
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{FUEL_ENV} must be a whole number of steps from 1 to {MAX_RENDER_FUEL}, "
            f"not {str(value)[:40]!r}"
        ) from None
    if isinstance(value, bool) or not 1 <= limit <= MAX_RENDER_FUEL:
        raise ValueError(
            f"{FUEL_ENV} must be a whole number of steps from 1 to {MAX_RENDER_FUEL} "
            f"(MAX_RENDER_FUEL), not {limit}"
        )
    return limit


class Fuel:
    """The step budget of one call and the tokens that cancel it.

    ``draw(steps)`` takes steps from the budget; it raises :class:`FuelExhaustedError` once
    more than ``limit`` were drawn, and :class:`CallCancelledError` when a token is set (looked
    at every :data:`CANCEL_CHECK_STEPS` steps, and by :meth:`check`). Used by one thread.
    """

    __slots__ = ("_tick", "_tokens", "left", "limit")

    def __init__(self, limit: int = DEFAULT_RENDER_FUEL, cancel: CancelLike | None = None) -> None:
        self.limit = limit
        self.left = limit
        tokens = list(_ambient.get())
        if cancel is not None:
            tokens.append(cancel)
        self._tokens = tuple(tokens)
        self._tick = CANCEL_CHECK_STEPS

    @property
    def used(self) -> int:
        """Steps drawn so far (capped at one past the limit)."""
        return self.limit - max(self.left, -1)

    def draw(self, steps: int = 1, doing: str = "") -> None:
        """Take ``steps`` from the budget."""
        self.left -= steps
        if self.left < 0:
            raise FuelExhaustedError(self.limit, doing)
        self._tick -= steps
        if self._tick <= 0:
            self._tick = CANCEL_CHECK_STEPS
            self.check()

    def check(self) -> None:
        """Raise :class:`CallCancelledError` when a cancel token is set."""
        for token in self._tokens:
            if token.is_set():
                raise CallCancelledError

    @property
    def cancelled(self) -> bool:
        """Whether a cancel token is set."""
        return any(token.is_set() for token in self._tokens)


_current: contextvars.ContextVar[Fuel | None] = contextvars.ContextVar(
    "templiqx_fuel", default=None
)
_ambient: contextvars.ContextVar[tuple[CancelLike, ...]] = contextvars.ContextVar(
    "templiqx_cancel", default=()
)


@contextmanager
def metered(fuel: Fuel) -> Iterator[Fuel]:
    """Make ``fuel`` the budget of everything the block runs (in this thread or task)."""
    token = _current.set(fuel)
    try:
        yield fuel
    finally:
        _current.reset(token)


@contextmanager
def cancelled_by(cancel: CancelLike) -> Iterator[None]:
    """Every :class:`Fuel` created inside the block is also cancelled by ``cancel``."""
    token = _ambient.set((*_ambient.get(), cancel))
    try:
        yield
    finally:
        _ambient.reset(token)


def check_cancelled() -> None:
    """Raise :class:`CallCancelledError` when the running call's tokens are set (nothing when no
    call is metered). For long steps that draw no fuel, such as reading a large document."""
    fuel = _current.get()
    if fuel is not None:
        fuel.check()


def current_fuel() -> Fuel:
    """The budget of the running call (see :func:`metered`), or a fresh default one."""
    fuel = _current.get()
    return fuel if fuel is not None else Fuel()
