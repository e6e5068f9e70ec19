"""Fixtures for the CLI tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

WELCOME = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"


@pytest.fixture
def packages_root(tmp_path: Path) -> Path:
    """A packages root holding a copy of the welcome example package."""
    root = tmp_path / "packages"
    shutil.copytree(WELCOME, root / "welcome")
    return root


@pytest.fixture(autouse=True)
def _no_templiqx_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "TEMPLIQX_MOCK_SCENARIO",
        "TEMPLIQX_MOCK_PACE_MS",
        "TEMPLIQX_PACKAGE_SIGNING_KEY",
        "TEMPLIQX_PACKAGE_STRICT",
    ):
        monkeypatch.delenv(name, raising=False)
