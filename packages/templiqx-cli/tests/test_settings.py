"""A bad work-budget setting is one line and exit 1, never a traceback (issue #29)."""

from __future__ import annotations

from pathlib import Path

import pytest

from templiqx_cli.app import run


def test_a_render_fuel_out_of_range_is_one_line(
    packages_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("abc", "0", "50000001"):
        monkeypatch.setenv("TEMPLIQX_RENDER_FUEL", bad)
        assert run(["--root", str(packages_root), "validate", "welcome"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "TEMPLIQX_RENDER_FUEL" in err
    monkeypatch.setenv("TEMPLIQX_RENDER_FUEL", "5000")
    assert run(["--root", str(packages_root), "validate", "welcome"]) == 0
