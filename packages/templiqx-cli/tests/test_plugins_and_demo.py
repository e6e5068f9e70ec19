"""``templiqx <plugin> …`` dispatch through entry points, and ``templiqx demo``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from templiqx_cli import demo, main
from templiqx_cli import group as cli_group
from templiqx_cli.inputs import CliError

RECEIVED: list[list[str] | None] = []


@dataclass(frozen=True)
class FakeEntryPoint:
    """What the CLI uses of an entry point: its name, its value and ``load()``."""

    name: str
    value: str
    target: Callable[[list[str] | None], int]

    def load(self) -> Callable[[list[str] | None], int]:
        return self.target


def fake_plugin(argv: list[str] | None) -> int:
    RECEIVED.append(argv)
    return 3


def test_plugins_are_dispatched_by_entry_point(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = FakeEntryPoint("conformance", "templiqx_conformance.cli:main", fake_plugin)

    def entry_points(group: str) -> list[FakeEntryPoint]:
        return [entry] if group == cli_group.PLUGIN_GROUP else []

    monkeypatch.setattr(cli_group, "entry_points", entry_points)
    RECEIVED.clear()
    assert main(["conformance", "run", "--adapter", "x", "--help"]) == 3
    assert RECEIVED == [["run", "--adapter", "x", "--help"]]
    assert main(["help", "conformance"]) == 3  # the plugin prints its own help
    assert RECEIVED[-1] == ["--help"]
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    plugins = text[text.index("Plugins:") :].splitlines()
    assert plugins[1].split()[0] == "conformance"
    assert "The 'conformance' command of templiqx_conformance.cli" in " ".join(text.split())
    assert main(["no-plugin"]) == 2


def test_an_installed_plugin_describes_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "conformance Conformance kit for templiqx runtime adapters" in text
    assert "Plugin from" not in text


def test_demo_refuses_another_runtime(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--runtime", "openai", "demo"], ["demo", "--runtime", "fake"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "demo always runs on the scripted mock runtime ('mock')" in err
        assert "execute" in err


def test_the_shipped_example_is_the_fixture() -> None:
    """The example package inside the wheel is fixtures/packages/welcome, file for file (with
    TEMPLIQX_UPDATE_GOLDENS=1 the shipped copy is written from the fixture)."""
    fixture = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"
    if os.environ.get("TEMPLIQX_UPDATE_GOLDENS") == "1":
        shutil.rmtree(demo.EXAMPLE, ignore_errors=True)
        shutil.copytree(fixture, demo.EXAMPLE)

    def files(folder: Path) -> dict[str, bytes]:
        return {
            str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts
        }

    assert demo.find_demo_package() == demo.EXAMPLE
    assert files(demo.EXAMPLE) == files(fixture)


def test_demo_explains_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "find_demo_package", lambda: None)
    with pytest.raises(CliError, match="reinstall templiqx-cli, or run the demo from a clone"):
        demo._require_setup()
    monkeypatch.undo()
    monkeypatch.setattr(demo, "runtime_names", lambda: ["fake"])
    with pytest.raises(CliError) as missing:
        demo._require_setup()
    text = str(missing.value)
    assert "uv tool install --find-links dist templiqx-cli --with templiqx-mock" in text
    assert "uv run --frozen --all-packages templiqx demo" in text


def test_the_next_line_names_the_command_as_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_RUN_RECURSION_DEPTH", "1")
    monkeypatch.setenv("VIRTUAL_ENV", str(Path(__file__).resolve().parents[3] / ".venv"))
    assert demo.invoked_as() == "uv run --frozen --all-packages templiqx"
    monkeypatch.setenv("VIRTUAL_ENV", "/somewhere/else/.venv")
    assert demo.invoked_as() == "uv run templiqx"
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH")
    monkeypatch.setattr(demo.shutil, "which", lambda name: None)
    monkeypatch.setattr(demo.sys, "argv", [str(Path(sys.executable).parent / "templiqx")])
    assert demo.invoked_as() == str((Path(sys.executable).parent / "templiqx").resolve())


def test_demo_runs_end_to_end_offline(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "templiqx_cli", "demo", "--json", "--pace-ms", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert list(report) == ["validate", "compile", "execute"]
    assert all(envelope["ok"] for envelope in report.values())
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert [e["kind"] for e in events] == ["Delta"] * 18 + ["Complete"]
    assert report["execute"]["stream_events"] == events
    assert list(tmp_path.iterdir()) == [], "the demo writes nothing where it runs"


def test_demo_copies_the_example_when_asked(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "templiqx_cli", "demo", "--pace-ms", "0", "--copy-to", "mine"]
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "mine" / "welcome" / "templiqx.yaml").is_file()
    assert "--root mine explain welcome onboarding-summary" in done.stdout
    again = subprocess.run(
        argv, capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False
    )
    assert again.returncode == 1
    assert "already exists" in again.stderr
