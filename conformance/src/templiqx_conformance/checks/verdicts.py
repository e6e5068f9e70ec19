"""The rules the checks share: what a stream, a failure, a cancellation and a leak look like.

Each function looks at what one adapter call did (an :class:`~templiqx_conformance.rig.calls.
Outcome`) and returns the problems, one line each, worded for the adapter's author: what was
seen, what must hold instead, and what to change.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import msgspec

from templiqx_conformance.checks.context import show
from templiqx_conformance.rig.calls import Outcome, describe_error
from templiqx_conformance.wires.answer import WholeCall
from templiqx_contracts import Complete, Delta, Failed, ToolCallDelta, canonical_json
from templiqx_ports import (
    EventOrderError,
    PortError,
    RuntimeFailureCode,
    validate_event_order,
)

__all__ = [
    "CANCEL_DEADLINE",
    "CANCEL_PATIENCE",
    "cancel_cutoff",
    "check_cancelled",
    "check_failed_stream",
    "delta_content_problems",
    "delta_sequence_problem",
    "event_kinds",
    "exposed_texts",
    "leak_problems",
    "order_problems",
    "short_note",
]

CANCEL_DEADLINE: Final = 1.0
"""Seconds within which a set cancel token must end a stream (DECISIONS 6)."""
CANCEL_PATIENCE: Final = CANCEL_DEADLINE + 0.5
"""How long after setting a token the kit waits before reporting the adapter as deaf to it."""


def cancel_cutoff(set_at: list[float]) -> Callable[[], float | None]:
    """A ``cutoff`` for :func:`~templiqx_conformance.recording.run_streaming`: give up
    :data:`CANCEL_PATIENCE` seconds after the token was set (``set_at`` gets that moment)."""
    return lambda: set_at[0] + CANCEL_PATIENCE if set_at else None


def event_kinds(events: Sequence[Any]) -> str:
    """``[Delta, Delta, Complete]`` — the shape of a stream for a failure message."""
    return "[" + ", ".join(type(event).__name__ for event in events) + "]"


# --- order -------------------------------------------------------------------------------------


def order_problems(label: str, outcome: Outcome) -> list[str]:
    """Problems with a stream's grammar: deltas, then exactly one terminal event, nothing after."""
    problems = []
    try:
        validate_event_order(outcome.events)
    except EventOrderError as exc:
        problems.append(
            f"{label}: {exc}; events {event_kinds(outcome.events)}: emit deltas, then exactly "
            "one Complete (success) or one Failed (failure) as the last event"
        )
    if outcome.late_events:
        problems.append(
            f"{label}: the sink received {event_kinds(outcome.late_events)} after "
            "execute_streaming had ended; nothing may follow the terminal event"
        )
    if outcome.events:
        last = outcome.events[-1]
        if outcome.error is None and isinstance(last, Failed):
            problems.append(f"{label}: execute_streaming returned but the stream ended in Failed")
        if outcome.error is not None and isinstance(last, Complete):
            problems.append(
                f"{label}: execute_streaming raised {describe_error(outcome.error)} but the stream "
                "ended in Complete"
            )
    return problems


# --- content -----------------------------------------------------------------------------------


def _plain(event: Any) -> Any:
    if isinstance(event, Delta):
        return {"kind": "Delta", "text": event.text}
    if isinstance(event, ToolCallDelta):
        return {"kind": "ToolCallDelta", "name": event.name, "arguments": event.arguments_fragment}
    if isinstance(event, WholeCall):
        return {"kind": "ToolCallDelta", "name": event.name, "arguments (parsed)": event.arguments}
    return type(event).__name__


def _matches(got: Any, expected: Any) -> bool:
    return expected.matches(got) if isinstance(expected, WholeCall) else bool(got == expected)


def delta_sequence_problem(got: Sequence[Any], expected: Sequence[Any]) -> str | None:
    """Why ``got`` is not the delta sequence ``expected`` (``None`` when it is).

    ``expected`` may hold :class:`~templiqx_conformance.wires.answer.WholeCall` values, which
    match a ``ToolCallDelta`` by name and parsed arguments.
    """
    if len(got) == len(expected) and all(map(_matches, got, expected)):
        return None
    for index, (a, b) in enumerate(zip(got, expected, strict=False)):
        if not _matches(a, b):
            return (
                f"delta {index} is {show(_plain(a))}, expected {show(_plain(b))} "
                "(one delta per non-empty fragment, in arrival order, none dropped or reordered)"
            )
    if len(got) < len(expected):
        missing = [show(_plain(event)) for event in expected[len(got) :]]
        return (
            f"{len(got)} delta event(s) where the stream carried {len(expected)} non-empty "
            f"fragment(s): the last {len(missing)} ({', '.join(missing[:3])}) never became a "
            "delta — emit one delta per fragment, up to the stream's end"
        )
    return (
        f"{len(got)} delta event(s) where the stream carried {len(expected)} non-empty "
        "fragment(s) (one delta per non-empty fragment, nothing repeated)"
    )


def short_note(joined: str, answers: Sequence[str]) -> str:
    """When the delta texts ``joined`` stop short of one of ``answers``: a sentence saying what
    never arrived and what to change (else empty)."""
    for answer in answers if joined else ():
        if joined != answer and answer.startswith(joined):
            missing = answer[len(joined) :]
            return (
                f"; the deltas stop short of the answer: {show(missing)} never arrived — the "
                "end of the stream was dropped (read to the stream's final event and emit every "
                "fragment before it)"
            )
    return ""


def _json_values(text: str) -> list[Any] | None:
    """The JSON values written one after another in ``text`` (``None`` if it is not that)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index == len(text):
            return values
        try:
            value, index = decoder.raw_decode(text, index)
        except ValueError:
            return None
        values.append(value)


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


def _tool_call_problems(label: str, calls: list[ToolCallDelta], output: Any) -> list[str]:
    receipt_calls = output.get("tool_calls") if isinstance(output, dict) else None
    if not isinstance(receipt_calls, list):
        return [
            f"{label}: the stream carried ToolCallDeltas but the output {show(output)} is not "
            '{"tool_calls": [...]} (DECISIONS 7)'
        ]
    streamed: dict[str, str] = {}
    for event in calls:
        streamed[event.name] = streamed.get(event.name, "") + event.arguments_fragment
    problems = []
    for name, raw in streamed.items():
        expected = [
            call.get("arguments")
            for call in receipt_calls
            if isinstance(call, dict) and call.get("name") == name
        ]
        values = _json_values(raw)
        if values is None:
            problems.append(
                f"{label}: the fragments of tool call {name!r} join to {show(raw)}, which is not "
                "JSON; each call's fragments must assemble to its arguments"
            )
        elif not _same(values, expected):
            problems.append(
                f"{label}: the fragments of tool call {name!r} assemble to {show(values)} but the "
                f"receipt carries arguments {show(expected)}; a receipt's arguments must be the "
                "parsed JSON of the joined fragments"
            )
    for call in receipt_calls:
        called = call.get("name") if isinstance(call, dict) else None
        if not isinstance(called, str) or called not in streamed:
            problems.append(
                f"{label}: the receipt's tool call {called!r} was never streamed as ToolCallDelta"
            )
    return problems


def delta_content_problems(
    label: str, events: Sequence[Any], output: Any, answers: Sequence[str] = ()
) -> list[str]:
    """Problems with what a successful stream's deltas say, compared with its receipt's output.

    Joined ``Delta`` texts must equal a text output, or parse to a structured one; the
    ``ToolCallDelta`` fragments of each call must assemble to that call's arguments. A stream
    with no delta at all is not judged here. ``answers`` are texts the deltas may have been
    meant to spell (to say what went missing when they stop short).
    """
    calls = [event for event in events if isinstance(event, ToolCallDelta)]
    if calls:
        return _tool_call_problems(label, calls, output)
    texts = [event.text for event in events if isinstance(event, Delta)]
    if not texts:
        return []
    joined = "".join(texts)
    if isinstance(output, str):
        if joined == output:
            return []
        return [
            f"{label}: the Delta texts join to {show(joined)} but the output is {show(output)}; "
            "deltas must carry the whole answer in order, none dropped, reordered or repeated"
            + short_note(joined, [output, *answers])
        ]
    values = _json_values(joined)
    if values is not None and len(values) == 1 and _same(values[0], output):
        return []
    return [
        f"{label}: the Delta texts join to {show(joined)}, which does not parse to the output "
        f"{show(output)}; deltas must carry the answer's JSON text in order, none dropped, "
        "reordered or repeated (structured output delivered as a forced tool call streams as "
        "Delta too)" + short_note(joined, [show(output, 10**9), *answers])
    ]


# --- failures ----------------------------------------------------------------------------------


def check_failed_stream(
    label: str, outcome: Outcome, expected_code: str | None
) -> tuple[list[str], PortError | None]:
    """Problems with a stream that had to fail: the projection must equal the raised error."""
    problems = order_problems(label, outcome)
    error = outcome.error
    if error is None:
        problems.append(
            f"{label}: execute_streaming must raise the failure, but it returned "
            f"{type(outcome.result).__name__} with events {event_kinds(outcome.events)}"
        )
        return problems, None
    if not isinstance(error, PortError):
        problems.append(
            f"{label}: adapters must raise templiqx_ports.PortError subclasses, "
            f"got {describe_error(error)}"
        )
        return problems, None
    if expected_code is not None and error.code != expected_code:
        problems.append(f"{label}: raised code {error.code!r}, expected {expected_code!r}")
    failed = [event for event in outcome.events if isinstance(event, Failed)]
    if not failed:
        problems.append(
            f"{label}: exactly one Failed must be emitted, got 0 in "
            f"{event_kinds(outcome.events)}: before raising, send "
            "templiqx_ports.failed_event(error) to the sink — also once deltas went out"
        )
    elif len(failed) > 1:
        problems.append(
            f"{label}: exactly one Failed must be emitted, got {len(failed)} in "
            f"{event_kinds(outcome.events)}"
        )
    for event in failed:
        if event.code != error.code:
            problems.append(
                f"{label}: Failed.code {event.code!r} must equal the raised error's code "
                f"{error.code!r}"
            )
        if event.message != str(error):
            problems.append(
                f"{label}: Failed.message {event.message!r} must equal str(raised error) "
                f"{str(error)!r}"
            )
    return problems, error


def check_cancelled(label: str, outcome: Outcome, set_at: float | None) -> list[str]:
    """Problems with a stream that a set token had to end with ``TQX_RUNTIME_CANCELLED``."""
    cancelled = RuntimeFailureCode.CANCELLED.value
    if outcome.timed_out:
        since = f"{outcome.elapsed:.1f} s after the call started"
        if set_at is not None:
            since = f"{time.monotonic() - set_at:.1f} s after the token was set"
        return [
            f"{label}: still running {since}; a set token must end the call within "
            f"{CANCEL_DEADLINE:g} s even while the provider sends nothing (watch the token while "
            "blocked in a read, e.g. close the socket from a watcher thread)"
        ]
    if outcome.error is None:
        return [
            f"{label}: the stream ended in {event_kinds(outcome.events[-1:])} although the token "
            f"was set; it must end with Failed{{{cancelled}}} and raise — look at the token "
            "between reads (and while a read is blocked), not only before the request"
        ]
    problems, error = check_failed_stream(label, outcome, cancelled)
    if set_at is not None and error is not None:
        waited = outcome.finished_at - set_at
        if waited > CANCEL_DEADLINE:
            problems.append(
                f"{label}: the stream ended {waited:.2f} s after the token was set "
                f"(at most {CANCEL_DEADLINE:g} s)"
            )
    return problems


# --- leaks -------------------------------------------------------------------------------------


def exposed_texts(
    error: BaseException | None, events: Iterable[Any] = (), result: Any = None
) -> list[tuple[str, str]]:
    """``(where, text)`` for everything a call shows people: the raised error (its text, repr,
    detail, help, failure value and causes), every event, and the returned value."""
    texts: list[tuple[str, str]] = []
    seen: set[int] = set()
    current = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        where = "the raised error" if current is error else "a cause of the raised error"
        texts.append((where, str(current)))
        texts.append((where, repr(current)))
        for attribute in ("detail", "help"):
            value = getattr(current, attribute, None)
            if isinstance(value, str):
                texts.append((f"{where}'s {attribute}", value))
        failure = getattr(current, "failure", None)
        if failure is not None:
            texts.append((f"{where}'s failure", _encoded(failure)))
            help_text = getattr(failure, "help_text", None)
            if callable(help_text):
                texts.append((f"{where}'s diagnostic help", str(help_text())))
        current = current.__cause__ or current.__context__
    for index, event in enumerate(events):
        texts.append((f"event {index} ({type(event).__name__})", _encoded(event)))
    if result is not None:
        texts.append(("the returned receipt", _encoded(result)))
    return texts


def _encoded(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode("utf-8")
    except (TypeError, ValueError):
        return repr(value)


def leak_problems(
    label: str, secrets: Sequence[tuple[str, str]], texts: Sequence[tuple[str, str]]
) -> list[str]:
    """One problem per secret that appears in ``texts`` (never printing the secret itself)."""
    problems = []
    for name, secret in secrets:
        for where, text in texts:
            if secret in text:
                problems.append(
                    f"{label}: {name} ({len(secret)} characters) appears in {where}; no "
                    "credential may leave the adapter (DECISIONS 10): redact it"
                )
                break
    return problems
