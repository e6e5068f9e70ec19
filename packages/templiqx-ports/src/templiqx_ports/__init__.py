"""templiqx-ports: what the application needs from the world, as abstract interfaces.

The runtime port (:class:`RuntimeAdapter`), the storage ports (:class:`PackageStore`,
:class:`ArtifactWorkspace`), the port error family with stable ``TQX_*`` codes, and the stream
grammar check :func:`validate_event_order`, and the usage meter through which a runtime reports
what a call cost (:func:`usage_meter`, :func:`report_usage`) and what telemetry records of it
(:func:`report_call`, :func:`report_response`). :mod:`templiqx_ports.telemetry` is the
dependency-free door to OpenTelemetry (spans and metrics only when a host configured an SDK).
"""

from templiqx_ports.errors import (
    RETRYABLE_CODES,
    BusyError,
    ConflictError,
    HostRetryExhaustedError,
    InvalidDataError,
    InvalidPathError,
    InvalidResponseError,
    NotFoundError,
    PermanentFailureError,
    PortError,
    PortIOError,
    RateLimitedError,
    RuntimeCancelledError,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    RuntimeTimeoutError,
    RuntimeUnavailableError,
    UnsupportedError,
)
from templiqx_ports.runtime import (
    LIVE_RUNTIME,
    OFFLINE_RUNTIME,
    AsyncRuntimeAdapter,
    CancelToken,
    EventOrderError,
    RuntimeAdapter,
    RuntimeReach,
    StreamSink,
    failed_event,
    validate_event_order,
)
from templiqx_ports.store import ArtifactWorkspace, ContractGuard, OutputLease, PackageStore
from templiqx_ports.usage import (
    CallFacts,
    UsageMeter,
    metered_context,
    report_call,
    report_response,
    report_usage,
    usage_meter,
)

__version__ = "0.2.0"

__all__ = [
    "LIVE_RUNTIME",
    "OFFLINE_RUNTIME",
    "RETRYABLE_CODES",
    "ArtifactWorkspace",
    "AsyncRuntimeAdapter",
    "BusyError",
    "CallFacts",
    "CancelToken",
    "ConflictError",
    "ContractGuard",
    "EventOrderError",
    "HostRetryExhaustedError",
    "InvalidDataError",
    "InvalidPathError",
    "InvalidResponseError",
    "NotFoundError",
    "OutputLease",
    "PackageStore",
    "PermanentFailureError",
    "PortError",
    "PortIOError",
    "RateLimitedError",
    "RuntimeAdapter",
    "RuntimeReach",
    "RuntimeCancelledError",
    "RuntimeFailure",
    "RuntimeFailureCode",
    "RuntimeFailureError",
    "RuntimeTimeoutError",
    "RuntimeUnavailableError",
    "StreamSink",
    "UnsupportedError",
    "UsageMeter",
    "__version__",
    "failed_event",
    "metered_context",
    "report_call",
    "report_response",
    "report_usage",
    "usage_meter",
    "validate_event_order",
]
