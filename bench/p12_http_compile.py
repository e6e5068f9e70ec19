"""P12: ``compile_contract`` over HTTP against the minimal Starlette route a host would write.

Subject: ``templiqx-http-server`` (one process, uvicorn, the default settings: access log on)
answers ``POST /operations/v1/packages/{p}/contracts/{c}/compile``: request id, the body
decoded strictly, the arguments bound, the contract compiled on the service's worker pool, the
envelope encoded, its status, one access-log line. Baseline (P12, target: a ratio of at most
1.3): the smallest Starlette app on the same uvicorn configuration doing the same call by hand —
one route that reads the JSON body, awaits the service's ``acompile_contract`` over the same
packages and answers the envelope's bytes — so the ratio is what templiqx-http costs on top of
the call. Also reported (P12f, no target): the same requests against an app answering fixed
bytes, what HTTP alone costs (the floor); its ratio includes the compile itself.

One keep-alive client per server sends the same requests sequentially; the three servers take
turns, the order rotated each round. Shapes (several contracts users send): the welcome
package's ``onboarding-summary`` (structured output, translations, a partial; its streaming
scenario's values), its ``account-digest`` (a text contract), and the reference's
``bli-62-document-drafting`` with its eval request. Before timing, every server's answer to
each shape is checked to be the same bytes, an ok envelope with the compiled interaction's
fingerprint.
"""

from __future__ import annotations

import json
import shutil
from http.client import HTTPConnection as Connection
from pathlib import Path

from corpus import ROOT
from harness import Comparison, Settings, Side, Timing, check, rotate
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


def _side(label: str, connection: Connection, path: str, body: bytes) -> Side:
    def requests() -> None:
        for _ in range(REQUESTS_PER_SAMPLE):
            post_keep_alive(connection, path, body)

    return Side(label, requests, REQUESTS_PER_SAMPLE)


def run(settings: Settings) -> list[Comparison]:
    root = settings.scratch / "p12"
    root.mkdir()
    shapes = _shapes(settings, root)
    glued: list[Comparison] = []
    floors: list[Comparison] = []
    log = settings.scratch / "p12-server.log"
    (settings.scratch / "p12-glue").mkdir()
    with (
        TempliqxServer(root, log, args=["--keep-alive", "600"]) as server,
        MinimalServer(b"", settings.scratch / "p12-glue", root=root) as glue,
    ):
        ours = keep_alive_connection(server.port)
        by_hand = keep_alive_connection(glue.port)
        for path, body in shapes:
            status, answer = post_keep_alive(ours, path, body)
            check(status == 200, f"{path}: {status} {answer[:300]!r}")
            envelope = json.loads(answer)
            check(envelope["ok"] and "compiled_interaction" in envelope["fingerprints"], path)
            check(post_keep_alive(by_hand, path, body) == (200, answer), "the glue's bytes")
            name = path.split("/")[-2]
            with MinimalServer(answer, settings.scratch) as fixed:
                floor = keep_alive_connection(fixed.port)
                check(post_keep_alive(floor, path, body) == (200, answer), "the fixed bytes")
                a, b, c = rotate(
                    [
                        _side("templiqx-http", ours, path, body),
                        _side("a hand-written Starlette route", by_hand, path, body),
                        _side("fixed bytes", floor, path, body),
                    ],
                    rounds=settings.rounds(15, quick=3),
                )
                floor.close()
            metrics = {"request_bytes": len(body), "envelope_bytes": len(answer)}
            for rows, identifier, what, baseline, samples, target in (
                (
                    glued,
                    "P12",
                    f"compile over HTTP, keep-alive ({name})",
                    "a hand-written Starlette route calling the service",
                    b,
                    TARGET,
                ),
                (
                    floors,
                    "P12f",
                    f"compile over HTTP ({name}), against HTTP alone",
                    "a Starlette app answering the same bytes, fixed",
                    c,
                    None,
                ),
            ):
                row = Comparison(id=identifier, what=what, baseline=baseline, target=target)
                ratios = [x / y for x, y in zip(a, samples, strict=True)]
                row.record(Timing(a), Timing(samples), ratios)
                row.metrics = {
                    **metrics,
                    "overhead_ms": round((row.subject_median - row.baseline_median) * 1000, 3),
                }
                rows.append(row)
        ours.close()
        by_hand.close()
    return glued + floors
