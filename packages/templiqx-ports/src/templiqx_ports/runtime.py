"""The runtime port: what the application needs from a model runtime.

An adapter implements :meth:`RuntimeAdapter.descriptor` and :meth:`RuntimeAdapter.execute`.
Streaming adapters also override :meth:`RuntimeAdapter.execute_streaming`; everyone else
inherits a default that projects ``execute`` onto the stream grammar: one ``Complete`` on success,
or exactly one ``Failed`` followed by the same error being raised.

:class:`AsyncRuntimeAdapter` is an optional async twin an adapter may implement *in addition*
(one port: the application always holds a :class:`RuntimeAdapter`). The application's async API
uses it natively when present, and otherwise runs the synchronous port on its own bounded
worker pool.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    Failed,
    StreamEvent,
    ToolCallDelta,
)
from templiqx_ports.errors import PortError

__all__ = [
    "LIVE_RUNTIME",
    "OFFLINE_RUNTIME",
    "AsyncRuntimeAdapter",
    "CancelToken",
    "EventOrderError",
    "RuntimeAdapter",
    "RuntimeReach",
    "StreamSink",
    "failed_event",
    "validate_event_order",
]

StreamSink = Callable[[StreamEvent], None]
"""Receives stream events synchronously, in order, on the caller's thread."""


@runtime_checkable
class CancelToken(Protocol):
    """Anything with ``is_set()``, e.g. :class:`threading.Event`."""

    def is_set(self) -> bool:
        """Whether cancellation has been requested."""
        ...


def failed_event(error: PortError) -> Failed:
    """The ``Failed`` projection of an error: its code and its display text."""
    return Failed(code=error.code, message=str(error))


@dataclass(frozen=True)
class RuntimeReach:
    """What one call of a runtime does beyond this process: what a host needs to know before
    it lets an agent call ``execute_contract`` without asking.

    It is no part of the :class:`~templiqx_contracts.AdapterDescriptor` (which enters every
    receipt and fingerprint): a runtime states it through :meth:`RuntimeAdapter.reach`.
    """

    live: bool
    """A call reaches a service outside this machine (a model, a trace store): the world
    changes (logs, quotas, traces) and the same request may answer differently."""
    paid: bool
    """A call may cost money (tokens billed by a provider)."""

    @property
    def open_world(self) -> bool:
        """MCP's ``openWorldHint``: the call interacts with an open world of outside entities."""
        return self.live


OFFLINE_RUNTIME = RuntimeReach(live=False, paid=False)
"""A runtime that answers from this process alone (the deterministic fake, the scripted mock)."""

LIVE_RUNTIME = RuntimeReach(live=True, paid=True)
"""A runtime that calls a model service: what a runtime that says nothing is assumed to be."""


class RuntimeAdapter(abc.ABC):
    """A model runtime. Implementations must be safe to call from several threads."""

    def reach(self) -> RuntimeReach:
        """What a call does beyond this process (see :class:`RuntimeReach`).

        The default is the cautious one, :data:`LIVE_RUNTIME`: a runtime that may call a paid model.
        A runtime that answers from this process alone overrides it with :data:`OFFLINE_RUNTIME`.
        """
        return LIVE_RUNTIME

    @abc.abstractmethod
    def descriptor(self) -> AdapterDescriptor:
        """The adapter's static identity (id, version, capabilities)."""

    @abc.abstractmethod
    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        """Run one execution; raise a :class:`~templiqx_ports.errors.PortError` on failure.

        Adapters never retry internally: hosts own retry policy.
        """

    def request_fingerprint(self, request: ExecutionRequest) -> str | None:
        """The ``request_fingerprint`` the receipt of ``request`` will carry, without a call.

        Hosts that run many requests (batch runs) use it to execute identical requests once and
        to look results up by request before calling the model. It must equal the receipt's
        ``request_fingerprint`` for the same request and settings; it may raise the
        :class:`~templiqx_ports.errors.PortError` the call would raise for a request the
        adapter cannot send (unreadable settings, say). The default, ``None``, means the
        adapter cannot tell before the call (hosts then key requests by the request itself).
        """
        return None

    def execute_streaming(
        self,
        request: ExecutionRequest,
        sink: StreamSink,
        *,
        cancel: CancelToken | None = None,
    ) -> ExecutionReceipt:
        """Run one execution, emitting events to ``sink`` and ending in exactly one terminal event.

        The default calls :meth:`execute`. On success it emits one ``Complete`` carrying the
        receipt and returns it; on failure it emits one ``Failed`` with the error's code and
        display text, then raises the same error. ``cancel`` is not consulted by the default
        (a non-streaming call cannot be interrupted part-way).
        """
        try:
            receipt = self.execute(request)
        except PortError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt


class AsyncRuntimeAdapter(abc.ABC):
    """The optional async twin of :class:`RuntimeAdapter`, for adapters that can await I/O.

    Mix it into a :class:`RuntimeAdapter` subclass (``class MyRuntime(RuntimeAdapter,
    AsyncRuntimeAdapter)``); on its own it is not a port. The application's async API
    (``aexecute_contract``, ``astream_contract``, ...) then awaits these methods on the event
    loop and spends no thread on the call; without it, the synchronous methods run on the
    application's bounded worker pool. The contract mirrors the synchronous one:

    * :meth:`aexecute` returns the receipt :meth:`RuntimeAdapter.execute` would return for the
      same request, or raises the same :class:`~templiqx_ports.errors.PortError`.
    * :meth:`aexecute_streaming` returns an async iterator of the stream events
      :meth:`RuntimeAdapter.execute_streaming` would emit: ``Delta`` / ``ToolCallDelta`` as
      they arrive, then exactly one terminal event. A success ends with ``Complete`` carrying
      the receipt (and the iterator stops); a failure yields one ``Failed`` and then raises the
      error from the next ``__anext__``.
    * **Cancellation** comes two ways. Closing the iterator (``aclose()``, which the
      application does when its consumer leaves early) or cancelling the task awaiting it must
      release the connection at once (``async with`` the HTTP response, ``try``/``finally``)
      and yield nothing more; no ``Failed`` is expected then, the application records the
      cancellation itself. The ``cancel`` token, when given, should be checked between events;
      the application also closes the iterator within 50 ms of the token being set, so an
      adapter waiting on a silent server need not poll it.
    * Every method runs on the event loop: never block it (no ``time.sleep``, no blocking
      socket reads, no CPU-heavy loops without an ``await``). An HTTP adapter uses an async
      client (e.g. ``httpx.AsyncClient.stream``) and reads with ``aiter_bytes``.
    """

    @abc.abstractmethod
    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        """The awaitable twin of :meth:`RuntimeAdapter.execute`."""

    def aexecute_streaming(
        self,
        request: ExecutionRequest,
        *,
        cancel: CancelToken | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """The events of one streamed execution (see the class docstring).

        The default awaits :meth:`aexecute` and yields one ``Complete``, or one ``Failed``
        and then raises the error, as the synchronous default does.
        """
        return _projected(self.aexecute(request))


async def _projected(call: Awaitable[ExecutionReceipt]) -> AsyncIterator[StreamEvent]:
    try:
        receipt = await call
    except PortError as error:
        yield failed_event(error)
        raise
    yield Complete.of(receipt)


class EventOrderError(ValueError):
    """A stream broke the grammar: deltas, then exactly one terminal event, which is last."""


def validate_event_order(events: Sequence[StreamEvent]) -> None:
    """Check the stream grammar; raise :class:`EventOrderError` naming the first violation."""
    if not events:
        raise EventOrderError("stream is empty: it must end with exactly one Complete or Failed")
    terminals = [i for i, event in enumerate(events) if isinstance(event, (Complete, Failed))]
    if not terminals:
        raise EventOrderError(
            f"stream of {len(events)} event(s) has no terminal event: "
            "it must end with exactly one Complete or Failed"
        )
    if len(terminals) > 1:
        kinds = ", ".join(f"{type(events[i]).__name__} at {i}" for i in terminals)
        raise EventOrderError(
            f"stream has {len(terminals)} terminal events ({kinds}); exactly one is allowed"
        )
    last = len(events) - 1
    if terminals[0] != last:
        raise EventOrderError(
            f"terminal {type(events[terminals[0]]).__name__} at index {terminals[0]} is not last "
            f"(the stream has {len(events)} events)"
        )
    for index, event in enumerate(events[:last]):
        if not isinstance(event, (Delta, ToolCallDelta)):
            raise EventOrderError(
                f"event {index} is {type(event).__name__}; "
                "only Delta and ToolCallDelta may precede the terminal event"
            )
