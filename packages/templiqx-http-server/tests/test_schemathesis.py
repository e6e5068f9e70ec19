"""Schemathesis against a live server: no server error, no response that breaks the document.

Schemathesis runs from its own environment (it pins an older jsonschema-rs than templiqx-core
uses, so it cannot share the workspace's): ``TEMPLIQX_SCHEMATHESIS`` names its command, else
``.nox/schemathesis`` is used, made with uv from ``schemathesis.txt`` when missing (a failure to
make it fails the test). The checks are configured in ``schemathesis.toml``. The default run is
short (the fuzzing phase, three requests per operation); ``nox -s schemathesis`` runs every
phase with sixty (``TEMPLIQX_SCHEMATHESIS_FULL=1``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
VENV = REPO / ".nox" / "schemathesis"


def schemathesis_command() -> Path:
    """The ``schemathesis`` command, installed into :data:`VENV` when needed."""
    given = os.environ.get("TEMPLIQX_SCHEMATHESIS")
    if given:
        return Path(given)
    command = VENV / "bin" / "schemathesis"
    if command.exists():
        return command
    uv = shutil.which("uv")
    assert uv is not None, "uv is needed to install schemathesis into .nox/schemathesis"
    requirement = (HERE / "schemathesis.txt").read_text(encoding="utf-8").strip()
    for argv in (
        [uv, "venv", "--quiet", str(VENV)],
        [uv, "pip", "install", "--quiet", "--python", str(VENV / "bin" / "python"), requirement],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"could not install {requirement}: {done.stderr}"
    return command


def test_no_server_error_and_no_response_breaks_the_document(
    harness: Any, packages: Path, tmp_path: Path
) -> None:
    command = schemathesis_command()
    full = os.environ.get("TEMPLIQX_SCHEMATHESIS_FULL") == "1"
    # full: every phase (examples, coverage cases at the boundaries, fuzzing, stateful);
    # CI-sized: a few generated requests per operation.
    fuzz = ["--max-examples", "3", "--phases", "fuzzing"]
    budget = ["--max-examples", "60"] if full else fuzz
    with harness.serving("--root", str(packages)) as server:
        url = f"http://127.0.0.1:{server.port}/operations/v1/openapi.json"
        done = subprocess.run(
            [
                str(command),
                "--config-file",
                str(HERE / "schemathesis.toml"),
                "run",
                url,
                *budget,
                "--seed",
                "26",
                "--generation-database",
                "none",
                "--workers",
                "1",
                "--no-color",
                "--report",
                "junit",
                "--report-dir",
                str(tmp_path / "report"),
            ],
            capture_output=True,
            text=True,
            timeout=3000 if full else 600,
            cwd=tmp_path,
            check=False,
        )
    summary = done.stdout[-6000:]
    assert done.returncode == 0, f"schemathesis found problems:\n{summary}\n{done.stderr[-2000:]}"
    assert " passed" in done.stdout
    errors = [line for line in server.stdout if '"level":"error"' in line]
    assert errors == [], errors
