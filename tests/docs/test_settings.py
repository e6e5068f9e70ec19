"""Every environment variable the code reads is documented.

A ``"MODEL_..."``, ``"LANGFUSE_..."`` or ``"TEMPLIQX_..."`` string literal in the source of the
eleven distributions names a setting; each must appear in the README or a page under docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = [*REPO.glob("packages/*/src"), REPO / "conformance" / "src"]
_SETTING = re.compile(r"""["']((?:MODEL|LANGFUSE|TEMPLIQX)_[A-Z0-9_]+)["']""")
_DEFINED = re.compile(r"^((?:MODEL|LANGFUSE|TEMPLIQX)_[A-Z0-9_]+)\s*[:=]", re.MULTILINE)


def settings_read_by_the_code() -> set[str]:
    found: set[str] = set()
    for source in SOURCES:
        for path in source.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            # a name the module itself defines (and lists in __all__) is Python, not a setting
            defined = set(_DEFINED.findall(text))
            found.update(name for name in _SETTING.findall(text) if name not in defined)
    return found


def test_every_setting_is_documented() -> None:
    settings = settings_read_by_the_code()
    assert {"MODEL_BASE_URL", "TEMPLIQX_RUNTIME", "LANGFUSE_HOST"} <= settings
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    )
    assert sorted(s for s in settings if s not in text) == []
