"""What every operation works with: the ports, the loader, the clock, and envelope helpers."""

from __future__ import annotations

from dataclasses import dataclass

from templiqx_application.authorized_context import Clock
from templiqx_application.diagnostics import port_diagnostic
from templiqx_application.loading import ContractLoader
from templiqx_contracts import OperationEnvelope
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


envelope = OperationEnvelope.build
"""An envelope whose ``ok`` follows from its diagnostics (``OperationEnvelope.build``)."""


def port_failure(operation: str, exc: PortError) -> OperationEnvelope:
    """The envelope of an operation stopped by a port error: one diagnostic, no result."""
    return envelope(operation, diagnostics=[port_diagnostic(exc)])
