"""The command: --help, --version, --check (every problem at once), --healthcheck, start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from templiqx_http_server.cli import parser
from templiqx_http_server.config import ENV, PORT_NAMES


def _run(harness: Any, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "templiqx_http_server", *args],
        capture_output=True,
        text=True,
        env=harness.clean_env(env),
        timeout=60,
        check=False,
    )


def test_help_and_version(harness: Any) -> None:
    shown = _run(harness, "--help")
    assert shown.returncode == 0
    for name in (
        "TEMPLIQX_HTTP_ADDR",
        "TEMPLIQX_ROOT",
        "TEMPLIQX_WORKSPACE",
        "TEMPLIQX_RUNTIME_MODE",
        "TEMPLIQX_HTTP_TOKEN",
        "--check",
        "--healthcheck",
        "docs/http.md",
    ):
        assert name in shown.stdout
    version = _run(harness, "--version")
    assert version.stdout.strip() == "templiqx-http-server 0.2.0"


def test_help_teaches_every_setting_its_variable_and_its_default() -> None:
    """Every environment variable the server reads is in --help, and every setting flag says
    its default there (a value flag that names none leaves the operator guessing)."""
    text = parser().format_help()
    for variable in (*ENV.values(), *PORT_NAMES.values()):
        assert variable in text, variable
    for action in parser()._actions:
        if not action.option_strings or action.dest in {"help", "version"}:
            continue
        if action.nargs == 0:  # a switch: it is off unless given
            continue
        assert "default" in (action.help or ""), f"{action.option_strings[0]} names no default"


def test_check_passes_on_a_good_configuration(harness: Any, packages: Path) -> None:
    done = _run(harness, "--check", "--root", str(packages), "--addr", "127.0.0.1:0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok: would serve {packages} on 127.0.0.1:0 with runtime fake")


def test_check_lists_every_problem_and_fails(harness: Any, tmp_path: Path) -> None:
    done = _run(
        harness,
        "--check",
        "--addr",
        "127.0.0.1:0",
        env={
            "TEMPLIQX_ROOT": str(tmp_path / "missing"),
            "TEMPLIQX_RUNTIME_MODE": "openai",
            "MODEL_API_KEY": "sk-check-secret-19",
        },
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert any("does not exist" in line for line in lines), lines
    assert any("runtime openai" in line and "MODEL_ID" in line for line in lines), lines
    assert all(line.startswith("templiqx-http-server: ") for line in lines)
    assert "sk-check-secret-19" not in done.stderr + done.stdout
    unknown = _run(harness, "--check", "--runtime-mode", "telepathy", "--root", str(tmp_path))
    assert unknown.returncode == 1
    assert "runtime mode telepathy" in unknown.stderr
    assert "installed runtimes" in unknown.stderr


def test_startup_errors_name_the_reason_and_exit_1(harness: Any, tmp_path: Path) -> None:
    refused = _run(harness, env={"TEMPLIQX_HTTP_ADDR": "0.0.0.0:0"})
    assert refused.returncode == 1
    assert refused.stderr.startswith("templiqx-http-server: refusing to serve on 0.0.0.0")
    assert refused.stdout == ""
    missing = _run(harness, "--addr", "127.0.0.1:0", "--root", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert "packages root" in missing.stderr
    bad = _run(harness, env={"TEMPLIQX_HTTP_ADDR": "localhost:80"})
    assert bad.returncode == 1
    assert "not an IP address" in bad.stderr


def test_healthcheck_probes_the_configured_port(harness: Any, packages: Path) -> None:
    with harness.serving("--root", str(packages)) as server:
        addr = f"127.0.0.1:{server.port}"
        probe = _run(harness, "--healthcheck", env={"TEMPLIQX_HTTP_ADDR": addr})
        assert probe.returncode == 0, probe.stderr
        wildcard = _run(harness, "--healthcheck", "--addr", f"0.0.0.0:{server.port}")
        assert wildcard.returncode == 0  # a container binds 0.0.0.0; the probe uses loopback
        port = server.port
    closed = _run(harness, "--healthcheck", "--addr", f"127.0.0.1:{port}")
    assert closed.returncode == 1
    assert closed.stderr.startswith("templiqx-http-server: healthcheck failed")


def test_a_render_fuel_out_of_range_is_one_startup_line(harness: Any, packages: Path) -> None:
    for bad in ("abc", "0", "50000001"):
        env = {"TEMPLIQX_RENDER_FUEL": bad}
        started = _run(harness, "--addr", "127.0.0.1:0", "--root", str(packages), env=env)
        assert started.returncode == 1
        assert started.stderr.count("\n") == 1, started.stderr
        assert started.stderr.startswith("templiqx-http-server: TEMPLIQX_RENDER_FUEL must be")
        checked = _run(
            harness, "--check", "--addr", "127.0.0.1:0", "--root", str(packages), env=env
        )
        assert checked.returncode == 1
        assert checked.stderr.startswith("templiqx-http-server: TEMPLIQX_RENDER_FUEL must be")
    env = {"TEMPLIQX_RENDER_FUEL": "5000"}
    fine = _run(harness, "--check", "--addr", "127.0.0.1:0", "--root", str(packages), env=env)
    assert fine.returncode == 0, fine.stderr
