"""The catalog envelope as shipped beside this module, so ``templiqx catalog`` needs no service.

``catalog.json`` is written by ``python -m templiqx_cli.snapshot --write`` from the service's own
``catalog`` operation; a test fails when it differs from what the service answers, so the file
cannot drift from the catalog.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["SNAPSHOT_PATH", "live_catalog_envelope", "load_catalog", "print_catalog"]

SNAPSHOT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")


def load_catalog() -> dict[str, Any]:
    """The shipped catalog envelope as plain JSON data."""
    with open(SNAPSHOT_PATH, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def print_catalog(*, as_json: bool) -> int:
    """Print the catalog envelope (compact with ``as_json``, else pretty); exit code 0 or 1."""
    try:
        envelope = load_catalog()
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"templiqx: read catalog snapshot {SNAPSHOT_PATH}: {exc}\n")
        return 1
    if as_json:
        text = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
    else:
        text = json.dumps(envelope, indent=2, ensure_ascii=False)
    sys.stdout.write(text + "\n")
    return 0 if envelope.get("ok") else 2


def live_catalog_envelope() -> dict[str, Any]:
    """The ``catalog`` envelope the service itself answers (composes one over a scratch root)."""
    import tempfile

    from templiqx_local.compose import compose

    with tempfile.TemporaryDirectory(prefix="templiqx-catalog-") as root:
        data: dict[str, Any] = compose(root).catalog().to_builtins()
    return data


def _write() -> None:
    text = json.dumps(live_catalog_envelope(), indent=1, ensure_ascii=False)
    with open(SNAPSHOT_PATH, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.stderr.write("usage: python -m templiqx_cli.snapshot --write\n")
        sys.exit(2)
    _write()
