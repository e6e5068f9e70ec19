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

The same meter carries what telemetry records about the model call (:class:`CallFacts`): an
adapter that knows them calls :func:`report_call` when it sends the request (provider, model,
server) and :func:`report_response` when the answer arrives (response id, model, finish
reasons). They never enter a receipt or an envelope; the application puts them on the call's
span and metrics (``docs/observability.md``). An adapter that reports nothing is still traced,
named after its descriptor.

Example::

    with usage_meter() as meter:
        receipt = runtime.execute(request)
    print(meter.usage)  # Usage(prompt_tokens=..., ...) or None
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from templiqx_contracts import Usage

__all__ = [
    "CallFacts",
    "UsageMeter",
    "metered_context",
    "report_call",
    "report_response",
    "report_usage",
    "usage_meter",
]


@dataclass(slots=True)
class CallFacts:
    """What an adapter said about its model call, for telemetry (all optional).

    ``provider`` is a GenAI provider name as the OpenTelemetry conventions spell it (``openai``
    for an OpenAI-compatible API); ``server_address``/``server_port`` name the endpoint (host
    and port only: never a path, a query or credentials).
    """

    provider: str | None = None
    request_model: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    response_id: str | None = None
    response_model: str | None = None
    finish_reasons: tuple[str, ...] = ()


class UsageMeter:
    """Collects the usage reported by adapters while it is open (see :func:`usage_meter`),
    and the :class:`CallFacts` they report."""

    __slots__ = ("_usage", "facts")

    def __init__(self) -> None:
        self._usage: Usage | None = None
        self.facts: CallFacts | None = None
        """What the adapter reported with :func:`report_call` / :func:`report_response`."""

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


def _facts() -> CallFacts | None:
    meter = _METER.get()
    if meter is None:
        return None
    if meter.facts is None:
        meter.facts = CallFacts()
    return meter.facts


def report_call(
    *,
    provider: str | None = None,
    model: str | None = None,
    server_address: str | None = None,
    server_port: int | None = None,
) -> None:
    """Called by an adapter as it sends a model request: who it asks (see :class:`CallFacts`).

    Ignored when no meter is open; costs a context-variable lookup otherwise.
    """
    facts = _facts()
    if facts is None:
        return
    facts.provider = provider
    facts.request_model = model
    facts.server_address = server_address
    facts.server_port = server_port


def report_response(
    *,
    response_id: str | None = None,
    model: str | None = None,
    finish_reasons: tuple[str, ...] = (),
) -> None:
    """Called by an adapter when the model answered: the answer's id, the model that gave it
    and why it stopped (ignored when no meter is open)."""
    facts = _facts()
    if facts is None:
        return
    facts.response_id = response_id
    facts.response_model = model
    facts.finish_reasons = finish_reasons
