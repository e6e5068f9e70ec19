"""The newcomer's path works as written, in fresh clones: the README's commands and the quick start.

The README opens with two one-line commands: the main job and the test suite. These tests read
them (and the README's other commands) from README.md, so the README and the tests cannot drift,
and run them verbatim with ``bash`` in a fresh ``git clone`` of the committed tree, from a shell
environment without the workspace's virtual environment. uv's cache is shared, so they prove that
everything the commands need is committed, not that the package index is reachable (installing
uv into a new virtual environment does use the index, as the install test does).

* the main job, as written (first half included);
* the PEP 668 way: with a ``python3`` that refuses ``pip install`` (as Debian's and Ubuntu's
  system Pythons do), the README's main job fails as the README says, and its alternative — uv
  in a virtual environment of its own — runs the main job and resolves the test command;
* the quick start, end to end: the main job, then every runnable block of docs/quickstart.md in
  order from the clone's top folder with the clone's environment on PATH (outputs compared as in
  tests/docs), then: the clone is unchanged (``git status --porcelain`` empty, untracked files
  included, before and after the quick start's clean-up step), a folder made under
  ``packages/`` does not break ``uv run``, and both README commands still work;
* installing from the clone's wheels with the README's one command; then, with only that
  installed CLI, in a folder outside any clone, the quick start's steps that need no clone.

The test command (``uv run --frozen --all-packages nox``) is the whole gate, this test included:
running it here would recurse. So the default run proves it resolves (``nox --list`` in the
clone after the quick start: the environment builds and every session is found), ``.ci/run``
runs it for real, and the opt-in nox session ``newcomer`` (``uv run --frozen --all-packages nox
-s newcomer``) runs this module with ``TEMPLIQX_NEWCOMER_FULL=1``, which runs the full gate inside
the quick start's clone (the inner run does not see the variable, so it does not recurse).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
PREFIX = "python3 -m pip install uv && "
MAIN_JOB = PREFIX + "uv run --frozen --all-packages templiqx demo"
TEST_COMMAND = PREFIX + "uv run --frozen --all-packages nox"
FULL = os.environ.get("TEMPLIQX_NEWCOMER_FULL") == "1"
DEMO_DONE = "    execute: ok, 18 deltas streamed"


def _sh_blocks(text: str) -> list[str]:
    return [block.rstrip("\n") for block in re.findall(r"^```sh\n(.*?)^```$", text, re.M | re.S)]


def readme_commands() -> list[str]:
    """The contents of the README's first two fenced blocks."""
    return _sh_blocks((REPO / "README.md").read_text(encoding="utf-8"))[:2]


def _readme_block(after: str) -> str:
    """The first ``sh`` block of the README after the text ``after``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return _sh_blocks(text[text.index(after) :])[0]


def test_the_readme_opens_with_the_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    head = text.split("\n## ", 1)[0]
    assert readme_commands() == [MAIN_JOB, TEST_COMMAND]
    assert head.index(MAIN_JOB) < head.index(TEST_COMMAND)
    for command in readme_commands():
        assert "\n" not in command
        assert command.startswith(PREFIX)


def test_ci_runs_exactly_the_test_command() -> None:
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert lines[-1] == readme_commands()[1]


def test_the_demo_names_the_main_job() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "templiqx_cli", "demo", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert readme_commands()[0] in done.stdout


def _fresh_shell_environment() -> dict[str, str]:
    """The environment of a new login shell: no workspace venv, no uv run state, no settings."""
    workspace_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != workspace_bin]
    return {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("VIRTUAL_ENV", "UV", "PYTHON", "TEMPLIQX_", "MODEL_"))
        },
        "PATH": os.pathsep.join(path),
    }


def _clone(tmp_path: Path) -> Path:
    for tool in ("git", "bash"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed to run the README's commands on a clone")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], check=True, timeout=300
    )
    return clone


def _bash(
    script: str, cwd: Path, env: dict[str, str], *, timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _report(done: subprocess.CompletedProcess[str]) -> str:
    return f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"


def _assert_demo_ran(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, _report(done)
    assert "1/3 validate welcome: ok" in done.stdout, _report(done)
    assert "2/3 compile onboarding-summary: ok" in done.stdout, _report(done)
    assert DEMO_DONE in done.stdout, _report(done)
    assert '{"summary": "Anouk de Vries' in done.stderr, _report(done)


def _status(clone: Path) -> str:
    """``git status --porcelain`` (untracked files included): empty when the clone is unchanged."""
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout


def test_the_main_job_works_as_written_on_a_fresh_clone(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    done = _bash(readme_commands()[0], clone, _fresh_shell_environment())
    _assert_demo_ran(done)
    assert _status(clone) == "", "the main job changes nothing in the clone"


_REFUSING_PYTHON = """#!/usr/bin/env bash
# python3 as on Debian/Ubuntu: pip refuses to install into it (PEP 668); everything else works.
if [ "$1" = "-m" ] && [ "$2" = "pip" ] && [ "$3" = "install" ]; then
  echo "error: externally-managed-environment" >&2
  exit 1
fi
exec {python} "$@"
"""


def test_the_pep_668_way_works_on_a_fresh_clone(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    env = _fresh_shell_environment()
    real = shutil.which("python3", path=env["PATH"])
    assert real is not None, "python3 is needed"
    shims = tmp_path / "system-bin"
    shims.mkdir()
    (shims / "python3").write_text(_REFUSING_PYTHON.format(python=real), encoding="utf-8")
    (shims / "python3").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    env = {**env, "PATH": f"{shims}{os.pathsep}{env['PATH']}", "HOME": str(home)}
    refused = _bash(readme_commands()[0], clone, env)
    assert refused.returncode != 0
    assert "externally-managed-environment" in refused.stderr
    lines = _readme_block("externally-managed-environment").split("\n")
    assert lines == [
        'python3 -m venv ~/.uv-venv && ~/.uv-venv/bin/pip install uv && export PATH="$HOME/'
        '.uv-venv/bin:$PATH"',
        readme_commands()[0].removeprefix(PREFIX),
        readme_commands()[1].removeprefix(PREFIX),
    ]
    _assert_demo_ran(_bash("\n".join(lines[:2]), clone, env))
    listed = _bash(f"{lines[0]}\n{lines[2]} --list", clone, env)
    assert listed.returncode == 0, _report(listed)
    assert "tests" in listed.stdout, _report(listed)
    assert _status(clone) == ""


def _runnable_blocks() -> ModuleType:
    """tests/docs/test_runnable.py: the runnable-block parser the docs tests use."""
    path = REPO / "tests" / "docs" / "test_runnable.py"
    spec = importlib.util.spec_from_file_location("templiqx_docs_runnable", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def test_the_quickstart_end_to_end_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    shell = _fresh_shell_environment()
    _assert_demo_ran(_bash(readme_commands()[0], clone, shell))
    # "activate the environment that command created" — the quick start's own words
    quick = {
        **shell,
        "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{shell['PATH']}",
        "VIRTUAL_ENV": str(clone / ".venv"),
        "TEMPLIQX_MOCK_PACE_MS": "0",
    }
    page = clone / "docs" / "quickstart.md"
    blocks = _runnable_blocks().runnable_blocks(page.read_text(encoding="utf-8"))
    assert blocks[-1].code.strip() == "rm -rf my-templiqx", "the quick start ends by cleaning up"
    for block in blocks:
        if block is blocks[-1]:
            assert (clone / "my-templiqx" / "packages" / "demo" / "templiqx.yaml").is_file()
            assert _status(clone) == "", "everything the quick start made is ignored by git"
        if block.language == "sh":
            done = _bash(block.code, clone, quick, timeout=180)
        else:
            done = subprocess.run(
                [str(clone / ".venv" / "bin" / "python"), "-c", block.code],
                cwd=clone,
                env=quick,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
        where = f"docs/quickstart.md:{block.line}"
        assert done.returncode == block.exit_code, f"{where}\n{_report(done)}"
        if block.output is not None:
            assert _normalized(done.stdout) == _normalized(block.output), where
    assert not (clone / "my-templiqx").exists()
    assert _status(clone) == ""
    # a folder under packages/ is no workspace member: uv run still works
    (clone / "packages" / "scratch").mkdir()
    version = _bash("uv run --frozen --all-packages templiqx --version", clone, shell)
    assert version.stdout == "templiqx 0.2.0\n", _report(version)
    (clone / "packages" / "scratch").rmdir()
    # both README commands, again, on the clone the quick start was followed in
    _assert_demo_ran(_bash(readme_commands()[0], clone, shell))
    gate = readme_commands()[1] if FULL else readme_commands()[1] + " --list"
    if FULL and os.environ.get("TEMPLIQX_REFERENCE"):
        shell = {**shell, "TEMPLIQX_REFERENCE": os.environ["TEMPLIQX_REFERENCE"]}
    done = _bash(gate, clone, shell, timeout=3600)
    assert done.returncode == 0, _report(done)
    if not FULL:
        assert all(name in done.stdout for name in ("lint", "typecheck", "tests")), _report(done)
    assert _status(clone) == "", "the README commands change nothing in the clone"


def test_install_from_the_clones_wheels(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    if shutil.which("uv") is None:
        pytest.fail("uv is not on PATH: install it with `python3 -m pip install uv`")
    command = _readme_block("## Install")
    assert command == (
        "uv build --all-packages --out-dir dist && uv tool install --find-links dist templiqx-cli"
    )
    tools = tmp_path / "uv-tools"
    env = {
        **_fresh_shell_environment(),
        "UV_TOOL_DIR": str(tools / "environments"),
        "UV_TOOL_BIN_DIR": str(tools / "bin"),
    }
    installed = _bash(command, clone, env)
    assert installed.returncode == 0, _report(installed)
    templiqx = tools / "bin" / "templiqx"
    assert templiqx.is_file(), _report(installed)
    done = subprocess.run(
        [str(templiqx), "--root", "fixtures/packages", "validate", "welcome"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, _report(done)
    assert done.stdout.startswith("✓ validate welcome: 2 contracts valid"), _report(done)
    assert _status(clone) == "", "dist/ and the workspace are ignored"
    # outside a clone, with only the installed CLI: the quick start's steps that need no clone
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    python = tools / "environments" / "templiqx-cli" / "bin" / "python"
    path = {**env, "PATH": f"{tools / 'bin'}{os.pathsep}{env['PATH']}"}
    page = (clone / "docs" / "quickstart.md").read_text(encoding="utf-8")
    ran = 0
    for block in _runnable_blocks().runnable_blocks(page):
        if "fixtures/" in block.code or "templiqx demo" in block.code:
            continue  # steps 2, 3 and 6: the page says they need a clone
        if block.language == "sh":
            done = _bash(block.code, elsewhere, path, timeout=180)
        else:
            done = subprocess.run(
                [str(python), "-c", block.code],
                cwd=elsewhere,
                env=path,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
        where = f"docs/quickstart.md:{block.line} outside a clone"
        assert done.returncode == block.exit_code, f"{where}\n{_report(done)}"
        if block.output is not None:
            assert _normalized(done.stdout) == _normalized(block.output), where
        ran += 1
    assert ran >= 6, "steps 1, 4, 5, 7 and the clean-up ran"
    assert list(elsewhere.iterdir()) == [], "the clean-up removes all the quick start made"
