"""A provider that streams one JSON *array*, element by element, and an adapter for it.

The kit ships no wire for such a provider, so this module also shows how an author writes one:
:class:`ArrayWire` (``JSON_ARRAY`` framing) says how the provider writes an answer — the whole
body ``{"text", "calls", "finish"}``, a stream ``[{"text": ...}, ..., {"finish": ...}]``,
tool-call fragments ``{"call": {"index", "id", "name", "args"}}``, errors ``{"error":
{"message"}}`` (as the body of an error status, or as an element of a stream it has begun).
:class:`MiniArray` is an honest adapter for it on a raw socket (the connection of
:mod:`support.mini_openai`): it finds each element's end by scanning bytes (strings and escapes
included), so a read may end anywhere, and it completes only at the closing ``]``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from support.mini_openai import Code, _Connection, failure, schema_accepts
from templiqx_conformance import JSON_ARRAY, Answer, Wire
from templiqx_conformance.loopback import RecordedRequest
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
from templiqx_ports import (
    CancelToken,
    PortError,
    RuntimeAdapter,
    RuntimeFailureError,
    StreamSink,
    failed_event,
)

_FINISH = {"end": "stop", "length": "length"}
_FILLER = re.compile(rb"[ \t\r\n,]*")


class ArrayWire(Wire):
    """``POST {base_url}/v1/generate``; streams are one JSON array, ending at ``]``."""

    name = "acme-array"
    base_path = ""
    request_path = "/v1/generate"
    framing = JSON_ARRAY

    def encode_whole(self, answer: Answer) -> Any:
        calls = [
            {"id": call.id, "name": call.name, "args": call.arguments} for call in answer.tool_calls
        ]
        return {"text": answer.text, "calls": calls, "finish": _FINISH[answer.stop]}

    def encode_stream(self, answer: Answer) -> Sequence[Any]:
        elements: list[Any] = [{"text": piece} for piece in answer.fragments]
        for index, piece in answer.tool_call_fragments():
            call = answer.tool_calls[index]
            elements.append(
                {"call": {"index": index, "id": call.id, "name": call.name, "args": piece}}
            )
        return [*elements, {"finish": _FINISH[answer.stop]}]

    def encode_error(self, status: int, message: str) -> Any:
        return {"error": {"code": status, "message": message}}

    def encode_stream_error(self, message: str) -> Sequence[Any] | None:
        return [{"error": {"code": 500, "message": message}}]

    def request_problems(
        self, request: RecordedRequest, interaction: CompiledInteraction
    ) -> list[str]:
        body = request.json
        if not isinstance(body, dict):
            return ["the body is not a JSON object"]
        sent = body.get("contents")
        wanted = [{"role": m.role, "text": m.content} for m in interaction.messages]
        return [] if sent == wanted else ["contents must be the interaction's messages, in order"]


def _element_end(data: bytes, start: int) -> int | None:
    """The offset just after the JSON object or array starting at ``start`` (``None``: not
    complete yet)."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(data)):
        byte = data[index]
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x7B, 0x5B):
            depth += 1
        elif byte in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                return index + 1
    return None


class MiniArray(RuntimeAdapter):
    """An honest adapter for :class:`ArrayWire`'s provider (see the module docstring)."""

    max_response = 2_097_152
    max_stream = 67_108_864

    def __init__(self, base_url: str, *, timeout_s: float = 9.0) -> None:
        self.url = base_url.rstrip("/") + "/v1/generate"
        self.timeout_s = timeout_s

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="mini-array", version="0.0.1", capabilities=["structured_output", "text"]
        )

    def body(self, interaction: CompiledInteraction) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": "mini",
            "contents": [{"role": m.role, "text": m.content} for m in interaction.messages],
        }
        if "structured_output" in interaction.required_capabilities:
            body["schema"] = interaction.output_schema
        if declared_tools(interaction):
            body["tools"] = [
                {"name": t.name, "description": t.description, "schema": t.arguments}
                for t in declared_tools(interaction)
            ]
        return body

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        interaction = request.interaction
        connection = self._open({**self.body(interaction), "stream": False}, None)
        try:
            headers = self._status(connection)
            data = b""
            for piece in connection.body(headers):
                data += piece
                if len(data) > self.max_response:
                    raise failure(Code.INVALID_RESPONSE, self._limit(self.max_response))
        finally:
            connection.close()
        try:
            reply = json.loads(data)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "model response was not JSON") from None
        if not isinstance(reply, dict) or "error" in reply:
            raise failure(Code.INVALID_RESPONSE, "model response was not an answer")
        calls = [(c.get("id"), c.get("name"), c.get("args", "")) for c in reply.get("calls", [])]
        output = self._output(interaction, reply.get("text", ""), calls, reply.get("finish"))
        return self._receipt(interaction, output)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        try:
            receipt = self._stream(request.interaction, sink, cancel)
        except PortError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt

    def _stream(
        self, interaction: CompiledInteraction, sink: StreamSink, cancel: CancelToken | None
    ) -> ExecutionReceipt:
        connection = self._open({**self.body(interaction), "stream": True}, cancel)
        text, finish, closed = "", None, False
        calls: dict[int, list[Any]] = {}
        try:
            headers = self._status(connection)
            buffer, position, received, opened = b"", 0, 0, False
            for piece in connection.body(headers):
                received += len(piece)
                if received > self.max_stream:
                    raise failure(
                        Code.INVALID_RESPONSE, f"model stream exceeded {self.max_stream} byte limit"
                    )
                buffer += piece
                while True:
                    position = _FILLER.match(buffer, position).end()  # type: ignore[union-attr]
                    if position == len(buffer):
                        break
                    if not opened:
                        if buffer[position] != 0x5B:
                            raise failure(Code.INVALID_RESPONSE, "the stream is not a JSON array")
                        opened, position = True, position + 1
                        continue
                    if buffer[position] == 0x5D:
                        closed = True
                        break
                    end = _element_end(buffer, position)
                    if end is None:
                        if len(buffer) - position > self.max_response:
                            raise failure(Code.INVALID_RESPONSE, self._limit(self.max_response))
                        break
                    try:
                        element = json.loads(buffer[position:end])
                    except ValueError:
                        raise failure(Code.INVALID_RESPONSE, "malformed stream element") from None
                    position = end
                    if not isinstance(element, dict):
                        raise failure(Code.INVALID_RESPONSE, "a stream element was not an object")
                    if "error" in element:
                        raise failure(Code.UNAVAILABLE, "the model server reported an error")
                    if element.get("text"):
                        text += element["text"]
                        sink(Delta(text=element["text"]))
                    call = element.get("call")
                    if isinstance(call, dict) and call.get("args"):
                        entry = calls.setdefault(
                            call["index"], [call.get("id"), call.get("name"), ""]
                        )
                        entry[2] += call["args"]
                        sink(ToolCallDelta(name=entry[1], arguments_fragment=call["args"]))
                    finish = element.get("finish") or finish
                    if len(text.encode()) > self.max_response:
                        raise failure(Code.INVALID_RESPONSE, self._limit(self.max_response))
                buffer, position = buffer[position:], 0
                if closed:
                    break
        finally:
            connection.close()
        if not closed or finish is None:
            raise failure(Code.UNAVAILABLE, "the stream ended before its closing bracket")
        ordered = [tuple(calls[index]) for index in sorted(calls)]
        return self._receipt(interaction, self._output(interaction, text, ordered, finish))

    def _output(
        self, interaction: CompiledInteraction, text: str, calls: list[Any], finish: Any
    ) -> Any:
        if calls:
            try:
                return {
                    "tool_calls": [
                        {"id": ident, "name": name, "arguments": json.loads(args)}
                        for ident, name, args in calls
                    ]
                }
            except ValueError:
                raise failure(Code.INVALID_RESPONSE, "tool arguments were not JSON") from None
        if "structured_output" not in interaction.required_capabilities:
            if not text:
                raise failure(Code.INVALID_RESPONSE, "model response had no text")
            return text
        if finish == "length":
            raise failure(Code.INVALID_RESPONSE, "model output was cut off")
        try:
            return json.loads(text)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "model output was not valid JSON") from None

    def _receipt(self, interaction: CompiledInteraction, output: Any) -> ExecutionReceipt:
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(self.body(interaction)),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=interaction_output_valid(interaction, output, schema_accepts),
        )

    @staticmethod
    def _limit(size: int) -> str:
        return f"model response exceeded {size} byte limit"

    def _open(self, body: dict[str, Any], cancel: CancelToken | None) -> _Connection:
        connection = _Connection(self.url, time.monotonic() + self.timeout_s, cancel)
        try:
            connection.send(json.dumps(body).encode("utf-8"))
        except OSError:
            connection.close()
            raise failure(Code.UNAVAILABLE, "could not send the request") from None
        return connection

    @staticmethod
    def _status(connection: _Connection) -> dict[str, str]:
        status, headers = connection.head()
        if status < 300:
            return headers
        if status == 429:
            seconds = headers.get("retry-after", "")
            retry = int(seconds) * 1000 if seconds.isdigit() else None
            raise failure(Code.RATE_LIMITED, f"model server returned HTTP {status}", retry)
        code = Code.UNAVAILABLE if status >= 500 else Code.PERMANENT
        error: RuntimeFailureError = failure(code, f"model server returned HTTP {status}")
        raise error
