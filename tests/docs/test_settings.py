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


_DEFINED = re.compile(r"^([A-Z][A-Z0-9_]*)\s*(?::[^=\n]*)?=", re.M)
"""A module-level Python name being assigned (``TEMPLIQX_METRICS: Final = ...``): its string in
``__all__`` names that constant, not an environment variable."""


def settings_read_by_the_code() -> set[str]:
    found: set[str] = set()
    for source in SOURCES:
        for path in source.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            found.update(set(_SETTING.findall(text)) - set(_DEFINED.findall(text)))
    return found


def test_every_setting_is_documented() -> None:
    settings = settings_read_by_the_code()
    assert {"MODEL_BASE_URL", "TEMPLIQX_RUNTIME", "LANGFUSE_HOST"} <= settings
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    )
    assert sorted(s for s in settings if s not in text) == []
