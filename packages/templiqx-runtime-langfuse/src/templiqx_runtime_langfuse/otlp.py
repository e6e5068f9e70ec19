"""Best-effort Langfuse traces over OTLP: ``POST {host}/api/public/otel/v1/traces``.

The same :class:`~templiqx_runtime_langfuse.ingestion.TraceRecord` the ingestion path sends,
written as one OTLP/HTTP JSON ``ExportTraceServiceRequest`` (the encoding Langfuse's endpoint
accepts beside protobuf) with two spans, as the OpenTelemetry GenAI conventions and Langfuse's
attribute mapping read them:

* ``templiqx <contract>`` (INTERNAL) — the Langfuse trace: ``langfuse.trace.name`` (the
  contract id), ``langfuse.trace.tags``, ``langfuse.version``, ``langfuse.trace.metadata.*``
  (adapter, contract, fingerprints, status), and under :attr:`PayloadPolicy.FULL` the prompt and
  the output as ``langfuse.trace.input`` / ``langfuse.trace.output``;
* ``chat <model>`` (CLIENT), its child — the generation: ``langfuse.observation.type``
  ``generation``, the ``gen_ai.*`` request, response and usage attributes,
  ``langfuse.observation.model.parameters``, level and status message on failure, and under
  :attr:`PayloadPolicy.FULL` ``langfuse.observation.input`` / ``langfuse.observation.output``.

The spans join the caller's trace when one is current (the host set up OpenTelemetry: the
application's model-call span is then current while this runtime runs), so the same trace id is
seen in Langfuse and in the host's own backend; otherwise the record's fresh ids are used. No
OpenTelemetry package is needed: the JSON is written here.

Like the ingestion path, sending never raises and never fails an execution; problems are one
warning line without details on the ``templiqx_runtime_langfuse`` logger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from templiqx_ports.telemetry import current_trace_ids
from templiqx_runtime_langfuse.ingestion import (
    TraceRecord,
    _aanswer,
    _answer,
    _unreachable,
    _warn,
)
from templiqx_runtime_langfuse.settings import LangfuseSettings, PayloadPolicy
from templiqx_runtime_openai import Transport

if TYPE_CHECKING:
    from templiqx_runtime_openai.async_transport import AsyncTransport

__all__ = ["aemit_otlp", "build_otlp", "emit_otlp"]

_INTERNAL: Final = 1
_CLIENT: Final = 3
_STATUS_ERROR: Final = 2
_encode = msgspec.json.Encoder().encode


class _PartialSuccess(msgspec.Struct):
    rejectedSpans: int | str | None = None  # noqa: N815 (the OTLP JSON member name)


class _ExportAnswer(msgspec.Struct):
    partialSuccess: _PartialSuccess | None = None  # noqa: N815 (the OTLP JSON member name)


_answer_decoder: Final = msgspec.json.Decoder(_ExportAnswer)


def _value(value: Any) -> dict[str, Any]:
    """An OTLP ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": value}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_value(item) for item in value]}}
    return {"stringValue": str(value)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"key": key, "value": _value(value)} for key, value in values.items() if value is not None
    ]


def _nanos(seconds: float) -> str:
    return str(int(seconds * 1_000_000_000))


def _json(value: Any) -> str:
    return _encode(value).decode("utf-8")


def build_otlp(
    record: TraceRecord, policy: PayloadPolicy, *, parent: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The OTLP/JSON export request for one execution.

    ``parent``: the caller's current ``(trace id, span id)`` in hex, when one is current: the
    spans take its trace id (the trace span is not parented to it, so Langfuse, which never sees
    that span, still shows a complete trace).
    """
    full = policy is PayloadPolicy.FULL
    trace_id = parent[0] if parent is not None else record.ids[0]
    root_id, generation_id = record.ids[1][:16], record.ids[1][16:]
    failure = record.failure
    metadata: dict[str, Any] = {
        "templiqx_adapter": record.adapter_id,
        "templiqx_adapter_version": record.adapter_version,
        "contract_id": record.contract_id,
        "contract_version": record.contract_version,
        "request_fingerprint": record.request_fingerprint,
        "status": "success" if failure is None else failure.code.value,
    }
    if failure is None:
        metadata["output_fingerprint"] = record.output_fingerprint
        metadata["output_schema_valid"] = record.output_schema_valid
    else:
        metadata["failure_detail"] = failure.detail
        metadata["failure_fingerprint"] = failure.fingerprint
    root: dict[str, Any] = {
        "langfuse.trace.name": record.contract_id,
        "langfuse.trace.tags": ["templiqx"],
        "langfuse.version": record.contract_version,
        "templiqx.contract": record.contract_id,
        "templiqx.contract.version": record.contract_version,
        "templiqx.fingerprint.request": record.request_fingerprint,
    }
    root.update({f"langfuse.trace.metadata.{k}": v for k, v in metadata.items()})
    generation: dict[str, Any] = {
        "langfuse.observation.type": "generation",
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": record.model,
        "gen_ai.response.model": record.response_model,
        "gen_ai.response.id": record.response_id,
        "gen_ai.response.finish_reasons": (
            [record.finish_reason] if record.finish_reason else None
        ),
        "langfuse.version": record.contract_version,
    }
    generation.update({f"langfuse.observation.metadata.{k}": v for k, v in metadata.items()})
    if record.model_parameters:
        generation["langfuse.observation.model.parameters"] = _json(record.model_parameters)
    usage = record.usage
    if usage is not None:
        generation["gen_ai.usage.input_tokens"] = usage.prompt_tokens
        generation["gen_ai.usage.output_tokens"] = usage.completion_tokens
    if failure is not None:
        generation["langfuse.observation.level"] = "ERROR"
        generation["langfuse.observation.status_message"] = failure.code.value
        generation["error.type"] = failure.code.value
    if full:
        prompt = _json(record.messages)
        root["langfuse.trace.input"] = prompt
        generation["langfuse.observation.input"] = prompt
        if failure is None:
            answer = _json(record.output)
            root["langfuse.trace.output"] = answer
            generation["langfuse.observation.output"] = answer
    status: dict[str, Any] = {}
    if failure is not None:
        status = {"code": _STATUS_ERROR, "message": failure.code.value}
    start, end = _nanos(record.started), _nanos(record.ended)
    spans = [
        {
            "traceId": trace_id,
            "spanId": root_id,
            "name": f"templiqx {record.contract_id}",
            "kind": _INTERNAL,
            "startTimeUnixNano": start,
            "endTimeUnixNano": end,
            "attributes": _attributes(root),
            "status": status,
        },
        {
            "traceId": trace_id,
            "spanId": generation_id,
            "parentSpanId": root_id,
            "name": f"chat {record.model}",
            "kind": _CLIENT,
            "startTimeUnixNano": start,
            "endTimeUnixNano": end,
            "attributes": _attributes(generation),
            "status": status,
        },
    ]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes({"service.name": "templiqx"})},
                "scopeSpans": [
                    {
                        "scope": {"name": record.adapter_id, "version": record.adapter_version},
                        "spans": spans,
                    }
                ],
            }
        ]
    }


def _accepted(status: int, data: bytes | None) -> bool:
    """Whether Langfuse took every span (warning once about why not)."""
    if not 200 <= status <= 299:
        _warn(f"Langfuse's OTLP endpoint answered HTTP {status}")
        return False
    if data:
        try:
            partial = _answer_decoder.decode(data).partialSuccess
        except msgspec.DecodeError:
            partial = None
        rejected = 0 if partial is None else partial.rejectedSpans
        if rejected not in (None, 0, "0"):
            _warn(f"Langfuse's OTLP endpoint rejected {rejected} of 2 spans")
            return False
    return True


def _body(record: TraceRecord, settings: LangfuseSettings) -> bytes:
    return _encode(build_otlp(record, settings.payload_policy, parent=current_trace_ids()))


def emit_otlp(transport: Transport, settings: LangfuseSettings, record: TraceRecord) -> bool:
    """Send one trace over OTLP; ``True`` if Langfuse took every span. Never raises."""
    try:
        with transport.post(
            settings.otlp_url,
            _body(record, settings),
            authorization=settings.authorization,
            timeout_ms=settings.timeout_ms,
        ) as call:
            response = call.response
            assert response is not None
            status = response.status_code
            data = _answer(call) if 200 <= status <= 299 else None
        return _accepted(status, data)
    except Exception as error:  # best effort: tracing must never fail an execution
        return _failed(error, settings)


async def aemit_otlp(
    transport: AsyncTransport, settings: LangfuseSettings, record: TraceRecord
) -> bool:
    """The awaitable twin of :func:`emit_otlp` (never raises an ``Exception``)."""
    try:
        call = await transport.post(
            settings.otlp_url,
            _body(record, settings),
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
    except Exception as error:  # best effort: tracing must never fail an execution
        return _failed(error, settings)


def _failed(error: Exception, settings: LangfuseSettings) -> bool:
    from templiqx_ports import RuntimeFailureError

    if isinstance(error, RuntimeFailureError):
        return _unreachable(error, settings)
    _warn("unexpected error while sending")
    return False
