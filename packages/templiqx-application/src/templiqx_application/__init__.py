"""templiqx-application: the one service every surface calls.

:class:`TempliqxService` offers the operation catalog (:data:`CATALOG`) as typed methods and
through :meth:`TempliqxService.invoke`; every call returns an
:class:`~templiqx_contracts.OperationEnvelope`. Streamed executions are also objects to
iterate (:class:`ContractStream`, :class:`AsyncContractStream`; for a structured-output
contract with a :class:`PartialView` of the answer so far), and the ``a``-prefixed methods
are awaitable. :class:`DeterministicFakeRuntime` is the default
runtime and the one evals always run on.

The names below are imported on first use (PEP 562): a surface that needs only the catalog
(``templiqx --help``) does not pay for the service and everything the service imports.
"""

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from templiqx_application.authorized_context import (
        AUTHORIZATION_KEY_ENV,
        AUTHORIZED_MERGE_KEY,
        Clock,
        authorized_context_fingerprint,
        authorized_context_signature,
        requires_authorized_context,
        sign_authorized_context,
        validate_authorized_context,
    )
    from templiqx_application.catalog import (
        CATALOG,
        MAX_ARGUMENT_BYTES,
        MAX_ARGUMENT_DEPTH,
        MAX_ARGUMENT_NODES,
        OPERATION_NAMES,
        OperationSpec,
        ParameterSpec,
        ParameterType,
        bind_arguments,
        operation_spec,
    )
    from templiqx_application.codes import APPLICATION_CODES, BATCH_CODES, PORT_CODES, fix_hint
    from templiqx_application.fake_runtime import (
        FAKE_RUNTIME_DESCRIPTOR,
        DeterministicFakeRuntime,
        create_fake_runtime,
    )
    from templiqx_application.partial_view import (
        CHANGE_BYTES_ALLOWANCE,
        CHANGE_BYTES_PER_ANSWER_BYTE,
        PartialUpdate,
        PartialView,
    )
    from templiqx_application.service import TempliqxService
    from templiqx_application.signing import SIGNING_KEY_ENV, STRICT_ENV, signature_value
    from templiqx_application.stream_record import DEFAULT_STREAM_LIMITS, StreamLimits
    from templiqx_application.stream_runs import (
        CANCEL_GRACE_S,
        AsyncContractStream,
        ContractStream,
        StreamNotFinishedError,
    )
    from templiqx_application.workers import DEFAULT_WORKER_THREADS

__version__ = "0.2.0"

__all__ = [
    "APPLICATION_CODES",
    "AUTHORIZATION_KEY_ENV",
    "AUTHORIZED_MERGE_KEY",
    "BATCH_CODES",
    "CANCEL_GRACE_S",
    "CATALOG",
    "CHANGE_BYTES_ALLOWANCE",
    "CHANGE_BYTES_PER_ANSWER_BYTE",
    "DEFAULT_STREAM_LIMITS",
    "DEFAULT_WORKER_THREADS",
    "FAKE_RUNTIME_DESCRIPTOR",
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_ARGUMENT_NODES",
    "OPERATION_NAMES",
    "PORT_CODES",
    "SIGNING_KEY_ENV",
    "STRICT_ENV",
    "StreamLimits",
    "StreamNotFinishedError",
    "AsyncContractStream",
    "Clock",
    "ContractStream",
    "DeterministicFakeRuntime",
    "OperationSpec",
    "ParameterSpec",
    "PartialUpdate",
    "PartialView",
    "ParameterType",
    "TempliqxService",
    "__version__",
    "authorized_context_fingerprint",
    "authorized_context_signature",
    "bind_arguments",
    "create_fake_runtime",
    "fix_hint",
    "operation_spec",
    "requires_authorized_context",
    "sign_authorized_context",
    "signature_value",
    "validate_authorized_context",
]


if not TYPE_CHECKING:  # type checkers see the imports above, and no module __getattr__
    _LAZY = {
        "templiqx_application.authorized_context": (
            "AUTHORIZATION_KEY_ENV",
            "AUTHORIZED_MERGE_KEY",
            "Clock",
            "authorized_context_fingerprint",
            "authorized_context_signature",
            "requires_authorized_context",
            "sign_authorized_context",
            "validate_authorized_context",
        ),
        "templiqx_application.catalog": (
            "CATALOG",
            "MAX_ARGUMENT_BYTES",
            "MAX_ARGUMENT_DEPTH",
            "MAX_ARGUMENT_NODES",
            "OPERATION_NAMES",
            "OperationSpec",
            "ParameterSpec",
            "ParameterType",
            "bind_arguments",
            "operation_spec",
        ),
        "templiqx_application.codes": (
            "APPLICATION_CODES",
            "BATCH_CODES",
            "PORT_CODES",
            "fix_hint",
        ),
        "templiqx_application.fake_runtime": (
            "FAKE_RUNTIME_DESCRIPTOR",
            "DeterministicFakeRuntime",
            "create_fake_runtime",
        ),
        "templiqx_application.partial_view": (
            "CHANGE_BYTES_ALLOWANCE",
            "CHANGE_BYTES_PER_ANSWER_BYTE",
            "PartialUpdate",
            "PartialView",
        ),
        "templiqx_application.service": ("TempliqxService",),
        "templiqx_application.signing": (
            "SIGNING_KEY_ENV",
            "STRICT_ENV",
            "signature_value",
        ),
        "templiqx_application.stream_record": (
            "DEFAULT_STREAM_LIMITS",
            "StreamLimits",
        ),
        "templiqx_application.stream_runs": (
            "CANCEL_GRACE_S",
            "AsyncContractStream",
            "ContractStream",
            "StreamNotFinishedError",
        ),
        "templiqx_application.workers": ("DEFAULT_WORKER_THREADS",),
    }
    _EXPORTS = {name: module for module, names in _LAZY.items() for name in names}

    def __getattr__(name):
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__():
        return list(__all__)
