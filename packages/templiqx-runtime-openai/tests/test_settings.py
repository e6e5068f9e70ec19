"""Settings: explicit construction, the environment, validation messages, no key in repr."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from templiqx_ports import InvalidDataError
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
    with pytest.raises(SettingsError, match=f"missing required environment variable {name}$"):
        OpenAISettings.from_env(env)


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5", "\uff11\uff12"])
def test_from_env_rejects_a_bad_timeout(value: str) -> None:
    with pytest.raises(SettingsError, match="invalid MODEL_TIMEOUT_MS"):
        OpenAISettings.from_env({**ENV, "MODEL_TIMEOUT_MS": value})


def test_from_env_points_at_the_variable_and_hides_the_url() -> None:
    with pytest.raises(SettingsError) as caught:
        OpenAISettings.from_env({**ENV, "MODEL_BASE_URL": "https://me:secret@h.test"})
    assert str(caught.value).startswith("invalid data: MODEL_BASE_URL (model base_url) must not")
    assert "secret" not in str(caught.value)
    with pytest.raises(SettingsError, match="MODEL_API_KEY"):
        OpenAISettings.from_env({**ENV, "MODEL_API_KEY": "two words"})


def test_create_runtime_and_the_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MODEL_TIMEOUT_MS", raising=False)
    runtime = create_runtime()
    assert isinstance(runtime, OpenAIRuntime)
    descriptor = runtime.descriptor()
    assert (descriptor.id, descriptor.version) == ("templiqx-runtime-openai", "0.2.0")
    assert descriptor.capabilities == list(CAPABILITIES) == sorted(CAPABILITIES)
    assert "structured_output" in descriptor.capabilities
    (entry,) = [e for e in entry_points(group="templiqx.runtimes") if e.name == "openai"]
    assert entry.value == "templiqx_runtime_openai:create_runtime"
    assert isinstance(entry.load()(), OpenAIRuntime)
    monkeypatch.delenv("MODEL_API_KEY")
    with pytest.raises(SettingsError, match="MODEL_API_KEY"):
        entry.load()()
