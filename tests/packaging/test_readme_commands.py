"""The two commands at the top of the README are the right ones, and the main job works as written.

The README opens with two one-line commands: the main job and the test suite. This test reads
them from README.md (so the README and the test cannot drift), checks the test command against
``.ci/run`` (which CI runs) and the main job against the demo's own hint, and runs the main-job
command verbatim with ``bash`` in a fresh ``git clone`` of the committed tree, from a shell
environment without the workspace's virtual environment. uv's cache is shared, so this proves
that everything the demo needs is committed, not that the package index is reachable.
The test command is not run here: it runs this suite (``.ci/run`` is its proof).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREFIX = "python3 -m pip install uv && "
MAIN_JOB = PREFIX + "uv run --frozen --all-packages templiqx demo"
TEST_COMMAND = PREFIX + "uv run --frozen --all-packages nox"


def readme_commands() -> list[str]:
    """The contents of the README's first two fenced blocks."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, flags=re.M | re.S)
    return [block.rstrip("\n") for block in blocks[:2]]


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


def test_the_main_job_works_as_written_on_a_fresh_clone(tmp_path: Path) -> None:
    for tool in ("git", "bash"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed to run the README's command on a clone")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)],
        check=True,
        timeout=300,
    )
    env = _fresh_shell_environment()
    done = subprocess.run(
        ["bash", "-c", readme_commands()[0]],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    report = f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, report
    assert "1/3 validate welcome: ok" in done.stdout, report
    assert "2/3 compile onboarding-summary: ok" in done.stdout, report
    assert "    execute: ok, 18 deltas streamed" in done.stdout, report
    assert '{"summary": "Anouk de Vries' in done.stderr, report
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == "", "the main job changes no tracked file"
