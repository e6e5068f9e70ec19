"""From response bytes to an assembled completion, without any I/O.

:class:`StreamAssembler` takes the bytes of a chat-completions event stream as they arrive
(any split) and returns the stream events each piece completes; :func:`decode_completion` does
the same for a whole non-streamed body. Neither reads a socket, checks a clock or calls a sink,
so a synchronous reader (``Call.chunks()``) and an asynchronous one can share them: the reader
only feeds bytes, emits what comes back and honours cancellation between events.

Bounds (DECISIONS 9, issue #15 item 7) are enforced here, as the bytes arrive: the raw stream
bytes, one SSE line, and the assembled output — content, tool-call arguments, tool-call names
and ids, and refusal text all count toward ``max_output``. A tool call's name and id are also
capped at :data:`MAX_TOOL_NAME_BYTES` / :data:`MAX_TOOL_ID_BYTES` each, so a hostile server
cannot make the name that every later ``ToolCallDelta`` carries arbitrarily large (the events
share one name string; none is copied per fragment).
"""

from __future__ import annotations

import msgspec

from templiqx_contracts import Delta, ToolCallDelta
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError
from templiqx_runtime_openai.completion import (
    MAX_TOOL_ID_BYTES,
    MAX_TOOL_NAME_BYTES,
    Assembled,
    AssembledToolCall,
    utf8_size,
)
from templiqx_runtime_openai.details import Detail
from templiqx_runtime_openai.failures import FailureSource, in_band_failure
from templiqx_runtime_openai.sse import DONE, LineTooLongError, SSEDecoder
from templiqx_runtime_openai.wire import (
    ChatResponse,
    ToolCallPart,
    Usage,
    chunk_decoder,
    head_decoder,
    response_decoder,
)

__all__ = [
    "MAX_TOOL_ID_BYTES",
    "MAX_TOOL_NAME_BYTES",
    "StreamAssembler",
    "StreamEvents",
    "decode_completion",
]

StreamEvents = list[Delta | ToolCallDelta]


class StreamAssembler:
    """The state of one chat-completions stream being assembled (see the module docstring).

    Call :meth:`feed` with each piece of the body; it returns the events that piece completes.
    After :attr:`done` (``data: [DONE]`` was seen) :meth:`result` is the whole completion. A
    problem sets :attr:`failure` instead of raising, so the events before it are still
    returned; later pieces are ignored.
    """

    __slots__ = (
        "_calls",
        "_content",
        "_content_seen",
        "_decoder",
        "_finish",
        "_head",
        "_last_index",
        "_max_line",
        "_max_output",
        "_max_raw",
        "_out_total",
        "_raw_total",
        "_refusal",
        "_saw_choice",
        "_source",
        "_usage",
        "done",
        "failure",
    )

    def __init__(
        self, source: FailureSource, *, max_output: int, max_line: int, max_raw: int
    ) -> None:
        self._source = source
        self._decoder = SSEDecoder(max_line)
        self._max_output = max_output
        self._max_line = max_line
        self._max_raw = max_raw
        self._raw_total = 0
        self._out_total = 0
        self._content: list[str] = []
        self._content_seen = False
        self._refusal: list[str] = []
        self._calls: dict[int, AssembledToolCall] = {}
        self._last_index = 0
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._saw_choice = False
        self._head: tuple[str | None, str | None] | None = None
        self.done = False
        self.failure: RuntimeFailureError | None = None

    def _invalid(self, detail: str) -> RuntimeFailureError:
        return self._source.error(RuntimeFailureCode.INVALID_RESPONSE, detail)

    def _count(self, size: int) -> None:
        self._out_total += size
        if self._out_total > self._max_output:
            raise self._invalid(Detail.response_limit(self._max_output))

    def feed(self, data: bytes) -> StreamEvents:
        """The events completed by ``data`` (after :attr:`done` or a failure: none)."""
        events: StreamEvents = []
        if self.done or self.failure is not None:
            return events
        try:
            self._feed(data, events)
        except RuntimeFailureError as error:
            self.failure = error
        return events

    def _feed(self, data: bytes, events: StreamEvents) -> None:
        over = self._raw_total + len(data) - self._max_raw
        self._raw_total += len(data)
        if over > 0:
            # A read may hold many events: those completed within the bound are still
            # delivered, and nothing past it is parsed.
            if over < len(data):
                self._events(data[: len(data) - over], events)
            if not self.done:
                raise self._invalid(Detail.stream_limit(self._max_raw))
            return
        self._events(data, events)

    def _events(self, data: bytes, events: StreamEvents) -> None:
        try:
            payloads = self._decoder.feed(data)
        except LineTooLongError:
            raise self._invalid(Detail.line_limit(self._max_line)) from None
        decode = chunk_decoder.decode
        append = events.append
        content = self._content
        limit = self._max_output
        for payload in payloads:
            if payload == DONE:
                if not self._saw_choice:
                    raise self._invalid(Detail.NO_CHOICES)
                self.done = True
                return
            try:
                chunk = decode(payload)
            except msgspec.DecodeError:
                raise self._invalid(Detail.MALFORMED_EVENT) from None
            if self._head is None:
                head = head_decoder.decode(payload)
                self._head = (_text(head.id), _text(head.model))
            if chunk.error is not None:
                raise in_band_failure(self._source, chunk.error)
            if chunk.usage is not None:
                self._usage = chunk.usage
            choices = chunk.choices
            if not choices:
                continue
            for choice in choices:
                if choice.index:
                    continue
                self._saw_choice = True
                delta = choice.delta
                if delta is not None:
                    text = delta.content
                    if text:
                        # utf8_size and _count, inlined: this runs once per streamed token.
                        self._out_total += len(text) if text.isascii() else len(text.encode())
                        if self._out_total > limit:
                            raise self._invalid(Detail.response_limit(limit))
                        content.append(text)
                        self._content_seen = True
                        append(Delta(text=text))
                    elif text is not None:
                        self._content_seen = True
                    if delta.tool_calls:
                        self._tool_parts(delta.tool_calls, events)
                    if delta.refusal:
                        self._count(utf8_size(delta.refusal))
                        self._refusal.append(delta.refusal)
                if choice.finish_reason is not None:
                    self._finish = choice.finish_reason

    def _tool_parts(self, parts: list[ToolCallPart], events: StreamEvents) -> None:
        calls = self._calls
        for part in parts:
            index = part.index
            if index is None:
                known = part.id is not None and any(c.id == part.id for c in calls.values())
                index = len(calls) if part.id is not None and not known else self._last_index
            self._last_index = index
            state = calls.get(index)
            if state is None:
                state = calls[index] = AssembledToolCall()
            if part.id and state.id is None:
                state.id = _checked_field(self, "id", part.id, MAX_TOOL_ID_BYTES)
            function = part.function
            if function is None:
                continue
            if function.name and not state.name:
                # The first fragment names the call (DECISIONS 7); later names are ignored.
                state.name = _checked_field(self, "name", function.name, MAX_TOOL_NAME_BYTES)
            fragment = function.arguments
            if not fragment:
                continue
            self._count(utf8_size(fragment))
            state.arguments.append(fragment)
            events.append(ToolCallDelta(name=state.name, arguments_fragment=fragment))

    def result(self) -> Assembled:
        """The whole completion (call once :attr:`done` is true)."""
        head = self._head if self._head is not None else (None, None)
        return Assembled(
            "".join(self._content) if self._content_seen else None,
            "".join(self._refusal) if self._refusal else None,
            [self._calls[index] for index in sorted(self._calls)],
            self._finish,
            self._usage,
            head[0],
            head[1],
        )


def _text(value: object) -> str | None:
    """A server-given identifier, if it is a short string (it only labels telemetry)."""
    return value if isinstance(value, str) and len(value) <= 256 else None


def _checked_field(assembler: StreamAssembler, field: str, value: str, limit: int) -> str:
    size = utf8_size(value)
    if size > limit:
        raise assembler._invalid(Detail.tool_field_limit(field, limit))
    assembler._count(size)
    return value


def decode_completion(data: bytes, source: FailureSource) -> Assembled:
    """The assembled completion of a whole non-streamed body, or raise its failure."""
    try:
        response: ChatResponse = response_decoder.decode(data)
    except msgspec.DecodeError:
        raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION) from None
    if response.error is not None and not response.choices:
        raise in_band_failure(source, response.error)
    choice = next((c for c in response.choices or () if c.index == 0), None)
    if choice is None:
        raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NO_CHOICES)
    message = choice.message
    if message is None:
        raise source.error(RuntimeFailureCode.INVALID_RESPONSE, Detail.NOT_COMPLETION)
    calls = [
        AssembledToolCall(
            id=call.id,
            name=(call.function.name or "") if call.function else "",
            arguments=[(call.function.arguments or "") if call.function else ""],
        )
        for call in message.tool_calls or ()
    ]
    return Assembled(
        message.content,
        message.refusal,
        calls,
        choice.finish_reason,
        response.usage,
        _text(response.id),
        _text(response.model),
    )
