"""The README's main-job command, exactly as written, on a fresh clone of the repository.

``python3 -m pip install uv && uv run --frozen --all-packages templiqx demo``: the first half
installs uv, which this test needs already; the second half runs here verbatim in a clone of
the committed tree, so anything the demo needs that is not committed makes it fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAIN_JOB = ["uv", "run", "--frozen", "--all-packages", "templiqx", "demo"]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not on PATH; the README's command needs it")
    return path


def test_main_job_command_works_on_a_fresh_clone(tmp_path: Path) -> None:
    git = _tool("git")
    _tool("uv")
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120)
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    env = {k: v for k, v in env.items() if not k.startswith("TEMPLIQX_")}
    env["TEMPLIQX_MOCK_PACE_MS"] = "0"
    done = subprocess.run(
        MAIN_JOB, cwd=clone, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[1] == "1/3 validate welcome: ok"
    assert lines[2] == "2/3 compile onboarding-summary: ok"
    assert "    execute: ok, 18 deltas streamed" in lines
    assert '{"summary": "Anouk de Vries start op 1 september' in done.stderr
    status = subprocess.run(
        [git, "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True
    )
    assert status.stdout == "", "the demo leaves the clone untouched"
