"""A missed reliability figure fails the pytest session, not only the printed table.

The suites' conftest and kit are copied beside a stand-in suite that declares a figure it never
reaches; pytest must then exit non-zero although every test passed, and must only report (not
enforce) when the run was narrowed with ``-k``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

STAND_IN = """
def test_attacks_are_counted(figures):
    figures.expect("R2", "attacks", ">=", 50)
    figures.add("R2", "attacks", {count})
"""


def _run(tmp_path: Path, count: int, *args: str) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / f"suite{count}"
    suite.mkdir()
    for name in ("conftest.py", "reliability_kit.py"):
        shutil.copy(HERE / name, suite / name)
    (suite / "test_r2_stand_in.py").write_text(STAND_IN.format(count=count), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), "-q", "-p", "no:cacheprovider", *args],
        cwd=suite,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missed_figure_fails_the_session(tmp_path: Path) -> None:
    done = _run(tmp_path, 3)
    assert "1 passed" in done.stdout, done.stdout
    assert "FIGURES NOT MET" in done.stdout
    assert "a figure was missed: the session fails" in done.stdout
    assert done.returncode == 1, done.stdout


def test_met_figures_pass(tmp_path: Path) -> None:
    done = _run(tmp_path, 50)
    assert "every figure met" in done.stdout, done.stdout
    assert done.returncode == 0, done.stdout


def test_a_narrowed_run_reports_without_enforcing(tmp_path: Path) -> None:
    done = _run(tmp_path, 3, "-k", "attacks")
    assert "FIGURES NOT MET" in done.stdout
    assert "figures not enforced: the run was narrowed (-k given)" in done.stdout
    assert done.returncode == 0, done.stdout
