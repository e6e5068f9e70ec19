"""Recorded provider streams, served back byte-for-byte and split at every byte boundary, and a
differential test against the official ``openai`` SDK on the same bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openai
import pytest

from templiqx_conformance.loopback import Chunk, LoopbackServer, Reply
from templiqx_contracts import Complete, ToolCallDelta
from templiqx_ports import validate_event_order
from templiqx_runtime_openai import OpenAIRuntime

Serve = Callable[..., LoopbackServer]
RuntimeFor = Callable[..., OpenAIRuntime]

VARIANTS = ["whole", "per_byte", "per_byte_crlf", "per_byte_cr", "per_byte_close_delimited"]


def reply_for(data: bytes, variant: str) -> Reply:
    if variant == "whole":
        return Reply.stream([data])
    if variant == "per_byte":
        return Reply.stream([data], split_bytes=True)
    if variant == "per_byte_crlf":
        return Reply.stream([data.replace(b"\n", b"\r\n")], split_bytes=True)
    if variant == "per_byte_cr":
        return Reply.stream([data.replace(b"\n", b"\r")], split_bytes=True)
    return Reply.stream([data], split_bytes=True, framing="close")


def load_streams(reference: Path) -> list[tuple[dict[str, Any], bytes]]:
    folder = reference / "streams"
    entries = json.loads((folder / "streams.json").read_text(encoding="utf-8"))
    assert entries, "streams.json lists no streams"
    return [(entry, (folder / entry["file"]).read_bytes()) for entry in entries]


@pytest.mark.parametrize("variant", VARIANTS)
def test_recorded_streams_assemble_to_their_expectation(
    variant: str,
    reference: Path,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    for entry, data in load_streams(reference):
        assert len(data) == entry["bytes"]
        expected = entry["expected"]
        server = serve([reply_for(data, variant), reply_for(data, variant)])
        runtime = runtime_for(server)

        # The client level: content, tool calls, finish reason and usage.
        sink = wire.Collector()
        result = runtime.client.stream(wire.interaction(), sink)
        assert result.finish_reason == expected["finish_reason"]
        usage = expected["usage"]
        assert result.usage is not None
        assert (
            result.usage.prompt_tokens,
            result.usage.completion_tokens,
            result.usage.total_tokens,
        ) == (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
        fragments: dict[str, str] = {}
        for event in sink.events:
            assert isinstance(event, ToolCallDelta)
            fragments[event.name] = fragments.get(event.name, "") + event.arguments_fragment
        assert fragments == {call["name"]: call["arguments"] for call in expected["tool_calls"]}

        # The runtime level: the receipt's output and a well-formed event stream.
        events = wire.Collector()
        receipt = runtime.execute_streaming(wire.request(), events)
        validate_event_order(events.events)
        assert events.events[-1] == Complete.of(receipt)
        assert expected["content"] is None
        assert receipt.output == {
            "tool_calls": [
                {"id": call["id"], "name": call["name"], "arguments": json.loads(call["arguments"])}
                for call in sorted(expected["tool_calls"], key=lambda c: c["index"])
            ]
        }


# --- differential: the official SDK on the same bytes ------------------------------------------


def sdk_final(base_url: str) -> Any:
    client = openai.OpenAI(base_url=base_url, api_key="sk-differential", max_retries=0)
    try:
        with client.chat.completions.stream(
            model="test-model", messages=[{"role": "user", "content": "hello"}]
        ) as stream:
            return stream.get_final_completion().choices[0].message
    finally:
        client.close()


def ours_final(runtime: OpenAIRuntime, wire: SimpleNamespace) -> tuple[str | None, list[Any]]:
    sink = wire.Collector()
    result = runtime.client.stream(wire.interaction(structured=False), sink)
    output = result.output
    if isinstance(output, dict) and "tool_calls" in output:
        deltas = [e for e in sink.events if isinstance(e, ToolCallDelta)]
        text: dict[str, str] = {}
        for event in deltas:
            text[event.name] = text.get(event.name, "") + event.arguments_fragment
        calls = [(c["id"], c["name"], text[c["name"]]) for c in output["tool_calls"]]
        return None, calls
    return output, []


def synthetic_streams(wire: SimpleNamespace) -> dict[str, bytes]:
    def frames(*chunks: dict[str, Any], end: bytes = b"\n") -> bytes:
        body = b"".join(
            b"data: " + json.dumps(c, ensure_ascii=False).encode() + end + end for c in chunks
        )
        return body + b"data: [DONE]" + end + end

    text = wire.content_stream("Grüße", ", 世界", " — 😀", " done.")
    return {
        "lf": frames(*text),
        "crlf": frames(*text, end=b"\r\n"),
        "comments_and_fields": b": hello\nevent: message\nid: 1\n" + frames(*text),
        "multi_line_data": (
            b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",\n'
            b'data: "choices":[{"index":0,"delta":{"role":"assistant","content":"multi"},'
            b'"finish_reason":null}]}\n\n' + frames(wire.chunk(" line"), wire.chunk(finish="stop"))
        ),
    }


@pytest.mark.parametrize("split", [False, True], ids=["whole", "per_byte"])
def test_differential_against_the_openai_sdk(
    split: bool,
    reference: Path,
    serve: Serve,
    runtime_for: RuntimeFor,
    wire: SimpleNamespace,
) -> None:
    bodies = {entry["file"]: data for entry, data in load_streams(reference)}
    bodies.update(synthetic_streams(wire))
    for name, data in bodies.items():
        reply = Reply.stream([Chunk(data)], split_bytes=split)
        server = serve([reply, Reply.stream([Chunk(data)], split_bytes=split)])
        sdk = sdk_final(server.base_url)
        content, calls = ours_final(runtime_for(server), wire)
        assert content == sdk.content, name
        sdk_calls = [(c.id, c.function.name, c.function.arguments) for c in sdk.tool_calls or []]
        assert calls == sdk_calls, name
