"""Shared pytest fixtures for every distribution's tests.

``reference`` resolves the reference corpus (example packages, scenario manifests, goldens and
recorded streams of the Rust reference implementation; docs/reference-corpus.md says where it
comes from). It is read in place, never copied:

* ``TEMPLIQX_REFERENCE`` set -> that folder must exist; a missing folder fails every test that
  needs it (a configured corpus must be used, never silently skipped).
* unset -> ``../shared/reference`` beside the checkout is used when present;
* otherwise the tests that need the corpus are not collected (reported as deselected), and one
  line at the end of the run says how many and how to get the corpus — not one skip line each.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent
GUIDE = "docs/reference-corpus.md"

_LEFT_OUT = pytest.StashKey[int]()


def _reference_root() -> Path | None:
    configured = os.environ.get("TEMPLIQX_REFERENCE")
    if configured:
        path = Path(configured).expanduser().resolve()
        if not path.is_dir():
            pytest.fail(
                f"TEMPLIQX_REFERENCE={configured!r} is set but is not a folder: "
                "the parity tests must run when it is set"
            )
        return path
    sibling = REPO.parent / "shared" / "reference"
    return sibling if sibling.is_dir() else None


def _corpus_absent() -> bool:
    """True when no corpus is configured and none lies beside the checkout."""
    if os.environ.get("TEMPLIQX_REFERENCE"):
        return False  # configured: the fixture uses it or fails, never leaves tests out
    return not (REPO.parent / "shared" / "reference").is_dir()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a corpus, leave out the tests that need one (counted for the closing line)."""
    if not _corpus_absent():
        return
    needing = [item for item in items if "reference" in getattr(item, "fixturenames", ())]
    if not needing:
        return
    config.hook.pytest_deselected(items=needing)
    left = set(needing)
    items[:] = [item for item in items if item not in left]
    config.stash[_LEFT_OUT] = len(needing)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """One line explaining the tests left out for want of the reference corpus."""
    count = config.stash.get(_LEFT_OUT, 0)
    if count:
        terminalreporter.write_line(
            f"templiqx: {count} parity test(s) not run (deselected): the reference corpus was "
            "not found (TEMPLIQX_REFERENCE unset, no ../shared/reference beside the checkout); "
            f"to run them, set TEMPLIQX_REFERENCE to the corpus folder — see {GUIDE}"
        )


@pytest.fixture(scope="session")
def reference() -> Path:
    """The reference corpus folder (see the module docstring)."""
    root = _reference_root()
    if root is None:  # only reached through request.getfixturevalue: collection left it out
        pytest.skip(
            f"reference corpus not found: set TEMPLIQX_REFERENCE to its folder (see {GUIDE})"
        )
    return root
