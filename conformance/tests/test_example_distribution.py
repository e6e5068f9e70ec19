"""The example adapters, installed as the guide says from a clone, go green.

The install step of ``docs/writing-an-adapter.md`` (§1, "Install from a clone") is read from the
guide and run as written: ``uv build --all-packages --out-dir ~/templiqx-wheels`` in this
repository (with ``HOME`` a temporary folder), then ``pip install --find-links ~/templiqx-wheels
-e '.[test]'`` in a copy of each example (the echo adapter, the Messages-style adapter, the
NDJSON adapter), inside one fresh ``python -m venv`` (msgspec, pytest, jsonschema-rs and the
build backend come from the package index). Each example's README carries the same two
commands. Then each example's own suite runs there (the pytest plugin: the HTTP ones over the
kit's wires) and so does the command. The install is made once per session.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from templiqx_conformance import check_names

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "writing-an-adapter.md"
EXAMPLE = REPO / "examples" / "third-party-adapter"
MESSAGES = REPO / "examples" / "anthropic-style-adapter"
NDJSON = REPO / "examples" / "ndjson-adapter"

pytestmark = pytest.mark.distribution


def install_commands() -> tuple[str, str]:
    """The guide's install step: the build (in the clone) and the install (in the adapter)."""
    text = GUIDE.read_text(encoding="utf-8")
    after = text[text.index("**Install from a clone.**") :]
    block = re.search(r"^```sh\n(.*?)^```$", after, re.M | re.S)
    assert block is not None, "the guide's install step has no sh block"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    build, install = [line for line in lines if line]
    return build, install


@dataclass(frozen=True)
class Installed:
    venv: Path
    home: Path
    example: Path
    messages: Path
    ndjson: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        # ~ is a fresh folder (the wheels go there); uv's and pip's caches stay where they were
        env.setdefault("UV_CACHE_DIR", _uv_cache())
        env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
        env["HOME"] = str(self.home)
        return env

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=300, check=False
        )


def _uv_cache() -> str:
    found = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=False)
    return found.stdout.strip() or str(Path.home() / ".cache" / "uv")


def _shell(command: str, *, cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{command!r} in {cwd} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    if shutil.which("uv") is None:
        pytest.fail("uv is needed to build the wheels (the guide's install step uses it)")
    root = tmp_path_factory.mktemp("distribution")
    home = root / "home"
    home.mkdir()
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    copies = []
    for source in (EXAMPLE, MESSAGES, NDJSON):
        copy = root / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        copies.append(copy)
    done = Installed(venv, home, *copies)
    build, install = install_commands()
    _shell(build, cwd=REPO, env=done.env())
    assert len(list((home / "templiqx-wheels").glob("*.whl"))) == 11
    for copy in copies:
        _shell(install, cwd=copy, env=done.env())
    return done


def test_every_example_readme_gives_the_guides_install_step() -> None:
    build, install = install_commands()
    assert build == "uv build --all-packages --out-dir ~/templiqx-wheels"
    assert install == "pip install --find-links ~/templiqx-wheels -e '.[test]'"
    for example in (EXAMPLE, MESSAGES, NDJSON):
        readme = (example / "README.md").read_text(encoding="utf-8")
        assert build in readme, example.name
        assert install in readme, example.name


def test_the_wheels_install_without_the_workspace(installed: Installed) -> None:
    probe = installed.run(
        str(installed.bin / "python"),
        "-c",
        "import templiqx_conformance, acme_echo, acme_messages, acme_ollama\n"
        "print(templiqx_conformance.__file__)",
        cwd=installed.example,
    )
    assert probe.returncode == 0, probe.stderr
    assert str(installed.venv) in probe.stdout


def test_the_example_suite_runs_the_plugin_green(installed: Installed) -> None:
    result = installed.run(
        str(installed.bin / "python"),
        "-m",
        "pytest",
        "-v",
        "-p",
        "no:cacheprovider",
        cwd=installed.example,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in check_names():
        assert f"tests/conftest.py::templiqx-conformance::{name} " in result.stdout
    assert "SKIPPED" in result.stdout  # default_projection (the example streams), secrets, tools
    assert "FAILED" not in result.stdout


def test_the_command_runs_green_in_the_venv(installed: Installed) -> None:
    result = installed.run(
        str(installed.bin / "templiqx-conformance"),
        "run",
        "conformance_target:target",
        cwd=installed.example / "tests",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("0 failed, 3 not applicable: conformant")


def test_the_command_exits_two_for_a_broken_variant_in_the_venv(installed: Installed) -> None:
    env_path = installed.example / "tests"
    result = installed.run(
        str(installed.bin / "python"),
        "-c",
        f"import sys; sys.path.insert(0, {str(env_path)!r}); "
        "from templiqx_conformance.cli import main; "
        "sys.exit(main(['run', 'variants:ignores_cancel_target']))",
        cwd=installed.example / "broken",
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "FAIL  cancellation.token" in result.stdout


def test_the_messages_example_suite_runs_the_wire_suite_green(installed: Installed) -> None:
    result = installed.run(
        str(installed.bin / "python"),
        "-m",
        "pytest",
        "-v",
        "-p",
        "no:cacheprovider",
        cwd=installed.messages,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in check_names("openai"):
        assert f"tests/conftest.py::templiqx-conformance-wire::{name} " in result.stdout
    assert "FAILED" not in result.stdout


def test_the_ndjson_example_suite_runs_the_wire_suite_green(installed: Installed) -> None:
    result = installed.run(
        str(installed.bin / "python"),
        "-m",
        "pytest",
        "-v",
        "-p",
        "no:cacheprovider",
        cwd=installed.ndjson,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in check_names("ollama"):
        assert f"tests/conftest.py::templiqx-conformance-wire::{name} " in result.stdout
    assert "FAILED" not in result.stdout
    command = installed.run(
        str(installed.bin / "templiqx-conformance"),
        "run",
        "ollama_target:target",
        cwd=installed.ndjson / "tests",
    )
    assert command.returncode == 0, command.stdout + command.stderr
    assert "over the ollama transport" in command.stdout
