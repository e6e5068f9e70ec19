"""How a runtime reports what an execution cost, without changing the receipt or the port.

The receipt's shape is fixed (its fields feed fingerprints and goldens) and so is the
``StreamEvent`` union, so token usage travels beside them: the caller opens a
:func:`usage_meter` around the call, and an adapter that knows the usage calls
:func:`report_usage` while it runs. The meter lives in a :class:`contextvars.ContextVar`, so

* it works the same for ``execute`` and ``execute_streaming`` (and for an async adapter: a task
  inherits the caller's context);
* concurrent calls on one adapter instance never see each other's usage (each thread, and each
  task, has its own context) — there is no "last call" attribute to race on;
* an adapter needs no new parameter, and one that never reports simply leaves the meter empty.

Several reports inside one meter add up (a wrapper that calls a model twice reports both).
A report with no meter open is ignored.

Example::

    with usage_meter() as meter:
        receipt = runtime.execute(request)
    print(meter.usage)  # Usage(prompt_tokens=..., ...) or None
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from templiqx_contracts import Usage

__all__ = ["UsageMeter", "metered_context", "report_usage", "usage_meter"]


class UsageMeter:
    """Collects the usage reported by adapters while it is open (see :func:`usage_meter`)."""

    __slots__ = ("_usage",)

    def __init__(self) -> None:
        self._usage: Usage | None = None

    @property
    def usage(self) -> Usage | None:
        """The sum of every report, or ``None`` when no adapter reported usage."""
        return self._usage

    def add(self, usage: Usage) -> None:
        """Add one report."""
        self._usage = usage if self._usage is None else self._usage + usage


_METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar(
    "templiqx_usage_meter", default=None
)


@contextmanager
def usage_meter() -> Iterator[UsageMeter]:
    """Open a meter for the calls made inside the ``with`` block (on this thread or task)."""
    meter = UsageMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def metered_context() -> tuple[UsageMeter, contextvars.Context]:
    """A new meter, and a copy of the current context in which it is open.

    For a call whose work is spread over several steps that do not share one ``with`` block — an
    async stream pulled one event at a time, each pull its own task: run every step in the
    returned context (``context.run(...)``, or ``loop.create_task(step, context=context)``) and
    every report made during them reaches the meter.
    """
    meter = UsageMeter()
    context = contextvars.copy_context()
    context.run(_METER.set, meter)
    return meter, context


def report_usage(usage: Usage) -> None:
    """Called by an adapter during a call: add ``usage`` to the caller's open meter, if any."""
    meter = _METER.get()
    if meter is not None:
        meter.add(usage)
