"""The wire hook's plumbing: transports by name, the plugin and command, recordings, provider text.

The Messages-style example (``acme_messages`` with ``messages_target``) is the subject; the
planted bugs of issue #17 are in ``test_messages_adapter.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from acme_messages import MessagesRuntime
from acme_messages.failures import Code, failure
from acme_messages.messages import StreamReader
from messages_recordings import RECORDINGS
from messages_target import WIRE, make_runtime, target

from templiqx_conformance import (
    AdapterTarget,
    CheckStatus,
    MessagesWire,
    OpenAIWire,
    TargetError,
    check_names,
    run_check,
    transport_names,
)
from templiqx_conformance.cli import main
from templiqx_conformance.probes import PROBES
from templiqx_conformance.wires.registry import resolve_wire
from templiqx_contracts import AdapterDescriptor
from templiqx_ports import RuntimeFailureError

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:anyio")


# --- transports by name -------------------------------------------------------------------------


def test_transports_resolve_by_name_reference_or_value() -> None:
    assert transport_names()[0] == "openai"
    assert isinstance(resolve_wire("openai"), OpenAIWire)
    assert isinstance(resolve_wire("anthropic-messages"), MessagesWire)
    assert resolve_wire("messages_target:WIRE") is WIRE
    assert resolve_wire(WIRE) is WIRE
    with pytest.raises(TargetError, match="unknown transport 'grpc': the kit knows openai"):
        resolve_wire("grpc")
    with pytest.raises(TargetError, match=r"must be a templiqx_conformance\.Wire .* got str"):
        resolve_wire("messages_target:MODEL")
    with pytest.raises(TargetError, match="could not make a Wire: make_runtime"):
        resolve_wire("messages_target:make_runtime")


def test_registered_wires_are_found_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    from templiqx_conformance.wires import registry as transports

    class AcmeWire(MessagesWire):
        name = "acme-messages"

    class Point:
        name = "acme-messages"

        def load(self) -> Any:
            return AcmeWire

    monkeypatch.setattr(transports, "_registered", lambda: {"acme-messages": Point()})
    assert transport_names() == ["openai", "anthropic-messages", "ollama", "acme-messages"]
    assert isinstance(resolve_wire("acme-messages"), AcmeWire)
    assert AdapterTarget(factory=make_runtime, transport="acme-messages").transport_name == (
        "acme-messages"
    )


def test_every_wire_runs_the_same_checks() -> None:
    assert check_names(WIRE) == check_names("openai") == check_names("ollama")
    assert check_names("openai")[: len(check_names())] == check_names()


def test_probes_send_different_interactions() -> None:
    interactions = {probe.interaction.messages[-1].content for probe in PROBES}
    assert len(interactions) == len(PROBES)


def test_targets_refuse_bad_secrets_and_recordings_without_a_wire() -> None:
    with pytest.raises(TargetError, match="at least 8 characters"):
        AdapterTarget(factory=make_runtime, secrets=["short"])
    with pytest.raises(TargetError, match="give a transport"):
        AdapterTarget(factory=make_runtime, recordings=RECORDINGS)


# --- the plugin and the command ----------------------------------------------------------------


def test_the_wire_fixtures_select_the_transport_suite(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from messages_target import WIRE, make_runtime

        @pytest.fixture
        def templiqx_wire():
            return WIRE

        @pytest.fixture
        def templiqx_wire_adapter_factory():
            return make_runtime
        """
    )
    result = pytester.runpytest_inprocess(
        *QUIET, "-v", "-rs", "-k", "request_shape or secrets or recordings"
    )
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "conftest.py::templiqx-conformance-wire::secrets.not_exposed PASSED*",
            "conftest.py::templiqx-conformance-wire::transport.request_shape PASSED*",
            "*transport.recordings does not apply: no recordings were supplied*",
        ]
    )


def test_a_wire_suite_without_its_wire_says_which_fixture_is_missing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest
        from messages_target import make_runtime

        @pytest.fixture
        def templiqx_wire_adapter_factory():
            return make_runtime
        """
    )
    result = pytester.runpytest_inprocess(*QUIET, "-k", "request_shape")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*needs a templiqx_wire fixture returning the provider's Wire*"])


def test_the_command_runs_a_wire_by_reference(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "run",
            "messages_target:make_runtime",
            "--transport",
            "messages_target:WIRE",
            "--check",
            "transport.request_shape",
        ]
    )
    assert code == 0
    assert "over the anthropic-messages transport" in capsys.readouterr().out


# --- recordings ---------------------------------------------------------------------------------


def test_recordings_that_disagree_with_the_adapter_are_reported() -> None:
    wrong = [
        replace(RECORDINGS[0], name="wrong-output", output="Goodbye."),
        replace(RECORDINGS[1], name="wrong-deltas", deltas=[]),
    ]
    result = run_check("transport.recordings", replace(target, recordings=wrong))
    assert result.status is CheckStatus.FAILED
    assert 'wrong-output (stream): the output is "Hello, conformance kit.' in result.message
    assert 'the recording means "Goodbye."' in result.message
    assert "wrong-deltas (stream): 3 delta event(s) where the stream carried 0" in result.message


class EndOfBodyIsTheEnd(MessagesRuntime):
    """Bug: a stream that stops without message_stop is taken as complete."""

    def _stream(self, request: Any, sink: Any, cancel: Any) -> Any:
        try:
            return super()._stream(request, sink, cancel)
        except RuntimeFailureError as error:
            if "message_stop" not in error.failure.detail:
                raise
            return self._receipt(request, self._body(request), "whatever arrived")


def test_an_adapter_completing_a_cut_stream_fails_the_recording_cuts_and_truncation() -> None:
    def make(base_url: str, api_key: str) -> MessagesRuntime:
        return EndOfBodyIsTheEnd(make_runtime(base_url, api_key).settings)

    broken = replace(target, factory=make, recordings=[RECORDINGS[0]])
    recordings = run_check("transport.recordings", broken)
    assert recordings.status is CheckStatus.FAILED
    assert "text-stream: cuts at SSE frame boundaries: " in recordings.message
    assert "execute_streaming must raise the failure, but it returned" in recordings.message
    truncation = run_check("transport.truncation", broken)
    assert truncation.status is CheckStatus.FAILED
    assert "streams cut at a frame boundary:" in truncation.message
    assert "execute_streaming must raise the failure" in truncation.message


class NoToolCalling(MessagesRuntime):
    """Declares no tool_calling (so the kit never sends it declared tools) but parses calls."""

    def descriptor(self) -> AdapterDescriptor:
        full = super().descriptor()
        kept = [c for c in full.capabilities if c != "tool_calling"]
        return AdapterDescriptor(id=full.id, version=full.version, capabilities=kept)


class CallsLostReader(StreamReader):
    """Bug: tool_use blocks are dropped from the streamed answer."""

    def handle(self, event: Any) -> list[Any]:
        deltas = super().handle(event)
        if self.done:
            self.reply.blocks = [b for b in self.reply.blocks if b.kind != "tool_use"]
        return deltas


class CallsLost(NoToolCalling):
    reader_class = CallsLostReader


def test_tool_use_recordings_run_for_adapters_without_tool_calling() -> None:
    def clean(base_url: str, api_key: str) -> MessagesRuntime:
        return NoToolCalling(make_runtime(base_url, api_key).settings)

    def broken(base_url: str, api_key: str) -> MessagesRuntime:
        return CallsLost(make_runtime(base_url, api_key).settings)

    tool_use = [r for r in RECORDINGS if r.capability == "tool_calling"]
    assert tool_use
    result = run_check("transport.recordings", replace(target, factory=clean, recordings=tool_use))
    assert result.status is CheckStatus.PASSED, result.message
    result = run_check("transport.recordings", replace(target, factory=broken, recordings=tool_use))
    assert result.status is CheckStatus.FAILED
    assert "text-then-two-tool-calls (stream): the output is" in result.message


def test_a_recording_may_declare_the_failure_it_must_produce() -> None:
    refusal = next(r for r in RECORDINGS if r.failure is not None)
    result = run_check("transport.recordings", replace(target, recordings=[refusal]))
    assert result.status is CheckStatus.PASSED, result.message
    wrong = replace(refusal, failure="TQX_RUNTIME_UNAVAILABLE")
    result = run_check("transport.recordings", replace(target, recordings=[wrong]))
    assert result.status is CheckStatus.FAILED
    assert "refusal (whole): raised PermanentFailureError [TQX_RUNTIME_PERMANENT]" in result.message
    assert "expected TQX_RUNTIME_UNAVAILABLE" in result.message
    assert (
        "refusal (stream): raised code 'TQX_RUNTIME_PERMANENT', expected "
        "'TQX_RUNTIME_UNAVAILABLE'" in result.message
    )
    with pytest.raises(TargetError, match="failure must be a runtime failure code"):
        replace(target, recordings=[replace(refusal, failure="TQX_NOPE")])


def test_a_recording_is_served_with_one_content_type() -> None:
    seen: list[list[str]] = []

    class Watching(MessagesRuntime):
        def _exchange(self, body: Any, *, stream: bool, cancel: Any) -> Any:
            exchange = super()._exchange(body, stream=stream, cancel=cancel)
            assert exchange._response is not None
            seen.append(exchange._response.headers.get_all("Content-Type") or [])
            return exchange

    def make(base_url: str, api_key: str) -> MessagesRuntime:
        return Watching(make_runtime(base_url, api_key).settings)

    odd = replace(RECORDINGS[0], content_type="text/event-stream; charset=utf-8")
    result = run_check("transport.recordings", replace(target, factory=make, recordings=[odd]))
    assert result.status is CheckStatus.PASSED, result.message
    assert seen
    assert all(len(types) == 1 for types in seen), seen
    assert ["text/event-stream; charset=utf-8"] in seen


# --- provider text (DECISIONS 20) -------------------------------------------------------------


class ShowsProviderTextRaw(MessagesRuntime):
    """Bug: the provider's error text is passed on as it came: uncapped, unredacted, raw."""

    def _status_failure(self, exchange: Any, status: int, head: dict[str, str]) -> Any:
        said = json.loads(b"".join(exchange.chunks()))["error"]["message"]
        return failure(Code.PERMANENT, f"HTTP {status}", provider_text=said)


def test_provider_text_must_be_sanitised_capped_and_redacted() -> None:
    def make(base_url: str, api_key: str) -> MessagesRuntime:
        return ShowsProviderTextRaw(make_runtime(base_url, api_key).settings)

    broken = replace(target, factory=make)
    faults = run_check("transport.fault_matrix", broken)
    assert faults.status is CheckStatus.FAILED
    assert "HTTP 503 via execute: the failure shows the provider's error text uncapped" in (
        faults.message
    )
    assert "passes on control characters from the provider's error text" in faults.message
    secrets = run_check("secrets.not_exposed", broken)
    assert secrets.status is CheckStatus.FAILED
    assert "the kit's marker credential (passed as api_key)" in secrets.message


def test_the_clean_adapter_shows_provider_text_sanitised() -> None:
    from templiqx_conformance.loopback import LoopbackServer, Reply
    from templiqx_conformance.rig.wire_rig import PROVIDER_HEAD

    body = WIRE.encode_error(429, f"{PROVIDER_HEAD}: slow down\x1b[2J (sk-secret-key)")
    with LoopbackServer(routes={"/v1/messages": Reply.error(429, body=body)}) as server:
        runtime = make_runtime(server.base_url, "sk-secret-key")
        port = server.port
        with pytest.raises(RuntimeFailureError) as caught:
            runtime.execute(PROBES[0].request(with_fixture=False))
    text = str(caught.value)
    assert f"{PROVIDER_HEAD}: slow down [2J ([redacted])" in text
    assert f"127.0.0.1:{port} returned HTTP 429" in text


def test_the_provider_echoes_only_the_credentials_a_request_carried() -> None:
    """A declared secret the adapter never holds is never put in its way (no false leaks)."""

    def fixed_key(base_url: str) -> MessagesRuntime:
        return make_runtime(base_url, "sk-fixed-key-1234")

    def raw(base_url: str) -> MessagesRuntime:
        return ShowsProviderTextRaw(make_runtime(base_url, "sk-fixed-key-1234").settings)

    held_elsewhere = AdapterTarget(factory=raw, transport=WIRE, secrets=["sk-someone-else-5678"])
    result = run_check("secrets.not_exposed", held_elsewhere)
    assert result.status is CheckStatus.PASSED, result.message
    held = AdapterTarget(factory=raw, transport=WIRE, secrets=["sk-fixed-key-1234"])
    result = run_check("secrets.not_exposed", held)
    assert result.status is CheckStatus.FAILED
    assert "declared secret #1 (17 characters) appears in the raised error" in result.message
    assert "sk-fixed-key-1234" not in result.message
    clean = AdapterTarget(factory=fixed_key, transport=WIRE, secrets=["sk-fixed-key-1234"])
    assert run_check("secrets.not_exposed", clean).status is CheckStatus.PASSED
