"""Benchmark inputs: the reference corpus (read in place) and the generated fan-out document."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from harness import BenchmarkError, check

__all__ = [
    "FANOUT_BYTES",
    "FANOUT_SHA256",
    "ROOT",
    "fanout_records",
    "find_reference",
]

ROOT = Path(__file__).resolve().parent.parent

FANOUT_SHA256 = "86f456787bd96330558867d911d77dda037fa34af4c8cf5ea5dd3af1e0f2d052"
FANOUT_BYTES = 1_148_223


def find_reference() -> Path:
    """``$TEMPLIQX_REFERENCE``, else ``../shared/reference`` beside the checkout."""
    configured = os.environ.get("TEMPLIQX_REFERENCE")
    if configured:
        path = Path(configured).expanduser().resolve()
        if not path.is_dir():
            raise BenchmarkError(f"TEMPLIQX_REFERENCE={configured!r} is not a folder")
        return path
    sibling = ROOT.parent / "shared" / "reference"
    if not sibling.is_dir():
        raise BenchmarkError(
            "reference corpus not found: set TEMPLIQX_REFERENCE to the shared/reference folder "
            "(the benchmarks use its contracts, requests and packages)"
        )
    return sibling


def _thousands(value: int) -> str:
    return f"{value:,}".replace(",", ".")


def fanout_records(reference: Path) -> tuple[bytes, list[dict[str, Any]]]:
    """The 1,000-record fan-out document, generated from ``merge-data.json``.

    The shape is that of ``basenet-legal/fixtures/fanout-records.json`` (conformance.md 4.3):
    record ``i`` renames the client and first party to ``Synthetic Debtor {i:04d} B.V.``,
    replaces the claims and financials, and keeps the other keys. The bytes are checked against
    the published size and SHA-256, so a wrong generator fails loudly.
    """
    base = json.loads(
        (reference / "packages/basenet-legal/fixtures/merge-data.json").read_text("utf-8")
    )
    records: list[dict[str, Any]] = []
    for i in range(1000):
        name = f"Synthetic Debtor {i:04d} B.V."
        total = 1000 + 17 * i
        record: dict[str, Any] = {
            "client": {"name": name},
            "parties": [{**base["parties"][0], "name": name}, base["parties"][1]],
            "claims": [
                {"id": "claim-1", "description": "schade door verlate levering", "amount_eur": 0},
                {"id": "claim-2", "description": "onterechte factuurpost", "amount_eur": 3200},
                {
                    "id": f"claim-fanout-{i:04d}",
                    "description": "rente over openstaand bedrag",
                    "amount_eur": total - 3200,
                },
            ],
            "financials": {
                "outstanding_total": total,
                "currency": "EUR",
                "formatted_total": f"EUR {_thousands(total)}",
            },
        }
        for key in (
            "customFields",
            "department",
            "optional_clauses",
            "attachment_slot",
            "signature_slot",
        ):
            record[key] = base[key]
        records.append(record)
    data = json.dumps(records, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
    check(
        len(data) == FANOUT_BYTES and hashlib.sha256(data).hexdigest() == FANOUT_SHA256,
        f"generated fan-out document differs from the published one ({len(data)} bytes, "
        f"sha256 {hashlib.sha256(data).hexdigest()})",
    )
    return data, records
