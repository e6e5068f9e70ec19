"""What an author hands the kit: an adapter factory, optional failure cases, optional transport.

* A **fixture-mode** factory takes no argument and returns a ready adapter. The kit sends its
  probes with ``fixture_output`` set, so fixture-replaying adapters produce the kit's outputs.
* A **transport-mode** factory (``transport="openai"``) takes the base URL of the kit's loopback
  server (e.g. ``http://127.0.0.1:41234/v1``) and returns an adapter that talks to it; the kit
  serves every completion itself.
* A :class:`FailureCase` tells the kit how to drive the adapter into one failure: a factory for an
  adapter whose next execution of the kit's request fails with ``code`` (and optionally a way to
  change the request, e.g. :func:`~templiqx_conformance.probes.without_fixture_output`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from templiqx_contracts import ExecutionRequest
from templiqx_ports import RuntimeAdapter

__all__ = [
    "TRANSPORTS",
    "AdapterFactory",
    "AdapterTarget",
    "FailureCase",
    "TargetError",
    "TransportAdapterFactory",
    "as_target",
    "load_object",
]

AdapterFactory = Callable[[], RuntimeAdapter]
"""Returns a fresh, ready adapter."""

TransportAdapterFactory = Callable[[str], RuntimeAdapter]
"""Receives the loopback server's base URL and returns a fresh adapter talking to it."""

TRANSPORTS = ("openai",)
"""Transport suites the kit knows: ``openai`` (OpenAI-compatible chat completions over HTTP)."""


class TargetError(ValueError):
    """The target cannot be used: a bad reference, a missing object, an unknown transport."""


@dataclass(frozen=True)
class FailureCase:
    """One failure the adapter can be driven into.

    ``factory`` returns a fresh adapter whose execution of the kit's request raises a
    :class:`~templiqx_ports.PortError` with code ``code``; it is called once per execution (a
    scripted failure may be single-shot). ``prepare`` may rewrite the request first.
    """

    code: str
    factory: AdapterFactory
    name: str = ""
    prepare: Callable[[ExecutionRequest], ExecutionRequest] | None = None

    @property
    def label(self) -> str:
        """``name`` when given, else the code."""
        return self.name or self.code


@dataclass(frozen=True)
class AdapterTarget:
    """Everything the kit needs to exercise one adapter.

    ``call_timeout`` bounds every single adapter call the kit makes (seconds); an adapter that
    does not return in time fails the check that made the call.
    """

    factory: Callable[..., RuntimeAdapter]
    transport: str | None = None
    failures: Sequence[FailureCase] = field(default_factory=tuple)
    call_timeout: float = 10.0

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise TargetError(f"the adapter factory must be callable, got {self.factory!r}")
        if self.transport is not None and self.transport not in TRANSPORTS:
            raise TargetError(
                f"unknown transport {self.transport!r}: the kit knows {', '.join(TRANSPORTS)}"
            )
        for case in self.failures:
            if not isinstance(case, FailureCase):
                raise TargetError(f"failure cases must be FailureCase values, got {case!r}")
        if self.call_timeout <= 0:
            raise TargetError("call_timeout must be a positive number of seconds")


def as_target(
    factory: AdapterTarget | Callable[..., RuntimeAdapter],
    *,
    transport: str | None = None,
    failures: Sequence[FailureCase] | None = None,
) -> AdapterTarget:
    """Normalize what an author passed: an :class:`AdapterTarget` or a bare factory."""
    if isinstance(factory, AdapterTarget):
        if transport is not None and transport != factory.transport:
            raise TargetError(
                f"the target already says transport={factory.transport!r}; "
                f"do not pass transport={transport!r} as well"
            )
        if failures:
            return AdapterTarget(
                factory=factory.factory,
                transport=factory.transport,
                failures=(*factory.failures, *failures),
                call_timeout=factory.call_timeout,
            )
        return factory
    return AdapterTarget(factory=factory, transport=transport, failures=tuple(failures or ()))


def load_object(reference: str) -> Any:
    """Import ``package.module:attribute`` (the attribute may be dotted) and return it.

    The current directory is put on ``sys.path`` first, as the command's users expect when they
    point it at a module of the project they are standing in.
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(
            f"{reference!r} is not a reference: write package.module:factory "
            "(a module path, a colon, and the factory's name)"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"cannot import module {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return obj
