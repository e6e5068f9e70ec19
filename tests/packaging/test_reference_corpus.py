"""Without the reference corpus the run says so once; with a configured but missing one it fails.

The root ``conftest.py`` is copied into a scratch project with three tests, two of which need the
``reference`` fixture, and pytest runs there in a subprocess (the scratch project has no
``../shared/reference`` beside it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TESTS = """
from pathlib import Path


def test_reads_the_corpus(reference: Path) -> None:
    assert reference.is_dir()


def test_reads_it_too(reference: Path) -> None:
    assert reference.is_dir()


def test_needs_nothing() -> None:
    assert Path(__file__).name == "test_corpus.py"
"""


def _run(project: Path, reference: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TEMPLIQX_REFERENCE"}
    if reference is not None:
        env["TEMPLIQX_REFERENCE"] = reference
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-ra", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "checkout"
    project.mkdir()
    shutil.copy(REPO / "conftest.py", project / "conftest.py")
    (project / "test_corpus.py").write_text(TESTS, encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return project


def test_an_absent_corpus_is_explained_in_one_line(tmp_path: Path) -> None:
    done = _run(_project(tmp_path), None)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    explained = [line for line in lines if "reference corpus" in line]
    assert explained == [
        "templiqx: 2 parity test(s) not run (deselected): the reference corpus was not found "
        "(TEMPLIQX_REFERENCE unset, no ../shared/reference beside the checkout); to run them, "
        "set TEMPLIQX_REFERENCE to the corpus folder — see docs/reference-corpus.md"
    ]
    assert not [line for line in lines if "SKIPPED" in line]
    assert "1 passed, 2 deselected" in lines[-1]


def test_a_corpus_beside_the_checkout_is_used(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (tmp_path / "shared" / "reference").mkdir(parents=True)
    done = _run(project, None)
    assert done.returncode == 0, done.stdout
    assert "3 passed" in done.stdout.splitlines()[-1]


def test_a_configured_corpus_that_is_missing_fails(tmp_path: Path) -> None:
    done = _run(_project(tmp_path), str(tmp_path / "nowhere"))
    assert done.returncode == 1, done.stdout
    assert "1 passed, 2 errors" in done.stdout.splitlines()[-1]
    assert "is set but is not a folder" in done.stdout
