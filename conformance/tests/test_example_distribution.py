"""The example adapters, installed with plain pip beside wheels of the kit, go green.

Wheels of templiqx-contracts, templiqx-ports, templiqx-conformance and both examples (the
third-party echo adapter and the Messages-style HTTP adapter) are built with ``uv build``; a
fresh ``python -m venv`` gets them with ``pip install`` (msgspec, pytest and jsonschema-rs come
from the package index); then each example's own test suite runs there (the pytest plugin: the
Messages-style one over its Wire) and so does the command. The build and the venv are made once
per session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from templiqx_conformance import check_names

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "third-party-adapter"
MESSAGES = REPO / "examples" / "anthropic-style-adapter"
KIT_DISTRIBUTIONS = ("templiqx-contracts", "templiqx-ports", "templiqx-conformance")

pytestmark = pytest.mark.distribution


@dataclass(frozen=True)
class Installed:
    venv: Path
    example: Path
    messages: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return subprocess.run(
            args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
        )


def _uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.fail("uv is needed to build the wheels (it builds the whole workspace)")
    return found


def _build(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [_uv(), "build", "--wheel", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"uv build {' '.join(args)} failed:\n{done.stderr}"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("distribution")
    wheels = root / "wheels"
    for name in KIT_DISTRIBUTIONS:
        _build("--package", name, "--out-dir", str(wheels), cwd=REPO)
    copies = []
    for source in (EXAMPLE, MESSAGES):
        copy = root / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        _build("--out-dir", str(wheels), str(copy), cwd=root)
        copies.append(copy)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    built = sorted(str(path) for path in wheels.glob("*.whl"))
    assert len(built) == 5, built
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *built],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return Installed(venv=venv, example=copies[0], messages=copies[1])


def test_the_wheels_install_without_the_workspace(installed: Installed) -> None:
    probe = installed.run(
        str(installed.bin / "python"),
        "-c",
        "import templiqx_conformance, acme_echo, acme_messages\n"
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
