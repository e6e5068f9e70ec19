"""The failure half of the OpenAI transport suite: faults, truncation, in-band errors, bounds.

Every case is driven through ``execute`` and ``execute_streaming`` alike: the raised error must
carry the stable code for the fault, the stream must end in exactly one ``Failed`` equal to it,
one call must be one HTTP request (adapters never retry), and no failure may repeat the
provider's own words (the kit plants :data:`~templiqx_conformance.openai_rig.CANARY` in every
provider payload it sends).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from typing import Any

from templiqx_conformance.context import CheckContext
from templiqx_conformance.core_checks import check_failed_stream
from templiqx_conformance.loopback import RecordedRequest, Reply, filler
from templiqx_conformance.openai_rig import (
    CANARY,
    IN_BAND_DELTAS,
    MAX_LINE_BYTES,
    MAX_RESPONSE_BYTES,
    MAX_STREAM_BYTES,
    RUNTIME_CODES,
    declares,
    fail_if,
    in_band_error,
    is_stream_request,
    main_probe,
    request_for,
    rig_of,
    served_for,
)
from templiqx_conformance.openai_streams import (
    ServedCompletion,
    completion,
    content_completion,
    fragments,
    stream_bytes,
    stream_chunk,
)
from templiqx_conformance.probes import STRUCTURED_OUTPUT
from templiqx_conformance.recording import Outcome, describe_error, run_execute, run_streaming
from templiqx_contracts import Delta, Failed
from templiqx_ports import PortError, RuntimeAdapter, RuntimeFailureCode

__all__ = [
    "check_fault_matrix",
    "check_in_band_error",
    "check_size_bounds",
    "check_truncation",
]


def _no_canary(
    label: str, error: BaseException | None, events: Iterable[Any], *, error_message: bool = False
) -> list[str]:
    """Problems if the failure repeats the planted canary.

    ``error_message``: the canary was planted as the server's own *error message*, which a
    failure's message may show sanitised (DECISIONS 20); then only the fixed ``detail`` (which
    feeds the failure fingerprint) must be free of it. Anywhere else (refusals, content) the
    provider's words must not appear at all.
    """
    texts: list[str] = []
    failure = getattr(error, "failure", None)
    if failure is not None:
        texts.append(str(getattr(failure, "detail", "")))
    if not error_message:
        texts.extend([str(error)] if error is not None else [])
        texts.extend(event.message for event in events if isinstance(event, Failed))
    if any(CANARY in text for text in texts):
        return [
            f"{label}: the failure repeats the provider's own text; failure messages must not "
            "echo provider payloads (they may carry prompt or output fragments)"
        ]
    return []


# --- checks -------------------------------------------------------------------------------


def check_in_band_error(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = main_probe(ctx)
    served = in_band_error()
    rig.serve_completion(served)
    problems: list[str] = []
    executed = run_execute(ctx.new_adapter(), request_for(probe.interaction), ctx.timeout)
    execute_code = _runtime_failure("execute", executed, problems)
    problems.extend(_no_canary("execute", executed.error, [], error_message=True))
    adapter = ctx.new_adapter()
    outcome = run_streaming(adapter, request_for(probe.interaction), ctx.timeout, grace=0.05)
    found, error = check_failed_stream("execute_streaming", outcome, execute_code)
    problems.extend(found)
    problems.extend(_no_canary("execute_streaming", error, outcome.events, error_message=True))
    if error is not None and error.code not in RUNTIME_CODES:
        problems.append(f"execute_streaming: {error.code!r} is not a runtime failure code")
    deltas = [event for event in outcome.events if isinstance(event, Delta)]
    streams = type(adapter).execute_streaming is not RuntimeAdapter.execute_streaming
    expected = IN_BAND_DELTAS if streams else 0
    if len(deltas) != expected:
        problems.append(
            f"execute_streaming: {len(deltas)} delta(s) before the error, expected {expected}"
        )
    fail_if(
        'an in-band {"error": ...} must fail the call with a runtime code: deltas so far, then one '
        "Failed equal to the raised error (the same code execute raises)",
        problems,
    )


def _runtime_failure(label: str, outcome: Outcome, problems: list[str]) -> str | None:
    if outcome.timed_out:
        problems.append(f"{label}: still running after the call deadline")
        return None
    if outcome.error is None:
        problems.append(f"{label}: returned {type(outcome.result).__name__} instead of failing")
        return None
    if not isinstance(outcome.error, PortError):
        problems.append(
            f"{label}: raised {describe_error(outcome.error)}, not a templiqx_ports.PortError"
        )
        return None
    if outcome.error.code not in RUNTIME_CODES:
        problems.append(f"{label}: code {outcome.error.code!r} is not a runtime failure code")
    return outcome.error.code


def check_truncation(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = main_probe(ctx)
    served = served_for(probe)
    open_frames = [
        stream_chunk({"role": "assistant", "content": "", "refusal": None}),
        *(stream_chunk({"content": piece}) for piece in fragments(probe.content)[:3]),
    ]
    writes = stream_bytes(open_frames)
    cases = [
        ("connection dropped mid-stream", Reply.stream(writes, after="drop")),
        ("stream ended without finish_reason or [DONE]", Reply.stream(writes)),
        ("close-delimited stream ended early", Reply.stream(writes, framing="close")),
    ]
    problems: list[str] = []
    if type(ctx.new_adapter()).execute_streaming is RuntimeAdapter.execute_streaming:
        cases = []  # a default-streaming adapter never asks for a stream: only execute applies
    for label, reply in cases:

        def responder(request: RecordedRequest, reply: Reply = reply) -> Reply:
            return reply if is_stream_request(request) else Reply.json(served.whole)

        rig.respond(responder)
        outcome = run_streaming(
            ctx.new_adapter(), request_for(probe.interaction), ctx.timeout, grace=0.05
        )
        if outcome.timed_out:
            problems.append(f"{label}: still running after the call deadline")
            continue
        found, error = check_failed_stream(label, outcome, None)
        problems.extend(found)
        if error is not None and error.code not in RUNTIME_CODES:
            problems.append(f"{label}: {error.code!r} is not a runtime failure code")
    half = Reply(
        status=200,
        headers=(("Content-Type", "application/json"),),
        chunks=[b'{"id":"chatcmpl-x","choices":[{"index":0,"message":{"role":"assis'],
        framing="close",
    )
    rig.reply_always(half)
    executed = run_execute(ctx.new_adapter(), request_for(probe.interaction), ctx.timeout)
    _runtime_failure("execute of a body cut short", executed, problems)
    fail_if(
        "a truncated response must fail (one Failed, no Complete) with a runtime code",
        problems,
    )


def _fault_cases(ctx: CheckContext) -> list[tuple[str, Callable[[], None], str, int | None]]:
    rig = rig_of(ctx)
    body = {"error": {"message": CANARY, "type": "invalid_request_error", "code": None}}
    structured = declares(ctx, STRUCTURED_OUTPUT)

    def always(reply: Reply) -> Callable[[], None]:
        return lambda: rig.reply_always(reply)

    def completion_of(served: ServedCompletion) -> Callable[[], None]:
        return lambda: rig.serve_completion(served)

    cases: list[tuple[str, Callable[[], None], str, int | None]] = [
        (
            "HTTP 429 with Retry-After: 3",
            always(Reply.error(429, headers=[("Retry-After", "3")], body=body)),
            RuntimeFailureCode.RATE_LIMITED.value,
            3000,
        ),
    ]
    for status in (500, 502, 503):
        cases.append(
            (
                f"HTTP {status}",
                always(Reply.error(status, body=body)),
                RuntimeFailureCode.UNAVAILABLE.value,
                None,
            )
        )
    for status in (400, 401, 403, 404):
        cases.append(
            (
                f"HTTP {status}",
                always(Reply.error(status, body=body)),
                RuntimeFailureCode.PERMANENT.value,
                None,
            )
        )

    def malformed(request: RecordedRequest) -> Reply:
        if is_stream_request(request):
            return Reply.stream([b'data: {"choices": [{"index": 0, "delta": {"cont\n\n'])
        return Reply(
            status=200,
            headers=(("Content-Type", "application/json"),),
            body=b'{"choices": [{"index": 0, "message": {"cont',
        )

    invalid = RuntimeFailureCode.INVALID_RESPONSE.value
    permanent = RuntimeFailureCode.PERMANENT.value
    no_choices = ServedCompletion(
        name="no-choices",
        whole={**completion({"content": "x"}, "stop"), "choices": []},
        frames=(stream_chunk(None, usage=None, empty_choices=True), "[DONE]"),
        deltas=(),
        output=None,
    )
    refusal = ServedCompletion(
        name="refusal",
        whole=completion({"content": None, "refusal": CANARY}, "stop"),
        frames=(
            stream_chunk({"role": "assistant", "content": None, "refusal": ""}),
            *(stream_chunk({"refusal": piece}) for piece in fragments(CANARY)),
            stream_chunk({}, finish_reason="stop"),
            "[DONE]",
        ),
        deltas=(),
        output=None,
    )
    cases.extend(
        [
            ("malformed JSON", lambda: rig.respond(malformed), invalid, None),
            ("no choices", completion_of(no_choices), invalid, None),
            ("refusal", completion_of(refusal), permanent, None),
            (
                "finish_reason content_filter",
                completion_of(
                    content_completion("filtered", '{"ok":', None, finish_reason="content_filter")
                ),
                permanent,
                None,
            ),
        ]
    )
    if structured:
        cases.extend(
            [
                (
                    "structured content that is not JSON",
                    completion_of(content_completion("prose", "Sure! Here it is.", None)),
                    invalid,
                    None,
                ),
                (
                    "structured output cut at the token limit",
                    completion_of(
                        content_completion(
                            "cut", '{"note": "conformant, but', None, finish_reason="length"
                        )
                    ),
                    invalid,
                    None,
                ),
            ]
        )
    return cases


def check_fault_matrix(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = main_probe(ctx)
    request = request_for(probe.interaction)
    problems: list[str] = []
    for label, arrange, code, retry_after in _fault_cases(ctx):
        for mode in ("execute", "execute_streaming"):
            arrange()
            before = len(rig.server.requests)
            adapter = ctx.new_adapter()
            name = f"{label} via {mode}"
            if mode == "execute":
                outcome = run_execute(adapter, request, ctx.timeout)
                raised = _runtime_failure(name, outcome, problems)
                if raised is not None and raised != code:
                    problems.append(f"{name}: raised {raised!r}, expected {code!r}")
                error: BaseException | None = outcome.error
            else:
                outcome = run_streaming(adapter, request, ctx.timeout, grace=0.05)
                if outcome.timed_out:
                    problems.append(f"{name}: still running after the call deadline")
                    continue
                found, error = check_failed_stream(name, outcome, code)
                problems.extend(found)
            shown = label.startswith("HTTP ")  # the canary is the error body's message
            problems.extend(_no_canary(name, error, outcome.events, error_message=shown))
            if retry_after is not None and error is not None:
                failure = getattr(error, "failure", None)
                got = getattr(failure, "retry_after_ms", None)
                if got != retry_after:
                    problems.append(f"{name}: retry_after_ms is {got!r}, expected {retry_after}")
            sent = len(rig.server.requests) - before
            if sent != 1:
                problems.append(f"{name}: {sent} HTTP requests for one call (adapters never retry)")
    problems.extend(_connection_refused(ctx, request))
    fail_if(
        "each provider failure must map to its stable code, identically for execute and "
        "execute_streaming, with no retry and no provider text in the message",
        problems,
    )


def _connection_refused(ctx: CheckContext, request: Any) -> list[str]:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    rig = rig_of(ctx)
    problems: list[str] = []
    for mode in ("execute", "execute_streaming"):
        adapter = ctx.require_adapter(
            rig.make_adapter_for(f"http://127.0.0.1:{port}/v1"), "the adapter factory"
        )
        name = f"connection refused via {mode}"
        if mode == "execute":
            outcome = run_execute(adapter, request, ctx.timeout)
            raised = _runtime_failure(name, outcome, problems)
            if raised is not None and raised != RuntimeFailureCode.UNAVAILABLE.value:
                problems.append(f"{name}: raised {raised!r}, expected TQX_RUNTIME_UNAVAILABLE")
        else:
            outcome = run_streaming(adapter, request, ctx.timeout)
            found, _ = check_failed_stream(name, outcome, RuntimeFailureCode.UNAVAILABLE.value)
            problems.extend(found)
    return problems


def check_size_bounds(ctx: CheckContext) -> None:
    rig = rig_of(ctx)
    probe = main_probe(ctx)
    request = request_for(probe.interaction)
    invalid = RuntimeFailureCode.INVALID_RESPONSE.value
    head = (
        b'{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"'
    )
    big_body = Reply(
        status=200,
        headers=(("Content-Type", "application/json"),),
        chunks=list(filler(MAX_RESPONSE_BYTES + 1, prefix=head)),
        framing="length",
    )
    piece = "a" * 65_536
    many = [stream_chunk({"role": "assistant", "content": ""})]
    many.extend(stream_chunk({"content": piece}) for _ in range(MAX_RESPONSE_BYTES // 65_536 + 2))
    long_line = list(
        filler(MAX_LINE_BYTES + 65_536, prefix=b'data: {"choices":[{"index":0,"delta":{"content":"')
    )
    keepalive = (b": " + b"k" * 1_000 + b"\n\n") * 64
    flood = [keepalive] * (MAX_STREAM_BYTES // len(keepalive) + 2)
    cases: list[tuple[str, str, Reply, str]] = [
        ("a non-streamed body over 2097152 bytes", "execute", big_body, str(MAX_RESPONSE_BYTES)),
        (
            "a stream whose content exceeds 2097152 bytes",
            "execute_streaming",
            Reply.stream(stream_bytes(many)),
            str(MAX_RESPONSE_BYTES),
        ),
        (
            "one event-stream line over 1048576 bytes",
            "execute_streaming",
            Reply.stream(long_line),
            str(MAX_LINE_BYTES),
        ),
        (
            "a stream over 67108864 raw bytes",
            "execute_streaming",
            Reply.stream(flood),
            str(MAX_STREAM_BYTES),
        ),
    ]
    problems: list[str] = []
    for label, mode, reply, limit in cases:
        rig.reply_always(reply)
        adapter = ctx.new_adapter()
        if mode == "execute_streaming" and (
            type(adapter).execute_streaming is RuntimeAdapter.execute_streaming
        ):
            continue  # a default-streaming adapter never asks for a stream
        if mode == "execute":
            outcome = run_execute(adapter, request, ctx.timeout)
            raised = _runtime_failure(label, outcome, problems)
            error = outcome.error
            if raised is not None and raised != invalid:
                problems.append(f"{label}: raised {raised!r}, expected {invalid!r}")
        else:
            outcome = run_streaming(adapter, request, ctx.timeout)
            if outcome.timed_out:
                problems.append(f"{label}: still running after the call deadline")
                continue
            found, error = check_failed_stream(label, outcome, invalid)
            problems.extend(found)
        if error is not None and limit not in str(error):
            problems.append(f"{label}: the message {str(error)!r} must name the {limit} byte limit")
    fail_if(
        "responses are bounded (DECISIONS 9): exceeding a limit is TQX_RUNTIME_INVALID_RESPONSE "
        "naming the limit",
        problems,
    )
