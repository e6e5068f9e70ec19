"""templiqx-ports: what the application needs from the world, as abstract interfaces.

The runtime port (:class:`RuntimeAdapter`), the storage ports (:class:`PackageStore`,
:class:`ArtifactWorkspace`), the port error family with stable ``TQX_*`` codes, and the stream
grammar check :func:`validate_event_order`.
"""

from templiqx_ports.errors import (
    RETRYABLE_CODES,
    BusyError,
    ConflictError,
    InvalidDataError,
    InvalidPathError,
    NotFoundError,
    PortError,
    PortIOError,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    UnsupportedError,
)
from templiqx_ports.runtime import (
    CancelToken,
    EventOrderError,
    RuntimeAdapter,
    StreamSink,
    failed_event,
    validate_event_order,
)
from templiqx_ports.store import ArtifactWorkspace, ContractGuard, OutputLease, PackageStore

__version__ = "0.2.0"

__all__ = [
    "RETRYABLE_CODES",
    "ArtifactWorkspace",
    "BusyError",
    "CancelToken",
    "ConflictError",
    "ContractGuard",
    "EventOrderError",
    "InvalidDataError",
    "InvalidPathError",
    "NotFoundError",
    "OutputLease",
    "PackageStore",
    "PortError",
    "PortIOError",
    "RuntimeAdapter",
    "RuntimeFailure",
    "RuntimeFailureCode",
    "RuntimeFailureError",
    "StreamSink",
    "UnsupportedError",
    "__version__",
    "failed_event",
    "validate_event_order",
]
