"""The arguments of the service's typed methods: what a Python caller gave, as catalog arguments.

The typed methods of :class:`~templiqx_application.TempliqxService` (and their awaitable twins)
turn keyword arguments into the mapping the catalog binds; ``None`` means "use the default",
and the values of a compile-like call come either as ``inputs``/``context`` or as one
:class:`~templiqx_contracts.RenderRequest`, never both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from templiqx_application.catalog import CATALOG
from templiqx_application.context import envelope
from templiqx_application.diagnostics import error
from templiqx_contracts import Failed, OperationEnvelope, RenderRequest, StreamEvent
from templiqx_core.fuel import CallCancelledError

__all__ = [
    "EXECUTE_SPEC",
    "cancelled_envelope",
    "compile_like_arguments",
    "given",
    "internal_failure",
    "render_request",
]

EXECUTE_SPEC = CATALOG[[spec.name for spec in CATALOG].index("execute_contract")]
"""The catalog spec of ``execute_contract`` (streams bind their arguments against it)."""


def given(**arguments: Any) -> dict[str, Any]:
    """The arguments a Python caller actually gave (``None`` means "use the default")."""
    return {name: value for name, value in arguments.items() if value is not None}


def render_request(inputs: dict[str, Any], context: dict[str, Any]) -> RenderRequest:
    return RenderRequest(inputs=inputs, context=context)


def internal_failure(name: str, exc: Exception) -> OperationEnvelope:
    """The envelope of an operation that raised: the service itself never raises."""
    return envelope(
        name,
        diagnostics=[
            error(
                "TQX_INTERNAL",
                f"operation '{name}' failed unexpectedly: {type(exc).__name__}: {exc}",
            )
        ],
    )


def cancelled_envelope(name: str, exc: CallCancelledError, *, stream: bool) -> OperationEnvelope:
    """The envelope of a call whose cancel token was set while it worked: ``TQX_CANCELLED``,
    or for an execution (which had not reached its runtime) ``TQX_RUNTIME_CANCELLED`` with its
    ``Failed`` event when it streams, as every cancelled execution ends."""
    if name != "execute_contract":
        return envelope(name, diagnostics=[exc.diagnostic])
    failure = error(
        "TQX_RUNTIME_CANCELLED", "execution was cancelled before the runtime was called"
    )
    events: list[StreamEvent] | None = (
        [Failed(code=failure.code, message=failure.message)] if stream else None
    )
    return envelope(name, diagnostics=[failure], stream_events=events)


def compile_like_arguments(
    name: str,
    package: str,
    contract: str,
    inputs: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None,
    capabilities: list[str] | None,
    request: RenderRequest | None,
    extra: dict[str, Any],
) -> dict[str, Any] | OperationEnvelope:
    """The catalog arguments of a typed compile-like call, or the envelope refusing it."""
    if request is not None:
        if inputs is not None or context is not None:
            return envelope(
                name,
                diagnostics=[
                    error(
                        "TQX_ARGUMENT_INVALID",
                        "pass the values either as `request` or as `inputs`/`context`, not both",
                        "/request",
                    )
                ],
            )
        inputs, context = request.inputs, request.context
    return given(
        package=package,
        contract=contract,
        inputs=inputs,
        context=context,
        capabilities=capabilities,
        **extra,
    )
