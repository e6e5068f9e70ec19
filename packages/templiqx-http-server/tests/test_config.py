"""The configuration: the reference's names, the port's, flags, and every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from templiqx_http_server.config import ConfigError, ServerConfig, parse_addr

TOKEN = "tqx-config-token-77a1"


def test_defaults_are_loopback_fake_and_the_current_folder() -> None:
    config = ServerConfig.resolve({}, {})
    assert (config.host, config.port) == ("127.0.0.1", 8080)
    assert config.root == str(Path.cwd())
    assert config.workspace_path == str(Path.cwd() / ".templiqx-workspace")
    assert (config.mode, config.runtime) == ("deterministic-fake", "fake")
    assert config.readiness_class == "local-demo-deterministic-fake"
    assert config.token is None


def test_the_references_names_are_read_and_win_over_the_ports(tmp_path: Path) -> None:
    env = {
        "TEMPLIQX_HTTP_ADDR": "127.0.0.1:9000",
        "TEMPLIQX_ROOT": str(tmp_path / "a"),
        "TEMPLIQX_PACKAGES_ROOT": str(tmp_path / "b"),
        "TEMPLIQX_WORKSPACE": str(tmp_path / "w"),
        "TEMPLIQX_RUNTIME_MODE": "langfuse",
        "TEMPLIQX_RUNTIME": "openai",
    }
    config = ServerConfig.resolve({}, env)
    assert config.port == 9000
    assert config.root == str(tmp_path / "a")
    assert config.workspace_path == str(tmp_path / "w")
    assert (config.mode, config.runtime) == ("langfuse", "langfuse")
    assert any("TEMPLIQX_ROOT and TEMPLIQX_PACKAGES_ROOT" in w for w in config.warnings)
    ports = ServerConfig.resolve({}, {"TEMPLIQX_PACKAGES_ROOT": str(tmp_path / "b")})
    assert ports.root == str(tmp_path / "b")


def test_flags_win_and_blank_variables_are_unset(tmp_path: Path) -> None:
    env = {"TEMPLIQX_ROOT": "   ", "TEMPLIQX_RUNTIME_MODE": "", "TEMPLIQX_HTTP_ADDR": " "}
    config = ServerConfig.resolve({"mode": "mock", "workers": "2"}, env)
    assert config.root == str(Path.cwd())
    assert config.runtime == "mock"
    assert config.port == 8080
    assert config.workers == 2
    flags = ServerConfig.resolve({"root": str(tmp_path)}, {"TEMPLIQX_ROOT": "/elsewhere"})
    assert flags.root == str(tmp_path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("0.0.0.0:8080", ("0.0.0.0", 8080)),
        ("[::1]:80", ("::1", 80)),
    ],
)
def test_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_addr(text) == expected


@pytest.mark.parametrize("text", ["localhost:8080", "8080", "127.0.0.1", "1.2.3.4:99999"])
def test_bad_addresses(text: str) -> None:
    with pytest.raises(ValueError, match="bind address"):
        parse_addr(text)


def test_a_public_bind_needs_a_token_or_an_explicit_waiver(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"refusing to serve on 0\.0\.0\.0") as refused:
        ServerConfig.resolve({}, {"TEMPLIQX_HTTP_ADDR": "0.0.0.0:8080"})
    assert "TEMPLIQX_HTTP_TOKEN" in str(refused.value)
    with_token = ServerConfig.resolve(
        {}, {"TEMPLIQX_HTTP_ADDR": "0.0.0.0:8080", "TEMPLIQX_HTTP_TOKEN": TOKEN}
    )
    assert with_token.token == TOKEN
    assert TOKEN not in repr(with_token)
    assert with_token.public()["auth"] == "bearer"
    assert TOKEN not in str(with_token.public())
    waived = ServerConfig.resolve(
        {"allow_unauthenticated": True}, {"TEMPLIQX_HTTP_ADDR": "[::]:8080"}
    )
    assert waived.token is None
    by_env = ServerConfig.resolve(
        {}, {"TEMPLIQX_HTTP_ADDR": "0.0.0.0:1", "TEMPLIQX_HTTP_ALLOW_UNAUTHENTICATED": "yes"}
    )
    assert by_env.allow_unauthenticated
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n", encoding="utf-8")
    from_file = ServerConfig.resolve(
        {"token_file": str(token_file)}, {"TEMPLIQX_HTTP_ADDR": "0.0.0.0:1"}
    )
    assert from_file.token == TOKEN


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        ServerConfig.resolve(
            {"token_file": str(tmp_path / "missing")},
            {
                "TEMPLIQX_HTTP_ADDR": "nowhere",
                "TEMPLIQX_HTTP_MAX_BODY_BYTES": "lots",
                "TEMPLIQX_HTTP_GRACE_S": "-1",
                "TEMPLIQX_HTTP_ALLOW_WORKSPACE_OVERRIDE": "perhaps",
            },
        )
    problems = caught.value.problems
    assert len(problems) == 5, problems
    joined = "\n".join(problems)
    for fragment in (
        "TEMPLIQX_HTTP_ADDR",
        "token file",
        "TEMPLIQX_HTTP_MAX_BODY_BYTES must be a number",
        "TEMPLIQX_HTTP_GRACE_S must be at least 0",
        "TEMPLIQX_HTTP_ALLOW_WORKSPACE_OVERRIDE must be",
    ):
        assert fragment in joined


def test_settings_reach_the_app_and_a_fake_mode_key_is_noted() -> None:
    config = ServerConfig.resolve(
        {"cors_origins": ["https://a.example"], "max_concurrent": "3"},
        {
            "TEMPLIQX_HTTP_REQUEST_TIMEOUT_S": "2.5",
            "TEMPLIQX_HTTP_ALLOW_WORKSPACE_OVERRIDE": "1",
            "MODEL_API_KEY": "sk-ignored",
        },
    )
    settings = config.http_settings()
    assert settings.cors_origins == ("https://a.example",)
    assert settings.max_concurrent == 3
    assert settings.request_timeout_s == 2.5
    assert settings.allow_workspace_override
    assert any("MODEL_API_KEY is set but ignored" in w for w in config.warnings)
    assert "sk-ignored" not in " ".join(config.warnings)
