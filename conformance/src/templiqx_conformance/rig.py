"""How the kit reaches an adapter: a *rig* makes fresh adapters and arranges what they produce.

The fixture rig hands the kit's expected output to the adapter as ``fixture_output``. Transport
rigs (see :mod:`templiqx_conformance.openai_suite`) run a loopback server, make adapters pointed
at it, and script the server to answer with the kit's output.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from templiqx_conformance.probes import Probe
from templiqx_conformance.target import AdapterTarget, FailureCase
from templiqx_contracts import ExecutionRequest
from templiqx_ports import RuntimeAdapter

__all__ = ["DrivenFailure", "FixtureRig", "Rig", "driven_from_case"]


@dataclass(frozen=True)
class DrivenFailure:
    """One way the kit makes the adapter fail: arrange, make an adapter, send a request.

    ``code`` is the code the raised error must carry; ``None`` accepts any code (the kit then
    checks only that the projection agrees with the raised error).
    """

    label: str
    code: str | None
    make_adapter: Callable[[], RuntimeAdapter]
    prepare: Callable[[ExecutionRequest], ExecutionRequest] | None = None
    arrange: Callable[[], None] | None = None


def driven_from_case(case: FailureCase) -> DrivenFailure:
    """An author's :class:`FailureCase` as a :class:`DrivenFailure`."""
    return DrivenFailure(
        label=case.label, code=case.code, make_adapter=case.factory, prepare=case.prepare
    )


class Rig(abc.ABC):
    """Makes adapters for one target and arranges their outputs."""

    transport: str | None = None
    with_fixture: bool = True

    def __init__(self, target: AdapterTarget) -> None:
        self.target = target

    @abc.abstractmethod
    def make_adapter(self) -> Any:
        """A fresh adapter (not yet type-checked: the caller does that)."""

    def serve(self, probe: Probe) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Arrange that executions from now on produce ``probe.output`` (fixture rig: nothing)."""

    def failures(self) -> list[DrivenFailure]:
        """The failures to exercise: the author's cases, plus the rig's own."""
        return [driven_from_case(case) for case in self.target.failures]

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release what the rig holds (servers, threads)."""


class FixtureRig(Rig):
    """Calls the zero-argument factory; outputs travel as ``fixture_output``."""

    def make_adapter(self) -> Any:
        return self.target.factory()
