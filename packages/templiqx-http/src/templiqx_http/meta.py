"""The routes that are not operations: liveness, readiness and the OpenAPI document.

* ``GET /healthz`` and ``GET /operations/v1/health/live``: ``200 {"status":"ok",...}`` while
  the process serves (the reference's bodies, exactly).
* ``GET /readyz`` and ``GET /operations/v1/health/ready``: ``200 {"status":"ready",...}``, or
  ``503 {"status":"not_ready","api_version":...,"reasons":[...],"request_id":...}`` while a
  readiness check finds a problem (the server checks that the packages root is readable and
  that the runtime's settings are complete) or the server is draining — so a misconfigured
  deployment never takes traffic, and a stopping one stops getting it.
* ``GET /operations/v1/openapi.json`` and ``.../openapi.yaml``: the document
  (:mod:`templiqx_http.openapi`).

None of them needs the bearer token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Final

from starlette.types import Receive, Scope, Send

from templiqx_contracts import API_VERSION
from templiqx_http.middleware import request_id_of
from templiqx_http.openapi import openapi_document, openapi_json, openapi_yaml
from templiqx_http.operations import Inflight, send_json
from templiqx_http.status import RETRY_AFTER_S

__all__ = ["Document", "Liveness", "Readiness", "ReadinessCheck"]

ReadinessCheck = Callable[[], Sequence[str]]
"""Returns the reasons the server is not ready (none: ready); runs on a worker thread."""

_LIVE: Final = json.dumps({"status": "ok", "api_version": API_VERSION}, separators=(",", ":"))
_READY: Final = json.dumps({"status": "ready", "api_version": API_VERSION}, separators=(",", ":"))


class Liveness:
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 200, _LIVE.encode())


class Readiness:
    """Ready unless a check finds a problem or the server is draining."""

    def __init__(self, checks: Sequence[ReadinessCheck], inflight: Inflight) -> None:
        self.checks = list(checks)
        self.inflight = inflight

    def reasons(self) -> list[str]:
        found: list[str] = []
        for check in self.checks:
            try:
                found.extend(check())
            except Exception as exc:  # a check that breaks is a reason, not a crash
                found.append(f"a readiness check failed: {type(exc).__name__}: {exc}")
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reasons = ["the server is shutting down"] if self.inflight.draining else []
        if self.checks:
            reasons += await asyncio.to_thread(self.reasons)
        if not reasons:
            await send_json(send, 200, _READY.encode())
            return
        body = {
            "status": "not_ready",
            "api_version": API_VERSION,
            "reasons": reasons,
            "request_id": request_id_of(scope),
        }
        encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        await send_json(send, 503, encoded, [(b"retry-after", str(RETRY_AFTER_S).encode())])


class Document:
    """The OpenAPI document as JSON or YAML; its server URL follows the app's mount point."""

    def __init__(self, media: str) -> None:
        self.media = media
        self._mounted: dict[str, bytes] = {}

    def _body(self, root_path: str) -> bytes:
        if not root_path:
            return openapi_json() if self.media == "json" else openapi_yaml()
        cached = self._mounted.get(root_path)
        if cached is None:
            import yaml

            document = {**openapi_document(), "servers": [{"url": root_path}]}
            if self.media == "json":
                cached = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
            else:
                text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
                cached = text.encode("utf-8")
            self._mounted[root_path] = cached
        return cached

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await asyncio.to_thread(self._body, scope.get("root_path", ""))
        media = b"application/json" if self.media == "json" else b"application/yaml"
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", media),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
