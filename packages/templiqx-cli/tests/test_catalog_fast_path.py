"""``templiqx catalog``: answered from the shipped snapshot, without click or the service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from templiqx_cli import main
from templiqx_cli.entry import _is_plain_catalog_call
from templiqx_cli.snapshot import SNAPSHOT_PATH, live_catalog_envelope, load_catalog, snapshot_text


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["catalog"], False),
        (["catalog", "--json"], True),
        (["--json", "catalog"], True),
        (["--root", "x", "catalog", "--runtime=mock"], False),
        (["catalog", "--root=catalog", "--json"], True),
        (["--root", "catalog", "discover"], None),
        (["catalog", "--help"], None),
        (["catalog", "extra"], None),
        (["catalog", "catalog"], None),
        (["catalog", "--root"], None),
        (["discover"], None),
        ([], None),
    ],
)
def test_fast_path_recognises_only_plain_catalog_calls(
    argv: list[str], expected: bool | None
) -> None:
    assert _is_plain_catalog_call(argv) is expected


def test_snapshot_is_the_live_catalog() -> None:
    live = live_catalog_envelope()
    assert load_catalog() == live, "regenerate: python -m templiqx_cli.snapshot --write"
    assert Path(SNAPSHOT_PATH).read_text(encoding="utf-8") == snapshot_text(live)
    assert live["ok"] is True


def test_catalog_prints_compact_json_or_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--json"]) == 0
    compact = capsys.readouterr().out
    assert compact.count("\n") == 1
    assert json.loads(compact) == load_catalog()
    assert main(["catalog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    operations = load_catalog()["result"]
    assert lines[0] == f"✓ catalog: {len(operations)} operations"
    assert lines[1].split() == ["operation", "command", "summary"]
    assert lines[2].split()[:2] == ["catalog", "catalog"]
    assert any(line.split()[:2] == ["validate_package", "validate"] for line in lines)


def test_catalog_imports_neither_click_nor_the_service_and_touches_nothing(
    tmp_path: Path,
) -> None:
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    missing_root = tmp_path / "not-created"
    probe = (
        "import sys\n"
        "from templiqx_cli import main\n"
        f"code = main(['--root', {str(missing_root)!r}, 'catalog', '--json'])\n"
        "heavy = sorted(m for m in ('click', 'templiqx_application', 'templiqx_core', 'mcp',"
        " 'msgspec', 'json', 'typing') if m in sys.modules)\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=readonly,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
    finally:
        readonly.chmod(0o755)
    assert done.stderr.strip() == "0 []"
    assert json.loads(done.stdout)["operation"] == "catalog"
    assert not missing_root.exists()


def test_catalog_view_names_composes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing_root = tmp_path / "not-created"
    assert _is_plain_catalog_call(["catalog", "--view", "names"]) is None  # click answers it
    assert main(["--root", str(missing_root), "catalog", "--view", "names", "--json"]) == 0
    names = json.loads(capsys.readouterr().out)
    assert names["result"] == [operation["name"] for operation in load_catalog()["result"]]
    assert main(["catalog", "--view", "full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == load_catalog()
    assert main(["catalog", "--view", "all", "--json"]) == 2
    refused = json.loads(capsys.readouterr().out)
    assert [d["code"] for d in refused["diagnostics"]] == ["TQX_ARGUMENT_INVALID"]
    assert main(["catalog", "--view", "names"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["catalog", "catalog"]
    assert not missing_root.exists()
