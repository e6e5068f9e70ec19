"""How the kit reaches an adapter: a *rig* makes fresh adapters and arranges what they produce.

The fixture rig hands the kit's expected output to the adapter as ``fixture_output``. The wire
rig (:mod:`templiqx_conformance.rig.wire_rig`) runs a loopback server that plays the model in the
provider's own bytes, makes adapters pointed at it, and scripts what the server answers.

Credentials: when the author's factory accepts a keyword argument ``api_key``, every adapter the
rig makes receives :data:`KIT_SECRET`, a marker credential the kit then looks for in everything
the adapter produces (``secrets.not_exposed``), beside the secrets the target declares.
"""

from __future__ import annotations

import abc
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from templiqx_conformance.probes import Probe
from templiqx_conformance.target import AdapterTarget, FailureCase
from templiqx_contracts import ExecutionRequest
from templiqx_ports import RuntimeAdapter

__all__ = [
    "KIT_SECRET",
    "DrivenFailure",
    "FixtureRig",
    "Rig",
    "accepts_api_key",
    "takes_base_url",
]

KIT_SECRET: Final = "tqx-kit-secret-4b7e9d21c0a85f36"
"""The marker credential handed to factories that accept ``api_key``; it must never leak."""


@dataclass(frozen=True)
class DrivenFailure:
    """One way the kit makes the adapter fail: arrange, make an adapter, send a request.

    ``code`` is the code the raised error must carry; ``None`` accepts any runtime code (the
    kit then checks only that the projection agrees with the raised error). ``arrange`` is
    called with the request about to be sent. ``after_deltas`` says the failure happens once
    deltas went out (the stream must still end in ``Failed``). ``modes`` are the calls to drive
    it through; ``capability``, when set, limits the case to adapters declaring it.
    """

    label: str
    code: str | None
    make_adapter: Callable[[], RuntimeAdapter]
    prepare: Callable[[ExecutionRequest], ExecutionRequest] | None = None
    arrange: Callable[[ExecutionRequest], None] | None = None
    after_deltas: bool = False
    modes: tuple[str, ...] = ("execute", "execute_streaming")
    capability: str | None = None


def accepts_api_key(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` takes a keyword argument named ``api_key``."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    parameter = parameters.get("api_key")
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def takes_base_url(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` takes a positional argument (the kit server's base URL)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and p.name != "api_key"
        for p in parameters
    ) or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


class Rig(abc.ABC):
    """Makes adapters for one target and arranges their outputs."""

    with_fixture: bool = True
    holds_streams: bool = True
    """Whether the rest of a streamed answer can be held until a token is set (a provider that
    answers in one body cannot be paused half-way)."""

    def __init__(self, target: AdapterTarget) -> None:
        self.target = target
        self._marked = accepts_api_key(target.factory)

    def call_factory(self, *args: Any, factory: Callable[..., Any] | None = None) -> Any:
        """The author's factory (or ``factory``) called with ``args``, and with the marker
        credential if it takes ``api_key``."""
        chosen = factory if factory is not None else self.target.factory
        if accepts_api_key(chosen):
            return chosen(*args, api_key=KIT_SECRET)
        return chosen(*args)

    @abc.abstractmethod
    def make_adapter(self) -> Any:
        """A fresh adapter (not yet type-checked: the caller does that)."""

    def serve(self, probe: Probe, *, hold: threading.Event | None = None) -> None:  # noqa: B027
        """Arrange that executions from now on produce ``probe.output`` (fixture rig: nothing).

        ``hold``: a streamed answer pauses after its first fragment until ``hold`` is set (at
        most half a second), so a token set when the first delta arrives finds the rest unread.
        """

    def accepts(self, probe: Probe) -> bool:
        """Whether this rig can drive ``probe`` (e.g. a wire that cannot send tool calls)."""
        return True

    def failures(self) -> list[DrivenFailure]:
        """The failures to exercise: the author's cases, plus the rig's own."""
        return [self.driven(case) for case in self.target.failures]

    def driven(self, case: FailureCase) -> DrivenFailure:
        """An author's :class:`FailureCase` as a :class:`DrivenFailure` of this rig."""
        return DrivenFailure(
            label=case.label,
            code=case.code,
            make_adapter=case.factory,
            prepare=case.prepare,
        )

    def secrets(self) -> list[tuple[str, str]]:
        """``(label, secret)`` for every credential that must never leak."""
        found = [(f"declared secret #{i + 1}", s) for i, s in enumerate(self.target.secrets)]
        if self._marked:
            found.append(("the kit's marker credential (passed as api_key)", KIT_SECRET))
        return found

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release what the rig holds (servers, threads)."""


class FixtureRig(Rig):
    """Calls the zero-argument factory; outputs travel as ``fixture_output``."""

    def make_adapter(self) -> Any:
        return self.call_factory()
