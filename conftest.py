"""Shared pytest fixtures for every distribution's tests.

``reference`` resolves the reference corpus (example packages, scenario manifests, goldens and
recorded streams of the Rust reference implementation). It is read in place, never copied:

* ``TEMPLIQX_REFERENCE`` set -> that folder must exist; a missing folder fails the test.
* unset -> ``../shared/reference`` beside the checkout is used when present;
* otherwise the parity tests are skipped with a message saying how to enable them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent


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


@pytest.fixture(scope="session")
def reference() -> Path:
    """The reference corpus folder (see the module docstring)."""
    root = _reference_root()
    if root is None:
        pytest.skip(
            "reference corpus not found: set TEMPLIQX_REFERENCE to the shared/reference folder "
            "to run the parity tests"
        )
    return root
