"""The echo runtime's own tests, beside the conformance kit's."""

from __future__ import annotations

import threading

import pytest
from acme_echo import EchoRuntime

from templiqx_contracts import CompiledInteraction, Delta, ExecutionRequest, fingerprint
from templiqx_ports import RuntimeFailureError

INTERACTION = CompiledInteraction(
    compiler="test",
    contract_id="greeting",
    contract_version="1.0.0",
    messages=[],
    output_schema={"type": "object", "required": ["greeting"]},
    required_capabilities=["structured_output"],
    target_capabilities=["structured_output"],
    runtime_policy={},
    extensions={},
)


def test_execute_replays_the_fixture_output() -> None:
    receipt = EchoRuntime().execute(
        ExecutionRequest(interaction=INTERACTION, fixture_output={"greeting": "hi"})
    )
    assert receipt.output == {"greeting": "hi"}
    assert receipt.output_fingerprint == fingerprint({"greeting": "hi"})
    assert receipt.output_schema_valid


def test_streaming_sends_the_text_in_pieces() -> None:
    events: list[object] = []
    EchoRuntime(chunk_size=4).execute_streaming(
        ExecutionRequest(interaction=INTERACTION, fixture_output={"greeting": "hi"}), events.append
    )
    text = "".join(event.text for event in events if isinstance(event, Delta))
    assert text == '{"greeting":"hi"}'


def test_a_set_token_cancels_the_stream() -> None:
    token = threading.Event()
    token.set()
    with pytest.raises(RuntimeFailureError) as caught:
        EchoRuntime().execute_streaming(
            ExecutionRequest(interaction=INTERACTION, fixture_output="x"),
            lambda _event: None,
            cancel=token,
        )
    assert caught.value.code == "TQX_RUNTIME_CANCELLED"
