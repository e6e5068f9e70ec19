"""Settings: explicit construction, the environment, validation messages, no key in repr."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    CompiledMessage,
    ExecutionRequest,
    Failed,
    StreamEvent,
)
from templiqx_ports import InvalidDataError, PermanentFailureError
from templiqx_runtime_openai import (
    CAPABILITIES,
    OpenAIRuntime,
    OpenAISettings,
    SettingsError,
    create_runtime,
)

KEY = "sk-settings-canary-0b7e"
ENV = {"MODEL_BASE_URL": "https://api.example.test/v1/", "MODEL_API_KEY": KEY, "MODEL_ID": "m-1"}


def test_explicit_settings_and_defaults() -> None:
    settings = OpenAISettings(base_url="http://127.0.0.1:9/v1//", api_key=KEY, model="m")
    assert settings.base_url == "http://127.0.0.1:9/v1"
    assert settings.completions_url == "http://127.0.0.1:9/v1/chat/completions"
    assert settings.timeout_ms == 30_000
    assert settings.timeout_s == 30.0
    assert settings.max_response_bytes == 2_097_152
    assert settings.max_line_bytes == 1_048_576
    assert settings.max_stream_bytes == 67_108_864


def test_repr_never_shows_the_key() -> None:
    settings = OpenAISettings(base_url="https://h.test", api_key=KEY, model="m")
    runtime = OpenAIRuntime(settings)
    for text in (repr(settings), str(settings), repr(runtime), repr(runtime.client)):
        assert KEY not in text
    assert "api_key" not in repr(settings)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"base_url": " "}, "model base_url must not be empty"),
        ({"base_url": "ftp://h.test"}, "model base_url must use http:// or https://"),
        (
            {"base_url": "https://user:pw@h.test"},
            "must not contain credentials, query, or fragment",
        ),
        ({"base_url": "https://h.test/v1?x=1"}, "must not contain credentials, query, or fragment"),
        ({"base_url": "https://h.test/#top"}, "must not contain credentials, query, or fragment"),
        ({"base_url": "https:///v1"}, "must not contain credentials, query, or fragment"),
        ({"base_url": "https://h.test/a b"}, "must not contain whitespace"),
        ({"api_key": ""}, "model api_key must not be empty"),
        ({"api_key": "   "}, "model api_key must not be empty"),
        ({"api_key": KEY + "\n"}, "model api_key must be printable ASCII"),
        ({"api_key": "sk é"}, "model api_key must be printable ASCII"),
        ({"model": " "}, "model id must not be empty"),
        ({"timeout_ms": 0}, "timeout_ms must be a positive integer"),
        ({"timeout_ms": True}, "timeout_ms must be a positive integer"),
        ({"max_line_bytes": -1}, "max_line_bytes must be a positive integer"),
    ],
)
def test_invalid_settings_name_the_field_without_echoing_values(
    fields: dict[str, object], message: str
) -> None:
    options: dict[str, object] = {"base_url": "https://h.test", "api_key": KEY, "model": "m"}
    options.update(fields)
    with pytest.raises(SettingsError, match=message) as caught:
        OpenAISettings(**options)  # type: ignore[arg-type]
    assert KEY not in str(caught.value)
    assert "user:pw" not in str(caught.value)
    assert isinstance(caught.value, InvalidDataError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.code == "TQX_DATA_INVALID"


def test_from_env_reads_every_variable() -> None:
    settings = OpenAISettings.from_env({**ENV, "MODEL_TIMEOUT_MS": " 1500 "})
    assert settings.base_url == "https://api.example.test/v1"
    assert settings.api_key == KEY
    assert settings.model == "m-1"
    assert settings.timeout_ms == 1500
    assert OpenAISettings.from_env(ENV).timeout_ms == 30_000


@pytest.mark.parametrize("name", ["MODEL_BASE_URL", "MODEL_API_KEY", "MODEL_ID"])
@pytest.mark.parametrize("value", [None, "", "   "])
def test_from_env_names_a_missing_variable(name: str, value: str | None) -> None:
    env = dict(ENV)
    if value is None:
        del env[name]
    else:
        env[name] = value
    fallback = {"MODEL_BASE_URL": " (or OPENAI_BASE_URL)", "MODEL_API_KEY": " (or OPENAI_API_KEY)"}
    expected = f"model settings are missing or invalid: {name}{fallback.get(name, '')} is not set"
    with pytest.raises(SettingsError) as caught:
        OpenAISettings.from_env(env)
    assert caught.value.detail == expected
    assert caught.value.help is not None
    assert "OPENAI_API_KEY" in caught.value.help


def test_from_env_lists_every_problem_in_one_error() -> None:
    env = {"MODEL_API_KEY": "two words", "MODEL_TIMEOUT_MS": "soon"}
    with pytest.raises(SettingsError) as caught:
        OpenAISettings.from_env(env)
    assert caught.value.problems == (
        "MODEL_BASE_URL (or OPENAI_BASE_URL) is not set",
        "MODEL_API_KEY must be printable ASCII without spaces (check for a stray newline)",
        "MODEL_ID is not set",
        "MODEL_TIMEOUT_MS must be a positive whole number (milliseconds)",
    )
    assert str(caught.value) == "invalid data: model settings are missing or invalid: " + "; ".join(
        caught.value.problems
    )
    assert "two words" not in str(caught.value)
    assert "soon" not in str(caught.value)


def test_openai_variables_are_the_fallback_and_model_variables_win() -> None:
    openai_only = {
        "OPENAI_BASE_URL": "https://openai.test/v1",
        "OPENAI_API_KEY": KEY,
        "MODEL_ID": "m",
    }
    settings = OpenAISettings.from_env(openai_only)
    assert (settings.base_url, settings.api_key) == ("https://openai.test/v1", KEY)
    assert (settings.labels.base_url, settings.labels.api_key) == (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
    )
    both = {**openai_only, "MODEL_BASE_URL": "https://gateway.test", "MODEL_API_KEY": "sk-model"}
    settings = OpenAISettings.from_env(both)
    assert (settings.base_url, settings.api_key) == ("https://gateway.test", "sk-model")
    assert (settings.labels.base_url, settings.labels.api_key, settings.labels.model) == (
        "MODEL_BASE_URL",
        "MODEL_API_KEY",
        "MODEL_ID",
    )
    blank = {**openai_only, "MODEL_BASE_URL": "  ", "MODEL_API_KEY": ""}
    assert OpenAISettings.from_env(blank).labels.api_key == "OPENAI_API_KEY"
    # An invalid fallback value is named by the variable it came from.
    with pytest.raises(SettingsError, match="OPENAI_BASE_URL must use http:// or https://"):
        OpenAISettings.from_env({**openai_only, "OPENAI_BASE_URL": "api.openai.com"})


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5", "\uff11\uff12"])
def test_from_env_rejects_a_bad_timeout(value: str) -> None:
    with pytest.raises(SettingsError, match="MODEL_TIMEOUT_MS must be a positive whole number"):
        OpenAISettings.from_env({**ENV, "MODEL_TIMEOUT_MS": value})


def test_from_env_points_at_the_variable_and_hides_the_url() -> None:
    with pytest.raises(SettingsError) as caught:
        OpenAISettings.from_env({**ENV, "MODEL_BASE_URL": "https://me:secret@h.test"})
    assert str(caught.value) == (
        "invalid data: model settings are missing or invalid: "
        "MODEL_BASE_URL must not contain credentials, query, or fragment"
    )
    with pytest.raises(SettingsError, match="MODEL_API_KEY"):
        OpenAISettings.from_env({**ENV, "MODEL_API_KEY": "two words"})


def test_create_runtime_reads_nothing_until_a_model_is_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (*ENV, "MODEL_TIMEOUT_MS", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    runtime = create_runtime()  # no settings at all: the factory still builds the adapter
    assert isinstance(runtime, OpenAIRuntime)
    descriptor = runtime.descriptor()
    assert (descriptor.id, descriptor.version) == ("templiqx-runtime-openai", "0.2.0")
    assert descriptor.capabilities == list(CAPABILITIES) == sorted(CAPABILITIES)
    assert "structured_output" in descriptor.capabilities
    assert repr(runtime) == "OpenAIRuntime(<settings unread>)"
    (entry,) = [e for e in entry_points(group="templiqx.runtimes") if e.name == "openai"]
    assert entry.value == "templiqx_runtime_openai:create_runtime"
    assert isinstance(entry.load()(), OpenAIRuntime)

    request = ExecutionRequest(interaction=_interaction(), fixture_output=None)
    events: list[StreamEvent] = []
    for call in (
        lambda: runtime.execute(request),
        lambda: runtime.execute_streaming(request, events.append),
    ):
        with pytest.raises(PermanentFailureError) as caught:
            call()
        failure = caught.value.failure
        assert failure.detail == (
            "runtime settings are missing or invalid: "
            "MODEL_BASE_URL (or OPENAI_BASE_URL) is not set; "
            "MODEL_API_KEY (or OPENAI_API_KEY) is not set; MODEL_ID is not set"
        )
        assert failure.remedy is not None
        assert failure.remedy.startswith("set MODEL_BASE_URL")
        assert caught.value.help == failure.remedy
    assert events == [Failed(code="TQX_RUNTIME_PERMANENT", message=str(caught.value))]

    # Once the environment is fixed, the same runtime reads it at its next call.
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    assert runtime.settings.model == "m-1"
    assert runtime.settings.labels.model == "MODEL_ID"
    assert KEY not in repr(runtime)


def _interaction() -> CompiledInteraction:
    return CompiledInteraction(
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
