"""A small, standard-library-only OpenAI-compatible runtime adapter: the kit's own test subject.

It exists so the transport suite can be proven against an adapter the kit's tests fully control
(and against deliberately broken subclasses of it), independently of the project's real OpenAI
adapter. It speaks HTTP/1.1 over a raw socket, polls the cancel token and the whole-call
deadline every 20 ms, reads event streams incrementally, and keeps the DECISIONS 5-10 rules.
"""

from __future__ import annotations

import json
import re
import select
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import jsonschema_rs

from templiqx_conformance.wires.openai import tool_fields
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
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    StreamSink,
    failed_event,
)

_EOL = re.compile(rb"\r\n|\r|\n")
_POLL_S = 0.02
Code = RuntimeFailureCode


def failure(code: Code, detail: str, retry_after_ms: int | None = None) -> RuntimeFailureError:
    return RuntimeFailureError(
        RuntimeFailure(
            code=code,
            adapter_id="mini-openai",
            adapter_version="0.0.1",
            fingerprint=fingerprint({"code": code.value, "detail": detail}),
            detail=detail,
            retry_after_ms=retry_after_ms,
        )
    )


class _Connection:
    """One HTTP/1.1 exchange over a raw socket, cancellable and bounded by a deadline."""

    def __init__(self, url: str, deadline: float, cancel: CancelToken | None) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port or 80, parts.path
        self.deadline, self.cancel = deadline, cancel
        self.buffer = b""
        try:
            self.sock = socket.create_connection(
                (self.host, self.port), timeout=max(deadline - time.monotonic(), 0.01)
            )
        except TimeoutError:
            raise failure(Code.TIMEOUT, "model request exceeded its deadline") from None
        except OSError:
            raise failure(Code.UNAVAILABLE, "could not connect to the model server") from None

    def close(self) -> None:
        self.sock.close()

    def send(self, body: bytes) -> None:
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAuthorization: Bearer mini-key\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.sock.sendall(head.encode("ascii") + body)

    def recv(self) -> bytes:
        """The next bytes (``b""`` at EOF), watching the cancel token and the deadline."""
        while True:
            if self.cancel is not None and self.cancel.is_set():
                raise failure(Code.CANCELLED, "model request was cancelled")
            if time.monotonic() > self.deadline:
                raise failure(Code.TIMEOUT, "model request exceeded its deadline")
            readable, _, _ = select.select([self.sock], [], [], _POLL_S)
            if readable:
                try:
                    return self.sock.recv(65536)
                except OSError:
                    return b""

    def head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self.buffer:
            data = self.recv()
            if not data:
                raise failure(Code.UNAVAILABLE, "model server closed the connection early")
            self.buffer += data
        raw, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers

    def body(self, headers: dict[str, str]) -> Iterator[bytes]:
        """The body's bytes as they arrive, de-chunked; a cut body raises UNAVAILABLE."""
        cut = failure(Code.UNAVAILABLE, "model server closed the connection early")
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                while b"\r\n" not in self.buffer:
                    data = self.recv()
                    if not data:
                        raise cut
                    self.buffer += data
                line, self.buffer = self.buffer.split(b"\r\n", 1)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    return
                while len(self.buffer) < size + 2:
                    data = self.recv()
                    if not data:
                        raise cut
                    self.buffer += data
                yield self.buffer[:size]
                self.buffer = self.buffer[size + 2 :]
        length = headers.get("content-length")
        remaining = int(length) if length is not None else None
        pending, self.buffer = self.buffer, b""
        while True:
            if pending:
                yield pending
                if remaining is not None:
                    remaining -= len(pending)
            if remaining is not None and remaining <= 0:
                return
            pending = self.recv()
            if not pending:
                if remaining is not None:
                    raise cut
                return


def schema_accepts(schema: Any, value: Any) -> bool:
    try:
        return bool(jsonschema_rs.validator_for(schema).is_valid(value))
    except ValueError:
        return False


class MiniOpenAI(RuntimeAdapter):
    """An OpenAI-compatible adapter in ~300 lines (see the module docstring)."""

    max_response = 2_097_152
    max_line = 1_048_576
    max_stream = 67_108_864

    def __init__(self, base_url: str, *, timeout_s: float = 9.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = timeout_s

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(
            id="mini-openai",
            version="0.0.1",
            capabilities=["structured_output", "text", "tool_calling"],
        )

    # --- the port -----------------------------------------------------------------------------

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        interaction = request.interaction
        connection = self._open(self.body(interaction), stream=False, cancel=None)
        try:
            headers = self._status(connection)
            data = b""
            for piece in connection.body(headers):
                data += piece
                if len(data) > self.max_response:
                    raise failure(Code.INVALID_RESPONSE, self.limit(self.max_response))
        finally:
            connection.close()
        try:
            reply = json.loads(data)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "model response was not JSON") from None
        if not isinstance(reply, dict):
            raise failure(Code.INVALID_RESPONSE, "model response was not an object")
        if reply.get("error"):
            raise self.in_band_error()
        choices = reply.get("choices") or []
        if not choices:
            raise failure(Code.INVALID_RESPONSE, "model response had no choices")
        message = choices[0].get("message") or {}
        calls = [
            (call.get("id"), call["function"]["name"], call["function"]["arguments"])
            for call in message.get("tool_calls") or []
        ]
        output = self.output(
            interaction,
            message.get("content"),
            calls,
            message.get("refusal"),
            choices[0].get("finish_reason"),
        )
        return self.receipt(interaction, output)

    def execute_streaming(
        self, request: ExecutionRequest, sink: StreamSink, *, cancel: CancelToken | None = None
    ) -> ExecutionReceipt:
        try:
            receipt = self.stream(request.interaction, sink, cancel)
        except PortError as error:
            sink(failed_event(error))
            raise
        sink(Complete.of(receipt))
        return receipt

    # --- pieces subclasses break ----------------------------------------------------------------

    def body(self, interaction: CompiledInteraction) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": "mini",
            "messages": [{"role": m.role, "content": m.content} for m in interaction.messages],
        }
        if "structured_output" in interaction.required_capabilities:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "out", "strict": True, "schema": interaction.output_schema},
            }
        if declared_tools(interaction):
            body.update(tool_fields(interaction))
        return body

    def limit(self, size: int) -> str:
        return f"model response exceeded {size} byte limit"

    def in_band_error(self) -> RuntimeFailureError:
        return failure(Code.UNAVAILABLE, "model server reported an error")

    def status_failure(self, status: int, headers: dict[str, str]) -> RuntimeFailureError:
        if status == 429:
            seconds = headers.get("retry-after", "")
            retry = int(seconds) * 1000 if seconds.isdigit() else None
            return failure(Code.RATE_LIMITED, f"model server returned HTTP {status}", retry)
        if 500 <= status <= 599:
            return failure(Code.UNAVAILABLE, f"model server returned HTTP {status}")
        return failure(Code.PERMANENT, f"model server returned HTTP {status}")

    def split_lines(self, pending: bytes) -> tuple[list[bytes], bytes]:
        """Complete lines of ``pending`` and the unfinished rest (a lone final CR waits)."""
        lines, start = [], 0
        for match in _EOL.finditer(pending):
            if match.group() == b"\r" and match.end() == len(pending):
                break
            lines.append(pending[start : match.start()])
            start = match.end()
        return lines, pending[start:]

    def stream(
        self, interaction: CompiledInteraction, sink: StreamSink, cancel: CancelToken | None
    ) -> ExecutionReceipt:
        connection = self._open(
            {**self.body(interaction), "stream": True}, stream=True, cancel=cancel
        )
        content: str | None = None
        refusal: str | None = None
        finish: str | None = None
        calls: dict[int, list[Any]] = {}
        done = False
        try:
            headers = self._status(connection)
            pending, data_lines, received, assembled = b"", [], 0, 0
            for piece in connection.body(headers):
                received += len(piece)
                if received > self.max_stream:
                    raise failure(
                        Code.INVALID_RESPONSE, f"model stream exceeded {self.max_stream} byte limit"
                    )
                lines, pending = self.split_lines(pending + piece)
                if len(pending) > self.max_line:
                    raise failure(
                        Code.INVALID_RESPONSE, f"model stream line exceeded {self.max_line} limit"
                    )
                for line in lines:
                    if line.startswith(b"data:"):
                        data_lines.append(line[5:].removeprefix(b" "))
                        continue
                    if line or not data_lines:
                        continue
                    payload, data_lines = b"\n".join(data_lines), []
                    if payload == b"[DONE]":
                        done = True
                        break
                    try:
                        chunk = json.loads(payload)
                    except ValueError:
                        raise failure(Code.INVALID_RESPONSE, "malformed stream event") from None
                    if chunk.get("error"):
                        raise self.in_band_error()
                    for choice in (chunk.get("choices") or [])[:1]:
                        delta = choice.get("delta") or {}
                        finish = choice.get("finish_reason") or finish
                        if delta.get("refusal"):
                            refusal = (refusal or "") + delta["refusal"]
                        if delta.get("content"):
                            content = (content or "") + delta["content"]
                            assembled += len(delta["content"].encode())
                            sink(Delta(text=delta["content"]))
                        for part in delta.get("tool_calls") or []:
                            call = calls.setdefault(part["index"], [None, None, ""])
                            function = part.get("function") or {}
                            call[0] = part.get("id") or call[0]
                            call[1] = function.get("name") or call[1]
                            fragment = function.get("arguments") or ""
                            if fragment:
                                call[2] += fragment
                                assembled += len(fragment.encode())
                                sink(ToolCallDelta(name=call[1], arguments_fragment=fragment))
                    if assembled > self.max_response:
                        raise failure(Code.INVALID_RESPONSE, self.limit(self.max_response))
                if done:
                    break
        finally:
            connection.close()
        if not done:
            raise failure(Code.UNAVAILABLE, "model stream ended before [DONE]")
        ordered = [tuple(calls[index]) for index in sorted(calls)]
        output = self.output(interaction, content, ordered, refusal, finish)
        return self.receipt(interaction, output)

    def output(
        self,
        interaction: CompiledInteraction,
        content: str | None,
        calls: list[Any],
        refusal: str | None,
        finish: str | None,
    ) -> Any:
        if finish == "content_filter" or (refusal and not content and not calls):
            raise failure(Code.PERMANENT, "the model refused the request")
        if calls:
            try:
                return {
                    "tool_calls": [
                        {"id": ident, "name": name, "arguments": json.loads(arguments)}
                        for ident, name, arguments in calls
                    ]
                }
            except ValueError:
                raise failure(Code.INVALID_RESPONSE, "tool arguments were not JSON") from None
        if content is None:
            raise failure(Code.INVALID_RESPONSE, "model response had no content")
        if "structured_output" not in interaction.required_capabilities:
            return content
        if finish == "length":
            raise failure(Code.INVALID_RESPONSE, "model output was cut off")
        try:
            return json.loads(content)
        except ValueError:
            raise failure(Code.INVALID_RESPONSE, "model output was not valid JSON") from None

    def receipt(self, interaction: CompiledInteraction, output: Any) -> ExecutionReceipt:
        valid = interaction_output_valid(interaction, output, schema_accepts)
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(self.body(interaction)),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=valid,
        )

    # --- plumbing -----------------------------------------------------------------------------

    def _open(
        self, body: dict[str, Any], *, stream: bool, cancel: CancelToken | None
    ) -> _Connection:
        connection = _Connection(self.url, time.monotonic() + self.timeout_s, cancel)
        try:
            connection.send(json.dumps(body).encode("utf-8"))
        except OSError:
            connection.close()
            raise failure(Code.UNAVAILABLE, "could not send the request") from None
        return connection

    def _status(self, connection: _Connection) -> dict[str, str]:
        status, headers = connection.head()
        if status >= 300:
            raise self.status_failure(status, headers)
        return headers
