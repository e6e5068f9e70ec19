"""The catalog envelope as shipped beside this module, so ``templiqx catalog`` needs no service.

``catalog.json`` holds the exact ``templiqx catalog --json`` output (compact JSON, one line),
written by ``python -m templiqx_cli.snapshot --write`` from the service's own ``catalog``
operation. A test fails when it differs from what the service answers, so the file cannot drift
from the catalog. Printing it compactly needs no JSON parser at all: the fast path stays within
a small multiple of the interpreter's start-up time.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a third of start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SNAPSHOT_PATH", "live_catalog_envelope", "load_catalog", "print_catalog"]

SNAPSHOT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")


def _snapshot_text() -> str:
    with open(SNAPSHOT_PATH, encoding="utf-8") as handle:
        return handle.read().strip()


def load_catalog() -> dict[str, Any]:
    """The shipped catalog envelope as plain JSON data."""
    import json

    data: dict[str, Any] = json.loads(_snapshot_text())
    return data


def print_catalog(*, as_json: bool) -> int:
    """Print the catalog envelope (compact with ``as_json``, else for people); exit code 0 or 1.

    The catalog envelope is always ok (a test holds the snapshot to that).
    """
    try:
        if as_json:
            text = _snapshot_text() + "\n"
        else:
            from templiqx_cli.human import View, render, style_for

            text = render(View(data=load_catalog(), style=style_for(sys.stdout, os.environ)))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"templiqx: read catalog snapshot {SNAPSHOT_PATH}: {exc}\n")
        return 1
    sys.stdout.write(text)
    return 0


def live_catalog_envelope() -> dict[str, Any]:
    """The ``catalog`` envelope the service itself answers (composes one over a scratch root)."""
    import tempfile

    from templiqx_local.compose import compose

    with tempfile.TemporaryDirectory(prefix="templiqx-catalog-") as root:
        data: dict[str, Any] = compose(root).catalog().to_builtins()
    return data


def snapshot_text(envelope: dict[str, Any]) -> str:
    """The snapshot file's content for ``envelope``: the compact ``--json`` output."""
    import json

    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False) + "\n"


def _write() -> None:
    with open(SNAPSHOT_PATH, "w", encoding="utf-8") as handle:
        handle.write(snapshot_text(live_catalog_envelope()))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.stderr.write("usage: python -m templiqx_cli.snapshot --write\n")
        sys.exit(2)
    _write()
