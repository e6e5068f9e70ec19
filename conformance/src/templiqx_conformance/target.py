"""What an author hands the kit: an adapter factory, optional failure cases, optional transport.

* A **fixture-mode** factory takes no argument and returns a ready adapter. The kit sends its
  probes with ``fixture_output`` set, so fixture-replaying adapters produce the kit's outputs.
* A **transport-mode** factory (``transport="openai"``, another registered name, or a
  :class:`~templiqx_conformance.wires.Wire` instance) takes the base URL of the kit's loopback
  server (e.g. ``http://127.0.0.1:41234/v1``) and returns an adapter that talks to it; the kit
  serves every answer itself, in the wire's bytes.
* Either factory may take a keyword argument ``api_key``: it then receives the kit's marker
  credential, which must never appear in anything the adapter produces. ``secrets`` declares
  further credentials the adapter holds (they are never printed in a report).
* A :class:`FailureCase` tells the kit how to drive the adapter into one failure. In transport
  mode its factory may take the kit server's base URL too, and ``respond`` says what the server
  answers for it, so the kit's server is the only one an author needs.
* ``recordings`` (transport mode) are provider responses to replay, with what they must give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from templiqx_conformance.errors import TargetError
from templiqx_conformance.loopback import RecordedRequest, Reply
from templiqx_conformance.wires.registry import resolve_wire
from templiqx_conformance.wires.wire import Recording, Wire
from templiqx_contracts import ExecutionRequest
from templiqx_ports import RuntimeAdapter, RuntimeFailureCode

__all__ = [
    "AdapterFactory",
    "AdapterTarget",
    "FailureCase",
    "Respond",
    "TargetError",
    "TransportAdapterFactory",
    "as_target",
]

AdapterFactory = Callable[[], RuntimeAdapter]
"""Returns a fresh, ready adapter."""

TransportAdapterFactory = Callable[[str], RuntimeAdapter]
"""Receives the loopback server's base URL and returns a fresh adapter talking to it."""

Respond = Reply | Callable[[RecordedRequest], Reply]
"""What the kit's server answers for a failure case: one reply, or a function of the request."""

_RUNTIME_CODES = frozenset(code.value for code in RuntimeFailureCode)


@dataclass(frozen=True)
class FailureCase:
    """One failure the adapter can be driven into.

    ``factory`` returns a fresh adapter whose execution of the kit's request raises a
    :class:`~templiqx_ports.PortError` with code ``code``; it is called once per execution (a
    scripted failure may be single-shot). In transport mode it may take the kit server's base
    URL (and ``api_key``), like the target's factory. ``respond`` (transport mode) is what the
    kit's server answers for this case — a :class:`~templiqx_conformance.loopback.Reply` or a
    function of the :class:`~templiqx_conformance.loopback.RecordedRequest`; without it the
    server answers as the model normally would. ``prepare`` may rewrite the request first.
    """

    code: str
    factory: Callable[..., RuntimeAdapter]
    name: str = ""
    prepare: Callable[[ExecutionRequest], ExecutionRequest] | None = None
    respond: Respond | None = None

    @property
    def label(self) -> str:
        """``name`` when given, else the code."""
        return self.name or self.code


@dataclass(frozen=True)
class AdapterTarget:
    """Everything the kit needs to exercise one adapter.

    ``transport`` is ``None`` (fixture mode), a transport name, or a
    :class:`~templiqx_conformance.wires.wire.Wire`. ``secrets`` are credentials that must never
    appear in an event, receipt, error or diagnostic. ``recordings`` are provider responses to
    replay (transport mode only). ``call_timeout`` bounds every single adapter call the kit makes
    (seconds); an adapter that does not return in time fails the check that made the call.
    """

    factory: Callable[..., RuntimeAdapter]
    transport: str | Wire | None = None
    failures: Sequence[FailureCase] = field(default_factory=tuple)
    call_timeout: float = 10.0
    secrets: Sequence[str] = field(default_factory=tuple)
    recordings: Sequence[Recording] = field(default_factory=tuple)
    wire: Wire | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise TargetError(f"the adapter factory must be callable, got {self.factory!r}")
        if self.transport is not None:
            object.__setattr__(self, "wire", resolve_wire(self.transport))
        for case in self.failures:
            if not isinstance(case, FailureCase):
                raise TargetError(f"failure cases must be FailureCase values, got {case!r}")
            if case.respond is not None and self.transport is None:
                raise TargetError(
                    f"failure case {case.label!r} says what the kit's server answers (respond=), "
                    "which needs a transport (a Wire)"
                )
        if self.call_timeout <= 0:
            raise TargetError("call_timeout must be a positive number of seconds")
        if isinstance(self.secrets, str) or not all(
            isinstance(secret, str) and len(secret) >= 8 for secret in self.secrets
        ):
            raise TargetError(
                "secrets must be a list of credential strings of at least 8 characters"
            )
        for recording in self.recordings:
            if not isinstance(recording, Recording):
                raise TargetError(f"recordings must be Recording values, got {recording!r}")
            if recording.failure is not None and recording.failure not in _RUNTIME_CODES:
                raise TargetError(
                    f"recording {recording.name!r}: failure must be a runtime failure code "
                    f"({', '.join(sorted(_RUNTIME_CODES))}), got {recording.failure!r}"
                )
            if recording.stream is None and recording.whole is None:
                raise TargetError(f"recording {recording.name!r} has neither stream nor whole")
        if self.recordings and self.transport is None:
            raise TargetError(
                "recordings are replayed by the kit's server: give a transport (a Wire) too"
            )

    @property
    def transport_name(self) -> str | None:
        """The transport's name (``None`` in fixture mode)."""
        return self.wire.name if self.wire is not None else None


def as_target(
    factory: AdapterTarget | Callable[..., RuntimeAdapter],
    *,
    transport: str | Wire | None = None,
    failures: Sequence[FailureCase] | None = None,
    secrets: Sequence[str] | None = None,
) -> AdapterTarget:
    """Normalize what an author passed: an :class:`AdapterTarget` or a bare factory.

    ``failures`` and ``secrets`` given beside a target are added to its own.
    """
    if isinstance(factory, AdapterTarget):
        if transport is not None and transport != factory.transport:
            raise TargetError(
                f"the target already says transport={factory.transport!r}; "
                f"do not pass transport={transport!r} as well"
            )
        if failures or secrets:
            return replace(
                factory,
                failures=(*factory.failures, *(failures or ())),
                secrets=(*factory.secrets, *(secrets or ())),
            )
        return factory
    return AdapterTarget(
        factory=factory,
        transport=transport,
        failures=tuple(failures or ()),
        secrets=tuple(secrets or ()),
    )
