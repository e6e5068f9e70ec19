"""What every operation works with: the ports, the loader, the clock, and envelope helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msgspec import UNSET, UnsetType

from templiqx_application.authorized_context import Clock
from templiqx_application.diagnostics import port_diagnostic, with_help
from templiqx_application.loading import ContractLoader
from templiqx_contracts import Diagnostic, OperationEnvelope, StreamEvent, Usage
from templiqx_ports import ArtifactWorkspace, PackageStore, PortError, RuntimeAdapter

__all__ = ["ServiceContext", "envelope", "port_failure"]


@dataclass(frozen=True)
class ServiceContext:
    """The collaborators of one service instance."""

    store: PackageStore
    workspace: ArtifactWorkspace
    runtime: RuntimeAdapter
    eval_runtime: RuntimeAdapter
    clock: Clock
    loader: ContractLoader


def envelope(
    operation: str,
    *,
    result: Any | UnsetType = UNSET,
    diagnostics: list[Diagnostic] | None = None,
    fingerprints: dict[str, str] | None = None,
    stream_events: list[StreamEvent] | None = None,
    usage: Usage | None = None,
) -> OperationEnvelope:
    """An envelope whose ``ok`` follows from its diagnostics (``OperationEnvelope.build``);
    every diagnostic without ``help`` gets its code's fix hint."""
    return OperationEnvelope.build(
        operation,
        result=result,
        diagnostics=with_help(diagnostics or []),
        fingerprints=fingerprints,
        stream_events=stream_events,
        usage=usage,
    )


def port_failure(operation: str, exc: PortError) -> OperationEnvelope:
    """The envelope of an operation stopped by a port error: one diagnostic, no result."""
    return envelope(operation, diagnostics=[port_diagnostic(exc)])
