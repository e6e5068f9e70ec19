"""Failures people can act on (issue #15 items 1 and 3, DECISIONS 20).

One loopback test per failure class: the server plants the API key in its error body; the
failure must show the server's message with the key redacted, the status and ``host:port``,
and a help line saying what to check — naming the variable the setting came from — on both
paths, with the stream's ``Failed`` equal to the raised error. Then the sanitiser and the
retry-hint parser on their own.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest

from templiqx_conformance.loopback import LoopbackServer, Reply
from templiqx_contracts import Failed
from templiqx_ports import (
    PermanentFailureError,
    RateLimitedError,
    RuntimeFailureCode,
    RuntimeFailureError,
    RuntimeTimeoutError,
    RuntimeUnavailableError,
)
from templiqx_runtime_openai import Detail, OpenAIRuntime, retry_after_ms
from templiqx_runtime_openai.retry_hints import parse_duration_ms
from templiqx_runtime_openai.server_errors import Redactor, server_error

Serve = Callable[..., LoopbackServer]

KEY = "sk-proj-actionable-canary-9f3e2d1c"
ENV = {"MODEL_API_KEY": KEY, "MODEL_ID": "gpt-test", "MODEL_TIMEOUT_MS": "5000"}


def _said(text: str) -> dict[str, Any]:
    return {"error": {"message": text, "type": "invalid_request_error", "code": None}}


def _runtime(base_url: str, **env: str) -> OpenAIRuntime:
    return OpenAIRuntime.from_env({**ENV, "MODEL_BASE_URL": base_url, **env})


def _both(runtime: OpenAIRuntime, wire: SimpleNamespace) -> list[RuntimeFailureError]:
    """The error of ``execute`` and of ``execute_streaming`` (checked to end in its Failed)."""
    errors = []
    for streamed in (False, True):
        sink = wire.Collector()
        call = (
            (lambda sink=sink: runtime.execute_streaming(wire.request(), sink))
            if streamed
            else (lambda: runtime.execute(wire.request()))
        )
        with pytest.raises(RuntimeFailureError) as caught:
            call()
        error = caught.value
        if streamed:
            assert sink.events == [Failed(code=error.code, message=str(error))]
        for text in (str(error), repr(error.failure), error.help or ""):
            assert KEY not in text
        errors.append(error)
    assert errors[0].failure == errors[1].failure
    return errors


CLASSES: dict[str, tuple[Reply, type[RuntimeFailureError], str, list[str]]] = {
    "401 wrong key": (
        Reply.error(401, body=_said(f"Incorrect API key provided: {KEY}.")),
        PermanentFailureError,
        "Incorrect API key provided: [redacted].",
        ["did not accept the API key", "check MODEL_API_KEY", "model 'gpt-test'"],
    ),
    "403 forbidden": (
        Reply.error(403, body=_said(f"key {KEY[:12]}****{KEY[-4:]} may not use this model")),
        PermanentFailureError,
        "key [redacted] may not use this model",
        ["does not allow this request with the API key", "check MODEL_API_KEY"],
    ),
    "404 unknown model": (
        Reply.error(404, body=_said("Invalid model name passed in model=gpt-test")),
        PermanentFailureError,
        "Invalid model name passed in model=gpt-test",
        ["check MODEL_BASE_URL (now http://", "/chat/completions", "MODEL_ID (now 'gpt-test')"],
    ),
    "400 context window": (
        Reply.error(
            400,
            body={
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),
        PermanentFailureError,
        "This model's maximum context length is 8192 tokens.",
        ["context window", "shorten the input", "runtime_policy.max_tokens"],
    ),
    "400 other": (
        Reply.error(400, body={"detail": f"response_format is not supported ({KEY})"}),
        PermanentFailureError,
        "response_format is not supported ([redacted])",
        ["refused the request (HTTP 400)", "output_schema"],
    ),
    "429 with hint": (
        Reply.error(429, headers=[("retry-after-ms", "1250")], body=_said("Slow down")),
        RateLimitedError,
        "Slow down",
        ["rate limiting", "retry after 1250 ms"],
    ),
    "503 text body": (
        Reply(
            status=503,
            headers=(("Content-Type", "text/plain"),),
            body="upstream overloaded\x1b[31m\r\n\u202etry later".encode(),
        ),
        RuntimeUnavailableError,
        "upstream overloaded[31m try later",
        ["failed (HTTP 503)", "retry later (the server sent no retry hint)"],
    ),
}


@pytest.mark.parametrize("case", list(CLASSES))
def test_each_failure_class_shows_the_server_message_and_what_to_check(
    case: str, serve: Serve, wire: SimpleNamespace
) -> None:
    reply, kind, shown, remedy = CLASSES[case]
    server = serve(reply)
    runtime = _runtime(server.base_url)
    for error in _both(runtime, wire):
        failure = error.failure
        assert isinstance(error, kind)
        status = int(case[:3])
        assert failure.status == status
        assert failure.server == urlsplit(server.base_url).netloc
        assert failure.provider_message == shown
        assert str(error).endswith(f'({failure.server}): "{shown}"')
        assert failure.detail.startswith(f"model server returned HTTP {status}")
        assert error.help == failure.remedy
        for phrase in remedy:
            assert phrase in (failure.remedy or ""), (phrase, failure.remedy)
        assert "fingerprint=" not in (failure.remedy or "")  # no internal key=value dump
    runtime.close()


def test_a_context_window_error_has_its_own_detail_and_fingerprint(
    serve: Serve, wire: SimpleNamespace
) -> None:
    context = CLASSES["400 context window"][0]
    other = CLASSES["400 other"][0]
    server = serve([context, context, other, other])
    runtime = _runtime(server.base_url)
    first, _ = _both(runtime, wire)
    second, _ = _both(runtime, wire)
    assert first.failure.detail == Detail.context_window(400)
    assert second.failure.detail == Detail.http_status(400)
    assert first.failure.fingerprint != second.failure.fingerprint
    runtime.close()


def test_the_fallback_key_variable_is_the_one_named(serve: Serve, wire: SimpleNamespace) -> None:
    server = serve(Reply.error(401, body=_said("no")))
    env = {"MODEL_ID": "gpt-test", "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
    runtime = OpenAIRuntime.from_env(env)
    error = _both(runtime, wire)[0]
    assert "check OPENAI_API_KEY (used because MODEL_API_KEY is not set)" in (error.help or "")
    runtime.close()


def test_connection_refused_names_the_url_it_tried(wire: SimpleNamespace) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runtime = _runtime(f"http://127.0.0.1:{port}/v1")
    error = _both(runtime, wire)[0]
    assert isinstance(error, RuntimeUnavailableError)
    assert str(error) == (
        f"runtime failure TQX_RUNTIME_UNAVAILABLE: {Detail.CONNECT} (127.0.0.1:{port})"
    )
    assert error.help == (
        f"could not reach http://127.0.0.1:{port}/v1/chat/completions: check MODEL_BASE_URL "
        f"(now http://127.0.0.1:{port}/v1) and that the server is running and reachable from here"
    )


def test_tls_against_a_plain_server_names_the_scheme(serve: Serve, wire: SimpleNamespace) -> None:
    server = serve(Reply.json({}))
    runtime = _runtime(server.base_url.replace("http://", "https://"))
    error = _both(runtime, wire)[0]
    assert error.failure.detail == Detail.TLS
    assert "uses the scheme the server speaks" in (error.help or "")


def test_a_deadline_names_the_timeout_variable(serve: Serve, wire: SimpleNamespace) -> None:
    server = serve(Reply.silence())
    runtime = _runtime(server.base_url, MODEL_TIMEOUT_MS="300")
    error = _both(runtime, wire)[0]
    assert isinstance(error, RuntimeTimeoutError)
    assert "raise MODEL_TIMEOUT_MS (now 300)" in (error.help or "")


def test_an_in_band_error_shows_its_message(serve: Serve, wire: SimpleNamespace) -> None:
    error_event = {"error": {"message": f"overloaded, key {KEY}", "type": "server_error"}}
    server = serve(Reply.sse([wire.chunk('{"ok":'), error_event]))
    runtime = _runtime(server.base_url)
    sink = wire.Collector()
    with pytest.raises(RuntimeUnavailableError) as caught:
        runtime.execute_streaming(wire.request(), sink)
    assert caught.value.failure.provider_message == "overloaded, key [redacted]"
    assert caught.value.failure.detail == Detail.IN_BAND_ERROR
    assert sink.kinds == ["Delta", "Failed"]


def test_refusal_text_is_never_shown(serve: Serve, wire: SimpleNamespace) -> None:
    refusal = "I will not, REFUSAL-TEXT"
    server = serve(
        [
            Reply.json(wire.completion(None, refusal=refusal)),
            Reply.sse([wire.chunk(refusal=refusal), wire.chunk(finish="stop")]),
        ]
    )
    runtime = _runtime(server.base_url)
    error = _both(runtime, wire)[0]
    assert error.failure.provider_message is None
    assert "REFUSAL-TEXT" not in str(error)
    assert "refused to answer" in (error.help or "")


# --- the sanitiser ------------------------------------------------------------------------


def test_redactor_removes_controls_secrets_and_caps_the_length() -> None:
    redactor = Redactor([KEY, "lf-secret-short"])
    assert redactor.clean("a\x00b\x07c\u200bd\u202ee\nf\tg") == "abcde f g"
    assert redactor.clean(f"key={KEY}; again {KEY}") == "key=[redacted]; again [redacted]"
    # A masked copy sharing 8+ characters with a secret is redacted whole.
    assert redactor.clean(f"got {KEY[:10]}*****{KEY[-4:]} here") == "got [redacted] here"
    assert redactor.clean("uses lf-secret-short.") == "uses [redacted]."
    long = redactor.clean("x" * 280 + " " + KEY + " " + "y" * 500)
    assert long is not None
    assert len(long) == 300
    assert long.endswith("…")
    assert KEY[:8] not in long
    assert redactor.clean("\x00\x01 \n") is None
    assert redactor.clean(None) is None
    assert KEY not in repr(redactor)


@pytest.mark.parametrize(
    ("body", "content_type", "message", "code"),
    [
        (b'{"error": {"message": "m", "code": "c", "type": "t"}}', "", "m", "c"),
        (b'{"error": "plain string"}', "application/json", "plain string", None),
        (b'{"message": "top level"}', "", "top level", None),
        (b'{"detail": "fastapi style"}', "", "fastapi style", None),
        (b'{"error": {"code": 429}}', "", None, "429"),
        (b"[1, 2]", "", None, None),
        (b"<html><body>502 Bad Gateway</body></html>", "text/html", None, None),
        (b"short text", "text/plain", "short text", None),
        (b"", "", None, None),
        (b"{not json", "application/json", "{not json", None),
    ],
)
def test_server_error_finds_the_message(
    body: bytes, content_type: str, message: str | None, code: str | None
) -> None:
    said = server_error(body, content_type)
    assert (said.message, said.code) == (message, code)


# --- retry hints --------------------------------------------------------------------------


class Headers(dict[str, str]):
    """Case-insensitive lookups, as ``requests`` headers do."""

    def get(self, key: str, default: object = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower())


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "40"}, 40),
        ({"x-retry-after-ms": "250", "retry-after-ms": "40"}, 250),
        ({"llm_provider-retry-after-ms": "700"}, 700),
        ({"retry-after-ms": "soon", "llm_provider-retry-after-ms": "700"}, 700),
        ({"retry-after": "3"}, 3000),
        ({"llm_provider-retry-after": "2"}, 2000),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:25 GMT"}, 5000),
        ({"retry-after": "Tue, 14 Nov 2023 22:13:00 GMT"}, 0),  # in the past
        ({"retry-after": "Tue, 14 Nov 2023 22:13:25"}, None),  # no zone: not HTTP-date
        ({"retry-after": "later"}, None),
        ({"retry-after": "86401"}, None),  # over a day: not a hint to follow
        (
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m30.5s"},
            90_500,
        ),
        (
            {
                "x-ratelimit-remaining-requests": "10",
                "x-ratelimit-reset-requests": "2s",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "250ms",
            },
            250,
        ),
        (
            {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "2s",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "6m0s",
            },
            360_000,
        ),
        # Ambiguous: which limit was hit is not said, or the reset is a bare number.
        ({"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "9s"}, None),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1700000"}, None),
        (
            {
                "llm_provider-x-ratelimit-remaining-tokens": "0",
                "llm_provider-x-ratelimit-reset-tokens": "1s",
            },
            1000,
        ),
        ({"retry-after": "1", "x-ratelimit-remaining-tokens": "0"}, 1000),
        ({}, None),
    ],
)
def test_retry_hint_variants(headers: dict[str, str], expected: int | None) -> None:
    assert retry_after_ms(Headers({k.lower(): v for k, v in headers.items()}), now=NOW) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1s", 1000),
        ("6m0s", 360_000),
        ("1h2m", 3_720_000),
        ("0.5s", 500),
        ("250ms", 250),
        ("1500us", 2),
        ("s", None),
        ("5", None),
        ("1x", None),
        ("1s junk", None),
        ("", None),
    ],
)
def test_parse_duration(text: str, expected: int | None) -> None:
    assert parse_duration_ms(text) == expected


def test_gateway_retry_headers_reach_the_failure(serve: Serve, wire: SimpleNamespace) -> None:
    reply = Reply.error(
        429, headers=[("llm_provider-retry-after", "4")], body=_said("rate limit exceeded")
    )
    server = serve(reply)
    runtime = _runtime(server.base_url)
    for error in _both(runtime, wire):
        assert error.failure.code is RuntimeFailureCode.RATE_LIMITED
        assert error.failure.retry_after_ms == 4000
        assert "retry after 4000 ms" in (error.help or "")
