"""OpenTelemetry without a dependency: the tracer, the instruments and trace context, or nothing.

templiqx writes spans and metrics through the OpenTelemetry *API* only, and only when the host
process has configured an SDK: it never configures one, and it never imports OpenTelemetry
itself. A host that exports telemetry has necessarily imported ``opentelemetry.trace`` (the SDK
does when a tracer provider is set), so :func:`tracer` looks the module up in ``sys.modules``
and asks it for the global provider; anything else — OpenTelemetry not installed, installed but
not imported, imported with no SDK provider set — answers ``None`` at the cost of a dictionary
lookup (and, with the API loaded but no provider, one call). Metrics follow the same rule with
``opentelemetry.metrics`` and the global meter provider (:func:`instruments`).

What lives here is what every layer needs: the cheap "is it on" answers, the instruments (the
GenAI client histograms and templiqx's own counters), the attribute names, the W3C trace
context a runtime sends to its model server (:func:`trace_headers`) and a surface continues from
a caller (:func:`continued_trace`), and the content-capture setting. The spans themselves are
made by the application, which sequences every call (``templiqx_application.observability``).

Install the API with the ``otel`` extra (``pip install 'templiqx-ports[otel]'``); set up any SDK
(``opentelemetry-instrument``, ``logfire.configure()``, Phoenix's ``register()``, your own
``TracerProvider``) and templiqx's spans and metrics appear in it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # never imported at run time by this module's callers unless a host did
    from opentelemetry.metrics import Counter, Histogram
    from opentelemetry.trace import Tracer

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "CONTENT_LIMIT",
    "GENAI_ATTRIBUTES",
    "GENAI_METRICS",
    "INSTRUMENTATION_NAME",
    "TEMPLIQX_ATTRIBUTES",
    "TEMPLIQX_METRICS",
    "TRACE_CONTEXT_KEYS",
    "Attr",
    "Instruments",
    "bounded_content",
    "capture_content",
    "continued_trace",
    "current_trace_ids",
    "instruments",
    "trace_headers",
    "tracer",
]

INSTRUMENTATION_NAME: Final = "templiqx"
"""The instrumentation scope of every templiqx span and metric."""

_VERSION: Final = "0.2.0"

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The standard GenAI setting that turns on recording prompts, outputs and tool arguments."""

_CAPTURE_ON: Final = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})

CONTENT_LIMIT: Final = 16_384
"""The most characters one captured content attribute keeps (the rest is cut, marked ``…``)."""

TRACE_CONTEXT_KEYS: Final = ("traceparent", "tracestate", "baggage")
"""The W3C trace-context keys read from a caller's carrier (HTTP headers, MCP ``_meta``)."""

# Names of credentials templiqx knows of: their values are cut out of any captured content.
_CREDENTIAL_ENV: Final = (
    "MODEL_API_KEY",
    "OPENAI_API_KEY",
    "LANGFUSE_PUBLIC_KEY",
    "LANGFUSE_SECRET_KEY",
    "TEMPLIQX_PACKAGE_SIGNING_KEY",
    "TEMPLIQX_HTTP_TOKEN",
)


class Attr:
    """Attribute names. The ``gen_ai.*``, ``error.type`` and ``server.*`` ones are the
    OpenTelemetry semantic conventions' (checked against the published names in the tests);
    the ``templiqx.*`` ones are templiqx's own."""

    # OpenTelemetry GenAI semantic conventions
    OPERATION_NAME: Final = "gen_ai.operation.name"
    PROVIDER_NAME: Final = "gen_ai.provider.name"
    REQUEST_MODEL: Final = "gen_ai.request.model"
    REQUEST_STREAM: Final = "gen_ai.request.stream"
    REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
    REQUEST_TOP_P: Final = "gen_ai.request.top_p"
    REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
    REQUEST_SEED: Final = "gen_ai.request.seed"
    REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
    OUTPUT_TYPE: Final = "gen_ai.output.type"
    RESPONSE_ID: Final = "gen_ai.response.id"
    RESPONSE_MODEL: Final = "gen_ai.response.model"
    RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
    RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
    USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
    USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
    TOKEN_TYPE: Final = "gen_ai.token.type"
    INPUT_MESSAGES: Final = "gen_ai.input.messages"
    OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
    SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
    # OpenTelemetry general semantic conventions
    ERROR_TYPE: Final = "error.type"
    SERVER_ADDRESS: Final = "server.address"
    SERVER_PORT: Final = "server.port"
    # templiqx
    OPERATION: Final = "templiqx.operation"
    PACKAGE: Final = "templiqx.package"
    PACKAGE_VERSION: Final = "templiqx.package.version"
    CONTRACT: Final = "templiqx.contract"
    CONTRACT_VERSION: Final = "templiqx.contract.version"
    OK: Final = "templiqx.ok"
    DIAGNOSTIC_CODES: Final = "templiqx.diagnostic.codes"
    DIAGNOSTIC_CODE: Final = "templiqx.diagnostic.code"
    DIAGNOSTIC_SEVERITY: Final = "templiqx.diagnostic.severity"
    STAGE: Final = "templiqx.stage"
    FINGERPRINT_PREFIX: Final = "templiqx.fingerprint."
    STREAM: Final = "templiqx.stream"
    RUNTIME_ID: Final = "templiqx.runtime.id"
    CANCELLED: Final = "templiqx.cancelled"
    OUTCOME: Final = "templiqx.outcome"
    BATCH_ROWS: Final = "templiqx.batch.rows"
    BATCH_SUCCEEDED: Final = "templiqx.batch.succeeded"
    BATCH_FAILED: Final = "templiqx.batch.failed"
    BATCH_INTERRUPTED: Final = "templiqx.batch.interrupted"
    ROW_INDEX: Final = "templiqx.batch.row.index"
    ROW_ID: Final = "templiqx.batch.row.id"
    ROW_SOURCE: Final = "templiqx.batch.row.source"


GENAI_ATTRIBUTES: Final = tuple(
    value
    for name, value in vars(Attr).items()
    if not name.startswith("_") and isinstance(value, str) and not value.startswith("templiqx.")
)
"""Every semantic-convention attribute name templiqx writes."""

TEMPLIQX_ATTRIBUTES: Final = tuple(
    value
    for name, value in vars(Attr).items()
    if not name.startswith("_") and isinstance(value, str) and value.startswith("templiqx.")
)
"""Every templiqx attribute name (``templiqx.fingerprint.`` is a prefix: one per fingerprint)."""

GENAI_METRICS: Final = (
    "gen_ai.client.operation.duration",
    "gen_ai.client.token.usage",
    "gen_ai.client.operation.time_to_first_chunk",
)
"""The GenAI client histograms templiqx records (semantic-convention names)."""

TEMPLIQX_METRICS: Final = (
    "templiqx.operation.duration",
    "templiqx.validations",
    "templiqx.compilations",
    "templiqx.diagnostics",
)
"""templiqx's own instruments."""

# The semantic conventions' advised bucket boundaries.
_DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
_TOKEN_BUCKETS: Final = tuple(float(4**power) for power in range(14))


@dataclass(frozen=True, slots=True)
class Instruments:
    """The metric instruments of one meter provider."""

    operation_duration: Histogram
    """``gen_ai.client.operation.duration`` (s): one model call."""
    token_usage: Histogram
    """``gen_ai.client.token.usage`` ({token}), by ``gen_ai.token.type``."""
    time_to_first_chunk: Histogram
    """``gen_ai.client.operation.time_to_first_chunk`` (s): streamed calls."""
    templiqx_duration: Histogram
    """``templiqx.operation.duration`` (s): one catalog operation, by operation and outcome."""
    validations: Counter
    """``templiqx.validations``: validations by outcome and first error code."""
    compilations: Counter
    """``templiqx.compilations``: compilations by outcome and first error code."""
    diagnostics: Counter
    """``templiqx.diagnostics``: every diagnostic of a validation or compilation, by code."""


_NO_PROVIDERS: Final = frozenset(
    {"ProxyTracerProvider", "NoOpTracerProvider", "_ProxyMeterProvider", "NoOpMeterProvider"}
)

_ABSENT: Final = object()
_ENV_PROVIDERS: Final = frozenset(
    name
    for name in ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")
    if name in os.environ
)
"""Providers named in the environment when templiqx was imported (the API loads those lazily)."""

_tracing: tuple[object, Tracer | None] = (None, None)
_metering: tuple[object, Instruments | None] = (None, None)


def _provider(module: str, env: str, getter: str) -> object | None:
    """The global provider the API module ``module`` holds, ``None`` when none is set.

    The module global is read directly: the API's own getter looks ``env`` up in
    ``os.environ`` on every call while no provider is set (about a microsecond, on every
    templiqx call of a process that imported OpenTelemetry without configuring it). When that
    variable is set, or the global is not where this API version keeps it, the getter is asked.
    """
    api = sys.modules.get(module)
    if api is None:
        return None
    provider = getattr(api, "_" + env.removeprefix("OTEL_PYTHON_"), _ABSENT)
    if provider is None:
        if env not in _ENV_PROVIDERS:
            return None
        provider = _ABSENT
    if provider is _ABSENT:
        public = sys.modules.get(module.removesuffix("._internal"))
        provider = getattr(public if public is not None else api, getter)()
    return provider


def tracer() -> Tracer | None:
    """templiqx's tracer, or ``None`` when no OpenTelemetry SDK tracer provider is set."""
    global _tracing
    provider = _provider(
        "opentelemetry.trace", "OTEL_PYTHON_TRACER_PROVIDER", "get_tracer_provider"
    )
    if provider is None:
        return None
    cached = _tracing
    if provider is cached[0]:
        return cached[1]
    made: Tracer | None = None
    if type(provider).__name__ not in _NO_PROVIDERS:
        made = provider.get_tracer(INSTRUMENTATION_NAME, _VERSION)  # type: ignore[attr-defined]
    _tracing = (provider, made)
    return made


def instruments() -> Instruments | None:
    """templiqx's instruments, or ``None`` when no OpenTelemetry SDK meter provider is set."""
    global _metering
    provider = _provider(
        "opentelemetry.metrics._internal", "OTEL_PYTHON_METER_PROVIDER", "get_meter_provider"
    )
    if provider is None:
        return None
    cached = _metering
    if provider is cached[0]:
        return cached[1]
    made: Instruments | None = None
    if type(provider).__name__ not in _NO_PROVIDERS:
        made = _create(provider.get_meter(INSTRUMENTATION_NAME, _VERSION))  # type: ignore[attr-defined]
    _metering = (provider, made)
    return made


def _create(meter: Any) -> Instruments:
    return Instruments(
        operation_duration=meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        ),
        time_to_first_chunk=meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        templiqx_duration=meter.create_histogram(
            "templiqx.operation.duration",
            unit="s",
            description="Duration of one templiqx catalog operation.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        ),
        validations=meter.create_counter(
            "templiqx.validations",
            unit="{validation}",
            description="Contract and package validations, by outcome and first error code.",
        ),
        compilations=meter.create_counter(
            "templiqx.compilations",
            unit="{compilation}",
            description="Contract compilations, by outcome and first error code.",
        ),
        diagnostics=meter.create_counter(
            "templiqx.diagnostics",
            unit="{diagnostic}",
            description="Diagnostics reported by validations and compilations, by code.",
        ),
    )


def trace_headers() -> dict[str, str]:
    """The W3C trace-context headers of the current span (``traceparent``, ``tracestate``),
    for a runtime to send to its model server so that the server's trace joins the caller's;
    ``{}`` when tracing is off or no span is current."""
    if tracer() is None:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def current_trace_ids() -> tuple[str, str] | None:
    """The current span's ``(trace id, span id)`` in lowercase hex, or ``None`` (tracing off,
    or no span current) — for an adapter that reports to a tracing backend of its own."""
    if tracer() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


@contextmanager
def continued_trace(carrier: Mapping[str, Any] | None) -> Iterator[None]:
    """Inside the block the current trace context is the one ``carrier`` holds.

    ``carrier`` is what a caller sent: HTTP headers, or the ``_meta`` of an MCP request; only
    its ``traceparent``, ``tracestate`` and ``baggage`` string values are read. Without tracing,
    or without a ``traceparent``, nothing changes. A malformed ``traceparent`` starts a new
    trace (the propagator ignores it). When a span is already current — a server span that an
    instrumentation (the MCP SDK's own middleware, an ASGI instrumentation) opened from the same
    carrier — it is kept: templiqx's spans become its children instead of its siblings.
    """
    if carrier is None or tracer() is None:
        yield
        return
    from opentelemetry import trace

    if trace.get_current_span().get_span_context().is_valid:
        yield
        return
    values: dict[str, str] = {}
    for key in TRACE_CONTEXT_KEYS:
        value = carrier.get(key)
        if isinstance(value, str) and len(value) <= 8192:
            values[key] = value
    if "traceparent" not in values:
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract(values))
    try:
        yield
    finally:
        context.detach(token)


def capture_content() -> bool:
    """Whether prompts, outputs and tool arguments may be recorded (opt-in through
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``: ``true``, ``span_only`` or
    ``span_and_event``; anything else, or unset, is off)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CAPTURE_ON


def bounded_content(text: str, limit: int = CONTENT_LIMIT) -> str:
    """``text`` with every known credential's value cut out, then cut to ``limit`` characters.

    Credentials are the values of the settings templiqx reads them from (``MODEL_API_KEY``,
    ``OPENAI_API_KEY``, the Langfuse keys, the package signing key, the HTTP server's token),
    so captured content never carries one even when a prompt quoted it.
    """
    for name in _CREDENTIAL_ENV:
        secret = os.environ.get(name, "")
        if len(secret) >= 4 and secret in text:
            text = text.replace(secret, "[REDACTED]")
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text
