"""P12: ``compile_contract`` over HTTP against a minimal Starlette app answering the same bytes.

Subject: ``templiqx-http-server`` (one process, uvicorn, the default settings: access log on)
answers ``POST /operations/v1/packages/{p}/contracts/{c}/compile``: the body decoded strictly,
the contract compiled on the service's worker pool, the envelope encoded. Baseline: the
smallest Starlette app on the same uvicorn configuration answering every POST with the very
envelope bytes the subject answers — what HTTP itself costs. One keep-alive client per side
sends the same requests, sequentially, interleaved with the other side's. The target is a
ratio of at most 1.3.

Shapes (several contracts users send): the welcome package's ``onboarding-summary``
(structured output, translations, a partial; its streaming scenario's values), its
``account-digest`` (a text contract), and the reference's ``bli-62-document-drafting`` with its
eval request. Before timing, each side's answer to each shape is checked to be the same bytes,
an ok envelope with the compiled interaction's fingerprint.
"""

from __future__ import annotations

import json
import shutil
from http.client import HTTPConnection as Connection
from pathlib import Path

from corpus import ROOT
from harness import Comparison, Settings, Side, check, interleave
from http_servers import (
    MinimalServer,
    TempliqxServer,
    keep_alive_connection,
    post_keep_alive,
)

__all__ = ["run"]

TARGET = 1.3
REQUESTS_PER_SAMPLE = 50


def _shapes(settings: Settings, root: Path) -> list[tuple[str, bytes]]:
    shutil.copytree(ROOT / "fixtures" / "packages" / "welcome", root / "welcome")
    shutil.copytree(settings.reference / "crm3", root / "crm3")
    scenario = ROOT / "fixtures/packages/welcome/scenarios/stream-vip/request.json"
    welcome = json.loads(scenario.read_text(encoding="utf-8"))
    bli62 = json.loads((settings.reference / "crm3/evals/bli-62-request.json").read_text())
    base = "/operations/v1/packages/{}/contracts/{}/compile"
    return [
        (
            base.format("welcome", "onboarding-summary"),
            json.dumps({"render": welcome, "capabilities": ["structured_output"]}).encode(),
        ),
        (
            base.format("welcome", "account-digest"),
            json.dumps(
                {
                    "render": {"inputs": {"account": " acme ", "open_tickets": 3}},
                    "capabilities": ["text"],
                }
            ).encode(),
        ),
        (
            base.format("crm3", "bli-62-document-drafting"),
            json.dumps({"render": bli62, "capabilities": ["structured_output"]}).encode(),
        ),
    ]


def run(settings: Settings) -> list[Comparison]:
    root = settings.scratch / "p12"
    root.mkdir()
    shapes = _shapes(settings, root)
    rows: list[Comparison] = []
    log = settings.scratch / "p12-server.log"
    with TempliqxServer(root, log, args=["--keep-alive", "600"]) as server:
        ours = keep_alive_connection(server.port)
        for path, body in shapes:
            status, answer = post_keep_alive(ours, path, body)
            check(status == 200, f"{path}: {status} {answer[:300]!r}")
            envelope = json.loads(answer)
            check(envelope["ok"] and "compiled_interaction" in envelope["fingerprints"], path)
            name = path.split("/")[-2]
            with MinimalServer(answer, settings.scratch) as minimal:
                theirs = keep_alive_connection(minimal.port)
                check(post_keep_alive(theirs, path, body) == (200, answer), "baseline bytes")

                def subject(path: str = path, body: bytes = body) -> None:
                    for _ in range(REQUESTS_PER_SAMPLE):
                        post_keep_alive(ours, path, body)

                def baseline(
                    path: str = path,
                    body: bytes = body,
                    client: Connection = theirs,
                ) -> None:
                    for _ in range(REQUESTS_PER_SAMPLE):
                        post_keep_alive(client, path, body)

                a, b, ratios = interleave(
                    Side("templiqx-http", subject, REQUESTS_PER_SAMPLE),
                    Side("minimal Starlette", baseline, REQUESTS_PER_SAMPLE),
                    rounds=settings.rounds(15, quick=3),
                )
                theirs.close()
            row = Comparison(
                id="P12",
                what=f"compile over HTTP, keep-alive ({name})",
                baseline="a minimal Starlette app answering the same bytes",
                target=TARGET,
            )
            row.record(a, b, ratios)
            row.metrics = {
                "request_bytes": len(body),
                "envelope_bytes": len(answer),
                "overhead_ms": round((a.median - b.median) * 1000, 3),
            }
            rows.append(row)
        ours.close()
    return rows
