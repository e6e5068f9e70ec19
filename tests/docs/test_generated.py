"""The generated parts of the documentation match the code (tools/gen_docs.py --check)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "tools" / "gen_docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_docs_are_up_to_date() -> None:
    stale = _gen_docs().stale_pages()
    assert stale == [], "run: uv run --frozen python tools/gen_docs.py"


def test_the_check_command_agrees() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_docs.py"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_changed_block_is_detected(tmp_path: Path) -> None:
    gen = _gen_docs()
    page = "docs/reference/diagnostics.md"
    text = (REPO / page).read_text(encoding="utf-8")
    tampered = text.replace("| `TQX_PARSE_YAML` |", "| `TQX_PARSE_YML` |", 1)  # in the table
    assert tampered != text
    assert gen.render(page, tampered) == gen.render(page, text)
    assert gen.render(page, tampered) != tampered
    for name in gen.BLOCKS:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((REPO / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / page).write_text(tampered, encoding="utf-8")
    assert gen.stale_pages(tmp_path) == [page]
