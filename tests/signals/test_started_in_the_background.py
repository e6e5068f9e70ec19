"""The tests that send SIGINT pass when the test run was started in the background (issue #28).

``nohup uv run --frozen --all-packages nox > log 2>&1 &`` starts the gate with SIGINT ignored (a
shell without job control ignores it for background commands), and an ignored signal stays
ignored in every process started from there, across ``exec``. Python then installs no handler
of its own either. Each test that sends SIGINT therefore restores the disposition a terminal
gives in the process it signals (``SIG_DFL`` before ``exec`` in a child, Python's own handler in
its own process); these tests hold them to it:

* every test file that sends SIGINT is in :data:`SIGINT_TESTS`, so a new one is run here too;
* those tests pass in a pytest started with SIGINT ignored, as the background gate starts it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SIGINT_TESTS = {
    "packages/templiqx-cli/tests/test_interrupt.py": [],
    "packages/templiqx-mcp/tests/test_cli.py": [
        "test_ctrl_c_on_a_terminal_exits_130_promptly",
        "test_sigint_exits_130_when_served_over_pipes",
    ],
    "tests/surfaces/test_cancellation.py": ["test_cli_sigint_cancels_the_stream_and_exits_130"],
    "tests/batch/test_batch_cli.py": ["test_ctrl_c_leaves_a_resumable_output"],
}
"""Test file -> the tests in it that send SIGINT (all of them when none are named)."""

_SENDS_SIGINT = re.compile(r'SIGINT|b"\\x03"')  # the signal, or Ctrl-C typed on a pty


def _test_files() -> list[str]:
    found = []
    for top in ("packages", "conformance", "tests", "examples"):
        for path in (REPO / top).rglob("test_*.py"):
            if ".venv" in path.parts or path == Path(__file__).resolve():
                continue
            if _SENDS_SIGINT.search(path.read_text(encoding="utf-8")):
                found.append(str(path.relative_to(REPO)))
    return sorted(found)


def test_every_test_file_that_sends_sigint_is_run_here() -> None:
    assert _test_files() == sorted(SIGINT_TESTS)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_sigint_tests_pass_in_a_run_started_in_the_background() -> None:
    selected = [
        f"{path}::{name}" if name else path
        for path, names in SIGINT_TESTS.items()
        for name in names or [""]
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selected],
        cwd=REPO,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        preexec_fn=_ignore_sigint,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
    assert " skipped" not in done.stdout, done.stdout
    assert " deselected" not in done.stdout, done.stdout
