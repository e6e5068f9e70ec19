"""The failure table (adapters.md §4.5 as decided in docs/decisions/live-adapters.md), row by row,
on BOTH paths of BOTH twins (sync and async, one test body: the ``twin`` fixture): every row is
served once to ``execute`` and once to ``execute_streaming``, and each
raised failure is checked for code, retryability, ``retry_after_ms``, detail, the server's own
message (shown, sanitised, only where it is an error message: DECISIONS 20) and the server's
address; the streamed one must also end the stream in a ``Failed`` equal to it. Where the two
paths share a detail the two failures must be equal (fingerprint included)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply, sse_frame
from templiqx_contracts import Failed
from templiqx_ports import RuntimeFailureCode, RuntimeFailureError, validate_event_order
from templiqx_runtime_openai import Detail, OpenAIRuntime

from .conftest import Twin

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]

RATE_LIMITED = RuntimeFailureCode.RATE_LIMITED
UNAVAILABLE = RuntimeFailureCode.UNAVAILABLE
PERMANENT = RuntimeFailureCode.PERMANENT
TIMEOUT = RuntimeFailureCode.TIMEOUT
INVALID = RuntimeFailureCode.INVALID_RESPONSE
RETRYABLE = {RATE_LIMITED, UNAVAILABLE, TIMEOUT}  # docs/runtimes.md: "the first three"

MARKER = "PROVIDER-TEXT-must-not-leak"
"""Put into every provider body, frame and tool argument text a row serves."""


@dataclass(frozen=True)
class Row:
    """One condition: what ``execute`` and ``execute_streaming`` are served, what both raise.

    ``plain``/``streamed`` of ``None`` means nothing listens on the port (connection refused).
    ``detail`` is one sentence for both paths, or ``(execute's, execute_streaming's)``.
    """

    plain: Reply | None
    streamed: Reply | None
    code: RuntimeFailureCode
    detail: str | tuple[str, str]
    retry: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    said: bool = False
    """Whether the server's error message (``MARKER``) is shown in the failure's message."""


def _status(
    status: int,
    code: RuntimeFailureCode,
    *headers: tuple[str, str],
    retry: int | None = None,
    detail: str | None = None,
) -> Row:
    """An error status (with a leaky body) served identically to both paths."""
    reply = Reply.error(status, headers=headers, body={"error": {"message": MARKER}})
    redirect = 300 <= status <= 399
    return Row(reply, reply, code, detail or Detail.http_status(status), retry, said=not redirect)


def _rows(wire: SimpleNamespace) -> dict[str, Row]:
    c, t = wire.chunk, wire.tool

    def same(
        whole: dict[str, Any], frames: list[Any], code: RuntimeFailureCode, detail: str
    ) -> Row:
        return Row(Reply.json(whole), Reply.sse(frames), code, detail)

    json_headers = [("Content-Type", "application/json")]
    rows: dict[str, Row] = {
        # HTTP 429: retry_after_ms from x-retry-after-ms, retry-after-ms, then Retry-After seconds.
        "429_x_retry_after_ms_wins": _status(
            429, RATE_LIMITED, ("x-retry-after-ms", "1500"), ("Retry-After", "9"), retry=1500
        ),
        "429_retry_after_ms_openai": _status(429, RATE_LIMITED, ("retry-after-ms", "40"), retry=40),
        "429_retry_after_seconds": _status(429, RATE_LIMITED, ("Retry-After", "3"), retry=3000),
        "429_unparsable_ms_falls_back": _status(
            429, RATE_LIMITED, ("x-retry-after-ms", "soon"), ("Retry-After", "2"), retry=2000
        ),
        "429_http_date_in_the_past": _status(
            429, RATE_LIMITED, ("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"), retry=0
        ),
        "429_gateway_forwarded_ms": _status(
            429, RATE_LIMITED, ("llm_provider-retry-after-ms", "700"), retry=700
        ),
        "429_no_hint": _status(429, RATE_LIMITED),
        # 5xx: unavailable, with the retry hint when the server gives one.
        "500": _status(500, UNAVAILABLE),
        "502": _status(502, UNAVAILABLE),
        "503_retry_after": _status(503, UNAVAILABLE, ("Retry-After", "3"), retry=3000),
        "504": _status(504, UNAVAILABLE),
        # Other 4xx (408 included) and redirects: permanent.
        "400": _status(400, PERMANENT),
        "401": _status(401, PERMANENT),
        "403": _status(403, PERMANENT),
        "404": _status(404, PERMANENT),
        "408": _status(408, PERMANENT),
        "422": _status(422, PERMANENT),
        "307_redirect": _status(
            307, PERMANENT, ("Location", "http://127.0.0.1:9/elsewhere"), detail=Detail.REDIRECT
        ),
        # Transport.
        "connect_refused": Row(None, None, UNAVAILABLE, Detail.CONNECT),
        "deadline_before_headers": Row(
            Reply.silence(),
            Reply.silence(),
            TIMEOUT,
            Detail.deadline(300),
            settings={"timeout_ms": 300},
        ),
        "deadline_mid_body": Row(
            Reply(headers=json_headers, chunks=[b'{"choices":'], framing="close", after="hang"),
            Reply.stream([sse_frame(c('{"ok":'))], after="hang"),
            TIMEOUT,
            Detail.deadline(300),
            settings={"timeout_ms": 300},
        ),
        "dropped_mid_body": Row(
            Reply(headers=json_headers, chunks=[b'{"choices":'], framing="chunked", after="drop"),
            Reply.sse([c('{"ok":')], done=False, after="drop"),
            UNAVAILABLE,
            Detail.DROPPED,
        ),
        # Undecodable answers: the paths name them differently (body vs event).
        "malformed_json": Row(
            Reply(body=f'{{"choices": [{MARKER}'.encode(), headers=json_headers),
            Reply.sse([c('{"ok":'), f"{{not json {MARKER}"]),
            INVALID,
            (Detail.NOT_COMPLETION, Detail.MALFORMED_EVENT),
        ),
        "wrong_field_types": Row(
            Reply.json({"choices": [{"index": 0, "message": {"content": 5}}]}),
            Reply.sse([{"choices": [{"index": 0, "delta": {"content": 5}}]}]),
            INVALID,
            (Detail.NOT_COMPLETION, Detail.MALFORMED_EVENT),
        ),
        "missing_choices": same({"choices": []}, [wire.usage_chunk()], INVALID, Detail.NO_CHOICES),
        "absent_choices": same(
            {"object": "chat.completion"},
            [{"object": "chat.completion.chunk"}],
            INVALID,
            Detail.NO_CHOICES,
        ),
        "no_content": same(
            wire.completion(None),
            [c(role="assistant"), c(finish="stop")],
            INVALID,
            Detail.NO_CONTENT,
        ),
        "unparseable_tool_arguments": same(
            wire.completion(
                None,
                finish="tool_calls",
                tool_calls=[wire.whole_tool_call("c", "f", f'{{"q": "{MARKER}')],
            ),
            [c(tool_calls=[t(0, id="c", name="f", args=f'{{"q": "{MARKER}')]), c(finish="stop")],
            INVALID,
            Detail.TOOL_ARGUMENTS,
        ),
        "content_not_json": same(
            wire.completion(f"Sure: {MARKER}"),
            wire.content_stream("Sure: ", MARKER),
            INVALID,
            Detail.NOT_JSON,
        ),
        "size_bound": Row(
            Reply.json(wire.completion("x" * 1200)),
            Reply.sse([c("x" * 600), c("y" * 600)]),
            INVALID,
            Detail.response_limit(1000),
            settings={"max_response_bytes": 1000},
        ),
        # DECISIONS 7b.
        "refusal": same(
            wire.completion(None, refusal=MARKER),
            [c(refusal=MARKER), c(finish="stop")],
            PERMANENT,
            Detail.REFUSED,
        ),
        "content_filter": same(
            wire.completion(f'{{"ok": "{MARKER}', finish="content_filter"),
            wire.content_stream(f'{{"ok": "{MARKER}', finish="content_filter"),
            PERMANENT,
            Detail.REFUSED,
        ),
        "structured_output_cut_at_length": same(
            wire.completion('{"ok":true}', finish="length"),
            wire.content_stream('{"ok":true}', finish="length"),
            INVALID,
            Detail.TRUNCATED,
        ),
    }
    for kind, code in (
        ("rate_limit_exceeded", RATE_LIMITED),
        ("invalid_request_error", PERMANENT),
        ("server_error", UNAVAILABLE),
    ):
        error = {"error": {"message": MARKER, "type": kind}}
        row = same(error, [error], code, Detail.IN_BAND_ERROR)
        rows[f"in_band_{kind}"] = Row(row.plain, row.streamed, code, row.detail, said=True)
    return rows


ROWS = [
    "429_x_retry_after_ms_wins",
    "429_retry_after_ms_openai",
    "429_retry_after_seconds",
    "429_unparsable_ms_falls_back",
    "429_http_date_in_the_past",
    "429_gateway_forwarded_ms",
    "429_no_hint",
    "500",
    "502",
    "503_retry_after",
    "504",
    "400",
    "401",
    "403",
    "404",
    "408",
    "422",
    "307_redirect",
    "connect_refused",
    "deadline_before_headers",
    "deadline_mid_body",
    "dropped_mid_body",
    "malformed_json",
    "wrong_field_types",
    "missing_choices",
    "absent_choices",
    "no_content",
    "unparseable_tool_arguments",
    "content_not_json",
    "size_bound",
    "refusal",
    "content_filter",
    "structured_output_cut_at_length",
    "in_band_rate_limit_exceeded",
    "in_band_invalid_request_error",
    "in_band_server_error",
]


def _closed_port() -> SimpleNamespace:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return SimpleNamespace(base_url=f"http://127.0.0.1:{port}")


def _failure_of(action: Callable[[], object]) -> RuntimeFailureError:
    with pytest.raises(RuntimeFailureError) as caught:
        action()
    return caught.value


def test_every_row_is_run(wire: SimpleNamespace) -> None:
    assert sorted(_rows(wire)) == sorted(ROWS)


@pytest.mark.parametrize("case", ROWS)
def test_failure_mapping_on_both_paths(
    case: str, twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    row = _rows(wire)[case]
    if row.plain is None or row.streamed is None:
        target: Any = _closed_port()
    else:
        target = serve([row.plain, row.streamed])
    runtime = runtime_for(target, **row.settings)
    details = row.detail if isinstance(row.detail, tuple) else (row.detail, row.detail)

    plain = _failure_of(lambda: twin.execute(runtime, wire.request()))
    sink = wire.Collector()
    streamed = _failure_of(lambda: twin.execute_streaming(runtime, wire.request(), sink))

    for error, detail in zip((plain, streamed), details, strict=True):
        failure = error.failure
        assert failure.code is row.code
        assert error.code == row.code.value
        assert failure.retryable is (row.code in RETRYABLE)
        assert failure.retry_after_ms == row.retry
        assert failure.detail == detail
        assert failure.adapter_id == "templiqx-runtime-openai"
        assert MARKER not in failure.detail
        assert (MARKER in str(error)) is row.said
        assert failure.provider_message == (MARKER if row.said else None)
        assert failure.server == urlsplit(target.base_url).netloc
        assert failure.remedy is not None
        assert error.help == failure.help_text() == failure.remedy
        for text in (str(error), repr(failure)):
            assert wire.CANARY_KEY not in text
    validate_event_order(sink.events)
    assert sink.events[-1] == Failed(code=streamed.code, message=str(streamed))
    if details[0] == details[1]:
        assert plain.failure == streamed.failure  # same fingerprint, too
    if not isinstance(target, SimpleNamespace):
        assert len(target.requests) == 2  # one request per call: no retry, no redirect followed


def test_cancellation_on_both_client_paths(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    """``execute`` takes no token (the port's signature); the client's non-streamed call does,
    and cancels like the streamed one: already set → nothing sent; set while the server is
    silent → ``TQX_RUNTIME_CANCELLED`` within a second."""
    server = serve(Reply.silence())
    runtime = runtime_for(server, timeout_ms=30_000)
    interaction = wire.interaction()
    done = threading.Event()
    done.set()
    plain = _failure_of(lambda: twin.complete(runtime.client, interaction, cancel=done))
    sink = wire.Collector()
    streamed = _failure_of(
        lambda: twin.execute_streaming(runtime, wire.request(), sink, cancel=done)
    )
    assert plain.failure == streamed.failure
    assert plain.failure.code is RuntimeFailureCode.CANCELLED
    assert plain.failure.detail == Detail.CANCELLED
    assert plain.failure.retryable is False
    assert sink.events == [Failed(code=streamed.code, message=str(streamed))]
    assert server.requests == []

    errors = []
    for call in (
        lambda token: twin.complete(runtime.client, interaction, cancel=token),
        lambda token: twin.execute_streaming(
            runtime, wire.request(), wire.Collector(), cancel=token
        ),
    ):
        token = threading.Event()
        threading.Timer(0.2, token.set).start()
        started = time.monotonic()
        errors.append(_failure_of(lambda: call(token)))  # noqa: B023
        assert time.monotonic() - started < 1.2
    assert errors[0].failure == errors[1].failure == plain.failure


def test_size_bound_is_inclusive_on_both_paths(
    twin: Twin, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    """``execute`` bounds the body, ``execute_streaming`` the assembled output (UTF-8 bytes):
    exactly the limit is accepted, one byte more is ``TQX_RUNTIME_INVALID_RESPONSE``."""
    limit = 1000

    def body(size: int) -> bytes:
        return ('{"choices":[{"index":0,"message":{"content":"%s"}}]}' % ("x" * size)).encode()

    fits = limit - len(body(0))
    json_headers = [("Content-Type", "application/json")]
    wide = "é" * 250  # 500 bytes in 250 characters
    server = serve(
        [
            Reply(body=body(fits), headers=json_headers),
            Reply.sse([wire.chunk(wide), wire.chunk("x" * 500), wire.chunk(finish="stop")]),
            Reply(body=body(fits + 1), headers=json_headers),
            Reply.sse([wire.chunk(wide), wire.chunk("x" * 501), wire.chunk(finish="stop")]),
        ]
    )
    runtime = runtime_for(server, max_response_bytes=limit)
    request = wire.request(structured=False, schema={"type": "string"})
    assert len(body(fits)) == limit
    assert twin.execute(runtime, request).output == "x" * fits
    assert twin.execute_streaming(runtime, request, wire.Collector()).output == wide + "x" * 500
    plain = _failure_of(lambda: twin.execute(runtime, request))
    sink = wire.Collector()
    streamed = _failure_of(lambda: twin.execute_streaming(runtime, request, sink))
    assert plain.failure == streamed.failure
    assert plain.failure.code is INVALID
    assert plain.failure.detail == Detail.response_limit(limit)
    assert sink.kinds == ["Delta", "Failed"]


@pytest.mark.parametrize("case", ROWS)
def test_the_twins_raise_identical_failures(
    case: str, serve: Serve, runtime_for: RuntimeFor, wire: SimpleNamespace
) -> None:
    """For the same loopback answers the sync and the async twin raise equal failures (code,
    detail, fingerprint, server message, remedy) with the same text, and end their streams in
    the same ``Failed``."""
    row = _rows(wire)[case]
    if row.plain is None or row.streamed is None:
        target: Any = _closed_port()
    else:
        target = serve([row.plain, row.streamed] * 2)  # one server, so one host:port
    failures: list[tuple[RuntimeFailureError, RuntimeFailureError, Failed]] = []
    for name in ("sync", "async"):
        twin = Twin(name)
        try:
            runtime = runtime_for(target, **row.settings)
            plain = _failure_of(lambda: twin.execute(runtime, wire.request()))  # noqa: B023
            sink = wire.Collector()
            streamed = _failure_of(
                lambda: twin.execute_streaming(runtime, wire.request(), sink)  # noqa: B023
            )
            failures.append((plain, streamed, sink.events[-1]))
        finally:
            twin.close()
    (sync_plain, sync_streamed, sync_failed), (async_plain, async_streamed, async_failed) = failures
    assert async_plain.failure == sync_plain.failure
    assert async_streamed.failure == sync_streamed.failure
    assert str(async_plain) == str(sync_plain)
    assert async_failed == sync_failed
