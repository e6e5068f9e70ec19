"""A provider that never streams, and two honest adapters for it.

:class:`WholeWire` (``WHOLE_BODY`` framing) answers every request — streaming or not — with one
JSON body ``{"output": {"text", "calls"}, "stop"}``; errors are ``{"fault": {"message"}}`` with an
error status, and the provider also reports some errors *with a 200*, as ``{"fault": ...}``
instead of an answer (:meth:`WholeWire.encode_whole_error`). :class:`MiniWhole` streams what it
can — one ``Delta`` carrying the whole text (or one ``ToolCallDelta`` per call) once the body is
in — and :class:`MiniWholeDefault` keeps the port's default ``execute_streaming``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from support.mini_openai import Code, _Connection, failure, schema_accepts
from templiqx_conformance import WHOLE_BODY, Answer, Wire
from templiqx_contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    Delta,
    ExecutionReceipt,
    ExecutionRequest,
    ToolCallDelta,
    declared_tools,
    fingerprint,
    interaction_output_valid,
)
from templiqx_ports import CancelToken, PortError, RuntimeAdapter, StreamSink, failed_event


class WholeWire(Wire):
    """``POST {base_url}/v1/complete``; one JSON body whatever the request asks."""

    name = "acme-whole"
    base_path = ""
    request_path = "/v1/complete"
    framing = WHOLE_BODY

    def encode_whole(self, answer: Answer) -> Any:
        calls = [
            {"id": call.id, "name": call.name, "arguments": call.parsed_arguments}
            for call in answer.tool_calls
        ]
        return {"output": {"text": answer.text, "calls": calls}, "stop": answer.stop}

    def encode_error(self, status: int, message: str) -> Any:
        return {"fault": {"status": status, "message": message}}

    def encode_whole_error(self, message: str) -> Any | None:
        return {"fault": {"status": 200, "message": message}}


class MiniWhole(RuntimeAdapter):
    """An honest adapter for :class:`WholeWire`'s provider (see the module docstring)."""

    max_response = 2_097_152

    def __init__(self, base_url: str, *, timeout_s: float = 9.0) -> None:
        self.url = base_url.rstrip("/") + "/v1/complete"
        self.timeout_s = timeout_s

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="mini-whole",
            version="0.0.1",
            capabilities=["structured_output", "text", "tool_calling"],
        )

    def body(self, interaction: CompiledInteraction) -> dict[str, Any]:
        return {
            "messages": [{"role": m.role, "content": m.content} for m in interaction.messages],
            "schema": interaction.output_schema,
            "tools": [
                {"name": t.name, "description": t.description, "arguments": t.arguments}
                for t in declared_tools(interaction)
            ],
        }

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self._call(request.interaction, None, None)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        try:
            receipt = self._call(request.interaction, sink, cancel)
        except PortError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt

    def _call(
        self, interaction: CompiledInteraction, sink: StreamSink | None, cancel: CancelToken | None
    ) -> ExecutionReceipt:
        connection = _Connection(self.url, time.monotonic() + self.timeout_s, cancel)
        try:
            connection.send(json.dumps(self.body(interaction)).encode("utf-8"))
            status, headers = connection.head()
            data = b""
            for piece in connection.body(headers):
                data += piece
                if len(data) > self.max_response:
                    limit = self.max_response
                    raise failure(
                        Code.INVALID_RESPONSE, f"model response exceeded {limit} byte limit"
                    )
        finally:
            connection.close()
        if status >= 300:
            seconds = headers.get("retry-after", "")
            if status == 429:
                retry = int(seconds) * 1000 if seconds.isdigit() else None
                raise failure(Code.RATE_LIMITED, f"model server returned HTTP {status}", retry)
            code = Code.UNAVAILABLE if status >= 500 else Code.PERMANENT
            raise failure(code, f"model server returned HTTP {status}")
        try:
            reply = json.loads(data)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "model response was not JSON") from None
        if isinstance(reply, dict) and "fault" in reply:
            raise failure(Code.UNAVAILABLE, "the model server reported a fault")
        said = reply.get("output") if isinstance(reply, dict) else None
        if not isinstance(said, dict):
            raise failure(Code.INVALID_RESPONSE, "model response had no output")
        output = self._output(interaction, said, reply.get("stop"))
        if sink is not None:
            for call in said.get("calls") or []:
                sink(
                    ToolCallDelta(
                        name=call["name"], arguments_fragment=json.dumps(call["arguments"])
                    )
                )
            if not said.get("calls") and said.get("text"):
                sink(Delta(text=said["text"]))
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(self.body(interaction)),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=interaction_output_valid(interaction, output, schema_accepts),
        )

    @staticmethod
    def _output(interaction: CompiledInteraction, said: dict[str, Any], stop: Any) -> Any:
        calls = said.get("calls") or []
        if calls:
            return {
                "tool_calls": [
                    {"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls
                ]
            }
        text = said.get("text")
        if not isinstance(text, str) or not text:
            raise failure(Code.INVALID_RESPONSE, "model response had no text")
        if "structured_output" not in interaction.required_capabilities:
            return text
        if stop == "length":
            raise failure(Code.INVALID_RESPONSE, "model output was cut off")
        try:
            return json.loads(text)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "model output was not valid JSON") from None


class MiniWholeDefault(MiniWhole):
    """The same adapter keeping the port's default ``execute_streaming``."""

    execute_streaming = RuntimeAdapter.execute_streaming  # type: ignore[assignment]
