"""What rendering and compilation produce is bounded (issue #18 item 3).

A ``for_each`` that interpolates an outer input for every element rendered a 500 MB prompt
from 1 MB of arguments (1.96 s, 1.5 GB). Rendering now counts the text it produces and stops
at ``MAX_RENDERED_BYTES`` with ``TQX_RENDER_TOO_LARGE``; a compiled request is refused past
``MAX_COMPILED_BYTES``.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import msgspec

from templiqx_contracts import Contract, Diagnostic, RenderRequest
from templiqx_core import compile_interaction, render_messages
from templiqx_core.limits import MAX_COMPILED_BYTES, MAX_RENDERED_BYTES

STRING = {"type": "string"}


def ref(path: str) -> dict[str, Any]:
    return {"kind": "ref", "path": path}


def interp(path: str) -> dict[str, Any]:
    return {"kind": "interpolate", "expression": ref(path), "filters": []}


def for_each(path: str, body: list[Any], separator: str = "") -> dict[str, Any]:
    return {
        "kind": "for_each",
        "collection": ref(path),
        "item": "item",
        "body": body,
        "separator": separator,
    }


def make(*messages: list[Any], **overrides: Any) -> Contract:
    data: dict[str, Any] = {
        "api_version": "templiqx/v1alpha1",
        "id": "amplify",
        "version": "1.0.0",
        "inputs": {
            "items": {"required": True, "schema": {"type": "array", "items": {"type": "integer"}}},
            "note": {"required": True, "schema": STRING},
        },
        "capabilities": ["text"],
        "messages": [{"role": "user", "content": content} for content in messages],
        "output_schema": STRING,
    }
    data.update(overrides)
    return msgspec.convert(data, Contract)


def refused(diagnostics: list[Diagnostic], limit: str) -> Diagnostic:
    assert len(diagnostics) == 1, diagnostics
    diagnostic = diagnostics[0]
    assert diagnostic.code == "TQX_RENDER_TOO_LARGE"
    assert limit in diagnostic.message
    assert diagnostic.help is not None
    assert limit in diagnostic.help
    return diagnostic


def test_a_for_each_repeating_an_outer_input_is_refused_fast_in_bounded_memory() -> None:
    # 1 MB of arguments that would render 500 MB: 500 elements, each repeating a 1 MB note.
    contract = make([for_each("inputs.items", [interp("inputs.note")])])
    request = RenderRequest(inputs={"items": list(range(500)), "note": "n" * 1_000_000})
    tracemalloc.start()
    started = time.perf_counter()
    interaction, diagnostics = compile_interaction(contract, request, ["text"])
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert interaction is None
    refused(diagnostics, "MAX_RENDERED_BYTES")
    assert seconds < 1.0
    assert peak < 4 * MAX_RENDERED_BYTES  # the 8 MiB prefix, joined once; never 500 MB


def test_the_rendered_limit_is_exact_and_counts_utf8_bytes() -> None:
    contract = make([for_each("inputs.items", [interp("inputs.note")])])
    note = "é" * 1024  # 2,048 bytes
    fits = MAX_RENDERED_BYTES // 2048
    messages, diagnostics = render_messages(
        contract, RenderRequest(inputs={"items": list(range(fits)), "note": note})
    )
    assert diagnostics == []
    assert messages is not None
    assert len(messages[0].content.encode()) == MAX_RENDERED_BYTES
    messages, diagnostics = render_messages(
        contract, RenderRequest(inputs={"items": list(range(fits)), "note": note + "x"})
    )
    assert messages is None
    refused(diagnostics, "MAX_RENDERED_BYTES")


def test_separators_and_every_message_count() -> None:
    half = MAX_RENDERED_BYTES // 2
    text = {"kind": "text", "value": "t" * half}
    messages, diagnostics = render_messages(make([text], [text]), RenderRequest())
    assert diagnostics == []  # exactly the limit over two messages
    assert messages is not None
    _, diagnostics = render_messages(
        make([text], [text], [{"kind": "text", "value": "!"}]), RenderRequest()
    )
    refused(diagnostics, "MAX_RENDERED_BYTES")
    # 4,096 empty bodies joined by a 4 KiB separator: nothing but separators, 16 MiB of them.
    joined = make([for_each("inputs.items", [], separator="-" * 4096)])
    _, diagnostics = render_messages(
        joined, RenderRequest(inputs={"items": list(range(4096)), "note": ""})
    )
    refused(diagnostics, "MAX_RENDERED_BYTES")


def test_nested_loops_are_refused_before_their_product_is_built() -> None:
    inner = for_each("inputs.items", [interp("inputs.note")])
    contract = make([for_each("inputs.items", [inner])])
    request = RenderRequest(inputs={"items": list(range(3000)), "note": "n" * 100})
    # 900 MB if it were built. The rendering stops at the byte limit (~84,000 inner bodies):
    # what it holds at its peak proves the product was never built; the time bound only catches
    # a run that went on (it is ~0.5 s idle, ~1.1 s on a loaded 2-core machine).
    tracemalloc.start()
    started = time.perf_counter()
    try:
        _, diagnostics = render_messages(contract, request)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10.0
    assert peak < 64 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB while rendering"
    refused(diagnostics, "MAX_RENDERED_BYTES")


def test_a_compiled_request_over_its_limit_is_refused() -> None:
    big = "d" * (MAX_COMPILED_BYTES - MAX_RENDERED_BYTES + 1)
    schema = {"type": "string", "description": big}
    text = [{"kind": "text", "value": "t" * MAX_RENDERED_BYTES}]
    interaction, diagnostics = compile_interaction(
        make(text, output_schema=schema, inputs={}), RenderRequest(), ["text"]
    )
    assert interaction is None
    refused(diagnostics, "MAX_COMPILED_BYTES")
    interaction, diagnostics = compile_interaction(
        make([{"kind": "text", "value": "t"}], output_schema=schema, inputs={}),
        RenderRequest(),
        ["text"],
    )
    assert diagnostics == []
    assert interaction is not None
