"""Langfuse settings, the payload policy switch, the entry point and canary credentials."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable
from importlib.metadata import entry_points
from types import SimpleNamespace
from typing import Any

import pytest

from templiqx_conformance.loopback import LoopbackServer, RecordedRequest, Reply
from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    CompiledMessage,
    ExecutionRequest,
    canonical_json,
    encode_stream_event,
)
from templiqx_ports import RuntimeFailureError
from templiqx_runtime_langfuse import (
    LangfuseRuntime,
    LangfuseSettings,
    PayloadPolicy,
    create_runtime,
)
from templiqx_runtime_openai import SettingsError

ENV = {
    "MODEL_BASE_URL": "http://127.0.0.1:9/v1",
    "MODEL_API_KEY": "sk-model-env-canary",
    "MODEL_ID": "m",
    "LANGFUSE_HOST": "https://cloud.langfuse.example/",
    "LANGFUSE_PUBLIC_KEY": "pk-lf-env-canary",
    "LANGFUSE_SECRET_KEY": "sk-lf-env-canary",
}


def test_basic_auth_and_urls() -> None:
    settings = LangfuseSettings(
        host="https://lf.test//", public_key="pk-test", secret_key="sk-test"
    )
    assert settings.ingestion_url == "https://lf.test/api/public/ingestion"
    assert settings.authorization == "Basic cGstdGVzdDpzay10ZXN0"
    assert settings.payload_policy is PayloadPolicy.FINGERPRINTS_ONLY
    assert settings.timeout_ms == 2000
    assert "pk-test" not in repr(settings)
    assert "sk-test" not in repr(settings)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"host": "lf.test"}, "langfuse host must use http:// or https://"),
        ({"host": "https://a:b@lf.test"}, "langfuse host must not contain credentials"),
        ({"public_key": " "}, "langfuse public_key must not be empty"),
        ({"secret_key": ""}, "langfuse secret_key must not be empty"),
        ({"payload_policy": "everything"}, "payload_policy must be 'full' or 'fingerprints_only'"),
        ({"timeout_ms": 0}, "timeout_ms must be a positive integer"),
    ],
)
def test_invalid_settings(fields: dict[str, Any], message: str) -> None:
    options: dict[str, Any] = {"host": "https://lf.test", "public_key": "pk", "secret_key": "sk"}
    options.update(fields)
    with pytest.raises(SettingsError, match=message):
        LangfuseSettings(**options)


def test_payload_policy_from_the_environment() -> None:
    assert LangfuseSettings.from_env(ENV).payload_policy is PayloadPolicy.FINGERPRINTS_ONLY
    full = LangfuseSettings.from_env({**ENV, "TEMPLIQX_LANGFUSE_PAYLOAD": "full"})
    assert full.payload_policy is PayloadPolicy.FULL
    only = LangfuseSettings.from_env({**ENV, "TEMPLIQX_LANGFUSE_PAYLOAD": "fingerprints_only"})
    assert only.payload_policy is PayloadPolicy.FINGERPRINTS_ONLY
    with pytest.raises(SettingsError, match="TEMPLIQX_LANGFUSE_PAYLOAD must be 'full' or"):
        LangfuseSettings.from_env({**ENV, "TEMPLIQX_LANGFUSE_PAYLOAD": "all"})
    timed = LangfuseSettings.from_env({**ENV, "TEMPLIQX_LANGFUSE_TIMEOUT_MS": "750"})
    assert timed.timeout_ms == 750
    assert LangfuseSettings.from_env(ENV).host == "https://cloud.langfuse.example"


@pytest.mark.parametrize("name", ["LANGFUSE_HOST", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"])
def test_missing_langfuse_variables_are_named(name: str) -> None:
    env = {**ENV, name: " "}
    with pytest.raises(SettingsError, match=f"Langfuse settings are missing or invalid: {name} is"):
        LangfuseSettings.from_env(env)


def test_every_missing_setting_of_both_endpoints_in_one_failure() -> None:
    runtime = LangfuseRuntime.from_env({"MODEL_API_KEY": "k", "LANGFUSE_HOST": "lf.test"})
    with pytest.raises(RuntimeFailureError) as caught:
        runtime.execute(_request())
    assert caught.value.failure.detail == (
        "runtime settings are missing or invalid: MODEL_BASE_URL (or OPENAI_BASE_URL) is not "
        "set; MODEL_ID is not set; LANGFUSE_HOST must use http:// or https://; "
        "LANGFUSE_PUBLIC_KEY is not set; LANGFUSE_SECRET_KEY is not set"
    )
    assert "LANGFUSE_HOST" in (caught.value.help or "")


def test_bad_host_in_the_environment_names_the_variable() -> None:
    with pytest.raises(SettingsError) as caught:
        LangfuseSettings.from_env({**ENV, "LANGFUSE_HOST": "https://u:p@lf.test"})
    assert "LANGFUSE_HOST must not contain credentials" in str(caught.value)
    assert "u:p" not in str(caught.value)


def test_create_runtime_and_the_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TEMPLIQX_LANGFUSE_PAYLOAD", "full")
    runtime = create_runtime()
    assert isinstance(runtime, LangfuseRuntime)
    assert runtime.langfuse_settings.payload_policy is PayloadPolicy.FULL
    assert runtime.model_settings.model == "m"
    (entry,) = [e for e in entry_points(group="templiqx.runtimes") if e.name == "langfuse"]
    assert entry.value == "templiqx_runtime_langfuse:create_runtime"
    assert isinstance(entry.load()(), LangfuseRuntime)
    for secret in (ENV["MODEL_API_KEY"], ENV["LANGFUSE_PUBLIC_KEY"], ENV["LANGFUSE_SECRET_KEY"]):
        assert secret not in repr(runtime)
    monkeypatch.delenv("MODEL_ID")
    lazy = create_runtime()  # settings are read when a model is called, not here
    assert repr(lazy) == "LangfuseRuntime(<settings unread>)"
    with pytest.raises(RuntimeFailureError, match="MODEL_ID is not set"):
        lazy.execute(_request())


def _request() -> ExecutionRequest:
    interaction = CompiledInteraction(
        compiler=COMPILER_ID,
        contract_id="c",
        contract_version="1.0.0",
        messages=[CompiledMessage(role="user", content="hi")],
        output_schema={"type": "string"},
        required_capabilities=[],
        target_capabilities=[],
        runtime_policy={},
        extensions={},
    )
    return ExecutionRequest(interaction=interaction, fixture_output=None)


def test_canary_credentials_never_leave_the_process(
    serve: Callable[..., LoopbackServer],
    runtime_for: Callable[..., LangfuseRuntime],
    lf: SimpleNamespace,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    secrets = (lf.MODEL_KEY, lf.PUBLIC_KEY, lf.SECRET_KEY)

    def hostile_model(request: RecordedRequest) -> Reply:
        auth = request.header("Authorization") or ""
        index = len(server.requests_to("/chat/completions")) % 4
        if index == 1:
            return Reply.json(lf.completion('{"ok":true}'), headers=[("X-Echo", auth)])
        if index == 2:
            return Reply.error(401, body={"error": {"message": auth}})
        if index == 3:
            return Reply.json(lf.completion(f"not json {auth}"))
        return Reply.error(500, body={"error": auth})

    def hostile_langfuse(request: RecordedRequest) -> Reply:
        auth = request.header("Authorization") or ""
        return Reply.error(401, body={"message": f"bad credentials {auth} {lf.SECRET_KEY}"})

    caplog.set_level(logging.DEBUG)
    server = serve(hostile_model, hostile_langfuse)
    seen: list[str] = []
    for policy in (PayloadPolicy.FULL, PayloadPolicy.FINGERPRINTS_ONLY):
        runtime = runtime_for(server, policy=policy)
        seen.append(repr(runtime))
        for _ in range(4):
            events: list[Any] = []
            try:
                receipt = runtime.execute_streaming(lf.request(), events.append)
                seen.append(canonical_json(receipt).decode())
            except RuntimeFailureError as error:
                seen.extend([str(error), repr(error.failure), error.failure.help_text()])
                seen.append(pickle.dumps(error).decode("latin-1"))
            seen.extend(encode_stream_event(event).decode() for event in events)
    for trace in server.requests_to(lf.INGESTION):
        seen.append(trace.body.decode())  # a trace is payload too (DECISIONS 10)
    captured = capfd.readouterr()
    seen.extend([caplog.text, captured.out, captured.err])
    assert len(server.requests_to(lf.INGESTION)) == 8
    for text in seen:
        for secret in secrets:
            assert secret not in text
