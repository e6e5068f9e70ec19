"""The diagnostic reference lists exactly the codes the code can emit, each with a fix hint.

"Can emit": every ``TQX_*`` string literal in the source of the distributions, plus the
code registries (``templiqx_core.CORE_CODES``, ``templiqx_application.APPLICATION_CODES`` and
``PORT_CODES``, ``templiqx_ports.RuntimeFailureCode``). Every such code must appear in
docs/reference/diagnostics.md and have a fix hint in a registry; every code the reference, the
README or a page of the guide names must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

from templiqx_application import APPLICATION_CODES, BATCH_CODES, PORT_CODES, fix_hint
from templiqx_core import CORE_CODES
from templiqx_ports import RuntimeFailureCode

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference" / "diagnostics.md"
SOURCES = [*REPO.glob("packages/*/src"), REPO / "conformance" / "src"]
# Pages written by other areas, and design notes that may name the reference's own codes.
NOT_GUIDE = {"writing-an-adapter.md", "reliability.md", "performance.md"}
_LITERAL = re.compile(r"""["'](TQX_[A-Z0-9_]+)["']""")
_CODE = re.compile(r"\bTQX_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*])")  # not a prefix like TQX_RUNTIME_*


def emitted_codes() -> dict[str, set[str]]:
    """Every code literal in the source, with the files it appears in."""
    found: dict[str, set[str]] = {}
    for source in SOURCES:
        for path in source.rglob("*.py"):
            for code in _LITERAL.findall(path.read_text(encoding="utf-8")):
                found.setdefault(code, set()).add(str(path.relative_to(REPO)))
    return found


def registered_codes() -> set[str]:
    return (
        set(CORE_CODES)
        | set(APPLICATION_CODES)
        | set(PORT_CODES)
        | set(BATCH_CODES)
        | {code.value for code in RuntimeFailureCode}
    )


def test_the_source_scan_finds_the_codes() -> None:
    emitted = emitted_codes()
    assert len(emitted) > 80
    assert "TQX_PARSE_YAML" in emitted
    assert "TQX_RUNTIME_CANCELLED" in emitted


def test_every_emitted_code_is_in_the_reference() -> None:
    documented = set(_CODE.findall(REFERENCE.read_text(encoding="utf-8")))
    known = set(emitted_codes()) | registered_codes()
    assert sorted(known - documented) == [], "regenerate: uv run python tools/gen_docs.py"


def test_every_emitted_code_has_a_fix_hint() -> None:
    hinted = set(CORE_CODES) | set(APPLICATION_CODES) | set(PORT_CODES) | set(BATCH_CODES)
    missing = {code: sorted(files) for code, files in emitted_codes().items() if code not in hinted}
    assert missing == {}, "add the code with a fix hint to its layer's registry"


def test_every_code_in_the_catalogue_has_help() -> None:
    # what every envelope gives a diagnostic that came without help (issue #19)
    assert sorted(code for code in registered_codes() if not fix_hint(code)) == []


def test_every_documented_code_exists() -> None:
    known = set(emitted_codes()) | registered_codes()
    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "docs").glob("*/*.md")]
    unknown = []
    for page in pages:
        if page.name in NOT_GUIDE or page.parent.name == "decisions":
            continue
        for code in sorted(set(_CODE.findall(page.read_text(encoding="utf-8"))) - known):
            unknown.append(f"{page.relative_to(REPO)}: {code}")
    assert unknown == []
