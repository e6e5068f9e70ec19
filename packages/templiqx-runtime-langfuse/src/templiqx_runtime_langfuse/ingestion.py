"""Best-effort Langfuse traces through the batch ingestion API.

One execution becomes one ``POST {host}/api/public/ingestion`` carrying a ``batch`` of two
events: ``trace-create`` (the execution) and ``generation-create`` (the model call), shaped as
Langfuse's OpenAPI document declares them (``TraceEvent`` = ``BaseEvent`` + ``TraceBody``,
``CreateGenerationEvent`` = ``BaseEvent`` + ``CreateGenerationBody``). That endpoint is marked
deprecated upstream in favour of OTLP; it is kept because it is what the reference uses and it
needs no extra dependency.

Ids are fresh UUIDs per execution (so retries of the same request are separate traces); the
request fingerprint goes into metadata. Under :attr:`PayloadPolicy.FINGERPRINTS_ONLY` no prompt
or output leaves the process: only ids, fingerprints, timings, usage and the outcome.

Emission never raises and never fails an execution: any problem (connection, timeout, an HTTP
error, events rejected in a 207 answer) is logged as one warning line without details on the
``templiqx_runtime_langfuse`` logger. :func:`aemit_trace` is the same on an event loop (the
OpenAI runtime's async transport: no thread, same deadline).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from templiqx_ports import RuntimeFailure, RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_langfuse.settings import LangfuseSettings, PayloadPolicy
from templiqx_runtime_openai import Call, FailureSource, Transport, Usage

if TYPE_CHECKING:
    from templiqx_runtime_openai.async_transport import AsyncCall, AsyncTransport

__all__ = [
    "TraceRecord",
    "aemit_trace",
    "async_trace_transport",
    "build_batch",
    "emit_trace",
    "rfc3339",
]

logger = logging.getLogger("templiqx_runtime_langfuse")

_MAX_ANSWER_BYTES: Final = 65_536
_encode = msgspec.json.Encoder().encode


class _IngestionAnswer(msgspec.Struct):
    errors: list[msgspec.Raw] = msgspec.field(default_factory=list)


_answer_decoder: Final = msgspec.json.Decoder(_IngestionAnswer)


def rfc3339(seconds: float) -> str:
    """A UTC RFC 3339 timestamp with microseconds, e.g. ``2026-07-12T10:11:12.123456Z``."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """Everything one trace may say about one execution (the policy decides what it does)."""

    adapter_id: str
    adapter_version: str
    contract_id: str
    contract_version: str
    model: str
    request_fingerprint: str
    messages: list[dict[str, str]]
    model_parameters: dict[str, Any]
    started: float
    ended: float
    usage: Usage | None = None
    output: Any = None
    output_fingerprint: str | None = None
    output_schema_valid: bool | None = None
    failure: RuntimeFailure | None = None
    response_id: str | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    ids: tuple[str, str, str, str] = field(
        default_factory=lambda: (
            uuid.uuid4().hex,
            uuid.uuid4().hex,
            str(uuid.uuid4()),
            str(uuid.uuid4()),
        )
    )
    """Trace id, generation id, and the two event ids."""


def _metadata(record: TraceRecord) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "templiqx_adapter": record.adapter_id,
        "templiqx_adapter_version": record.adapter_version,
        "contract_id": record.contract_id,
        "contract_version": record.contract_version,
        "request_fingerprint": record.request_fingerprint,
    }
    failure = record.failure
    if failure is None:
        meta["status"] = "success"
        meta["output_fingerprint"] = record.output_fingerprint
        meta["output_schema_valid"] = record.output_schema_valid
    else:
        meta["status"] = failure.code.value
        meta["failure_detail"] = failure.detail
        meta["failure_fingerprint"] = failure.fingerprint
        meta["retry_after_ms"] = failure.retry_after_ms
    return meta


def build_batch(record: TraceRecord, policy: PayloadPolicy, now: float) -> dict[str, Any]:
    """The ingestion request body for one execution."""
    trace_id, generation_id, trace_event_id, generation_event_id = record.ids
    full = policy is PayloadPolicy.FULL
    stamp = rfc3339(now)
    meta = _metadata(record)
    trace: dict[str, Any] = {
        "id": trace_id,
        "timestamp": rfc3339(record.started),
        "name": record.contract_id,
        "version": record.contract_version,
        "metadata": meta,
        "tags": ["templiqx"],
    }
    generation: dict[str, Any] = {
        "id": generation_id,
        "traceId": trace_id,
        "name": record.contract_id,
        "version": record.contract_version,
        "startTime": rfc3339(record.started),
        "endTime": rfc3339(record.ended),
        "model": record.model,
        "metadata": meta,
        "level": "DEFAULT" if record.failure is None else "ERROR",
    }
    if record.failure is not None:
        generation["statusMessage"] = record.failure.code.value
    usage = record.usage
    if usage is not None:
        generation["usageDetails"] = {
            "input": usage.prompt_tokens,
            "output": usage.completion_tokens,
            "total": usage.total_tokens,
        }
    if full:
        trace["input"] = record.messages
        generation["input"] = record.messages
        if record.failure is None:
            trace["output"] = record.output
            generation["output"] = record.output
        if record.model_parameters:
            meta["model_parameters"] = record.model_parameters
    return {
        "batch": [
            {"id": trace_event_id, "type": "trace-create", "timestamp": stamp, "body": trace},
            {
                "id": generation_event_id,
                "type": "generation-create",
                "timestamp": stamp,
                "body": generation,
            },
        ]
    }


def _warn(reason: str) -> None:
    logger.warning("templiqx-runtime-langfuse: trace emission failed (best effort): %s", reason)


def _answer(call: Call) -> bytes | None:
    parts: list[bytes] = []
    total = 0
    for piece in call.chunks():
        total += len(piece)
        if total > _MAX_ANSWER_BYTES:
            return None
        parts.append(piece)
    return b"".join(parts)


async def _aanswer(call: AsyncCall) -> bytes | None:
    parts: list[bytes] = []
    total = 0
    while (piece := await call.read()) is not None:
        total += len(piece)
        if total > _MAX_ANSWER_BYTES:
            return None
        parts.append(piece)
    return b"".join(parts)


def _accepted(status: int, data: bytes | None) -> bool:
    """Whether Langfuse accepted every event (warning once about why not)."""
    if not 200 <= status <= 299:
        _warn(f"Langfuse answered HTTP {status}")
        return False
    if data:
        try:
            rejected = len(_answer_decoder.decode(data).errors)
        except msgspec.DecodeError:
            rejected = 0
        if rejected:
            _warn(f"Langfuse rejected {rejected} of 2 events")
            return False
    return True


def _unreachable(error: RuntimeFailureError, settings: LangfuseSettings) -> bool:
    if error.failure.code is RuntimeFailureCode.TIMEOUT:
        _warn(f"no answer within {settings.timeout_ms} ms")
    else:
        _warn("could not reach Langfuse")
    return False


def emit_trace(
    transport: Transport, settings: LangfuseSettings, record: TraceRecord, now: float
) -> bool:
    """Send one trace; ``True`` if Langfuse accepted every event. Never raises."""
    try:
        body = _encode(build_batch(record, settings.payload_policy, now))
        with transport.post(
            settings.ingestion_url,
            body,
            authorization=settings.authorization,
            timeout_ms=settings.timeout_ms,
        ) as call:
            response = call.response
            assert response is not None
            status = response.status_code
            data = _answer(call) if 200 <= status <= 299 else None
        return _accepted(status, data)
    except RuntimeFailureError as error:
        return _unreachable(error, settings)
    except Exception:  # best effort: tracing must never fail an execution
        _warn("unexpected error while sending")
        return False


async def aemit_trace(
    transport: AsyncTransport, settings: LangfuseSettings, record: TraceRecord, now: float
) -> bool:
    """The awaitable twin of :func:`emit_trace` (never raises an ``Exception``)."""
    try:
        body = _encode(build_batch(record, settings.payload_policy, now))
        call = await transport.post(
            settings.ingestion_url,
            body,
            authorization=settings.authorization,
            timeout_ms=settings.timeout_ms,
        )
        try:
            response = call.response
            assert response is not None
            status = response.status_code
            data = await _aanswer(call) if 200 <= status <= 299 else None
        finally:
            await call.aclose()
        return _accepted(status, data)
    except RuntimeFailureError as error:
        return _unreachable(error, settings)
    except Exception:  # best effort: tracing must never fail an execution
        _warn("unexpected error while sending")
        return False


_INGESTION_SOURCE: Final = FailureSource("templiqx-runtime-langfuse-ingestion", "0.2.0")


def trace_transport() -> Transport:
    """The HTTP transport for ingestion (same client stack as the model calls)."""
    return Transport(_INGESTION_SOURCE)


def async_trace_transport() -> AsyncTransport:
    """The async HTTP transport for ingestion (same client stack as async model calls)."""
    from templiqx_runtime_openai.async_transport import AsyncTransport

    return AsyncTransport(_INGESTION_SOURCE)
