"""Test helpers of the conformance kit: the example adapters and the mini adapters on path.

The example adapters are not workspace members. The third-party (echo) example's sources, its
tests folder (for ``conformance_target``) and its ``broken`` folder, the Messages-style
example's sources and tests folder (for ``messages_target``) and the NDJSON example's (for
``ollama_target``) are put on ``sys.path`` for in-process runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EXAMPLE = REPO / "examples" / "third-party-adapter"
MESSAGES = REPO / "examples" / "anthropic-style-adapter"
NDJSON = REPO / "examples" / "ndjson-adapter"

for folder in (
    HERE,
    EXAMPLE / "src",
    EXAMPLE / "tests",
    EXAMPLE / "broken",
    MESSAGES / "src",
    MESSAGES / "tests",
    NDJSON / "src",
    NDJSON / "tests",
):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "distribution: builds wheels and installs them into a fresh venv with pip (slow, needs "
        "the package index for msgspec, pytest and jsonschema-rs)",
    )
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
