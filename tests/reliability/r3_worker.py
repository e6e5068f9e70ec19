"""R3 worker: one process racing compare-and-swap writes on a shared packages root.

``python r3_worker.py ROOT WORKER ROUNDS SEED LOG GO [PAD]``

Touches ``GO.ready.WORKER`` once composed, waits until the file ``GO`` exists (so every worker
starts together), then runs ``ROUNDS``
rounds (``0`` = until killed). Each round reads the current token and attempts one of
``put_contract``, ``delete_contract`` or ``update_package`` with it, through its own
``compose(ROOT)`` service. Every attempt is appended to ``LOG`` as one JSON line, written with a
single ``os.write`` *before* (``"phase": "begin"``) and *after* (``"phase": "end"``) the call, so
the parent can tell whether a kill landed while an operation was in flight. ``PAD`` (bytes)
makes each contract source larger, widening the write window for kill tests.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from templiqx_local import compose

PACKAGE = "race"
CONTRACT = "c"
ABSENT = "absent"


def contract_source(tag: str, pad: int = 0) -> str:
    """A valid contract whose description (hence fingerprint) is unique to ``tag``.

    ``pad`` lengthens the description, making the file (and its write) larger.
    """
    padding = f" {'p' * pad}" if pad else ""
    return (
        "api_version: templiqx/v1alpha1\n"
        f"id: {CONTRACT}\n"
        "version: 1.0.0\n"
        f"description: {tag}{padding}\n"
        "messages:\n"
        "  - role: user\n"
        "    content:\n"
        "      - {kind: text, value: hello}\n"
        "output_schema: {type: string}\n"
    )


def _log(fd: int, record: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())


def _codes(envelope: Any) -> list[str]:
    return [d.code for d in envelope.diagnostics if d.severity == "error"]


def main(argv: list[str]) -> int:
    root, worker, rounds, seed, log_path, go = argv[:6]
    pad = int(argv[6]) if len(argv) > 6 else 0
    service = compose(root)
    rng = random.Random(int(seed))
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    Path(f"{go}.ready.{worker}").touch()
    while not os.path.exists(go):
        time.sleep(0.002)
    limit = int(rounds)
    step = 0
    while limit == 0 or step < limit:
        tag = f"w{worker}-r{step}"
        roll = rng.random()
        base = {"worker": int(worker), "round": step}
        if roll < 0.35:
            identity = service.invoke("export_package_identity", {"package": PACKAGE})
            if not identity.ok:
                _log(fd, {**base, "op": "read", "phase": "end", "codes": _codes(identity)})
                step += 1
                continue
            manifest = identity.result.manifest
            record = {**base, "op": "update", "from": manifest.description, "to": tag}
            _log(fd, {**record, "phase": "begin"})
            envelope = service.invoke(
                "update_package",
                {
                    "package": PACKAGE,
                    "expected_fingerprint": identity.fingerprints["manifest"],
                    "description": tag,
                },
            )
        else:
            inspected = service.invoke(
                "inspect_contract", {"package": PACKAGE, "contract": CONTRACT}
            )
            read_codes = _codes(inspected)
            if inspected.ok:
                current = inspected.fingerprints["contract"]
            elif read_codes == ["TQX_NOT_FOUND"]:
                current = ABSENT
            else:  # a torn or partial file would show here as a parse error
                _log(fd, {**base, "op": "read", "phase": "end", "codes": read_codes})
                step += 1
                continue
            if roll < 0.55 and current != ABSENT:
                record = {**base, "op": "delete", "from": current, "to": ABSENT}
                _log(fd, {**record, "phase": "begin"})
                envelope = service.invoke(
                    "delete_contract",
                    {"package": PACKAGE, "contract": CONTRACT, "expected_fingerprint": current},
                )
            else:
                arguments: dict[str, Any] = {
                    "package": PACKAGE,
                    "contract": CONTRACT,
                    "source": contract_source(tag, pad),
                }
                if current != ABSENT:
                    arguments["expected_fingerprint"] = current
                record = {**base, "op": "put", "from": current}
                _log(fd, {**record, "phase": "begin"})
                envelope = service.invoke("put_contract", arguments)
                record["to"] = envelope.fingerprints.get("contract")
        _log(
            fd,
            {**record, "phase": "end", "ok": envelope.ok, "codes": _codes(envelope)},
        )
        step += 1
    os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
