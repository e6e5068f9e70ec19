"""Stream a templiqx contract to the browser as Server-Sent Events (Starlette + uvicorn).

Two ways in, in one host:

* the whole operations API, mounted with one line at ``/templiqx`` (``create_app`` from
  templiqx-http): every catalog operation at the reference's routes, ``execute`` live as SSE
  with ``Accept: text/event-stream``, the OpenAPI document, the API docs page
  (``/templiqx/swagger-ui/``);
* the host's own route, ``POST /summary``, written with templiqx-http's building blocks: it
  runs the welcome package's ``onboarding-summary`` contract on the request's ``inputs`` and
  ``context`` and streams every event (``stream_event_sse``), after each event that changed
  the answer an ``event: partial`` whose data is what it changed (``partial_sse``: incremental
  changes, unfinished strings included; their total size is linear in the answer), then the
  ``envelope`` event (``envelope_sse``: ``ok``, the diagnostics
  with their help lines, the fingerprints). A request the contract refuses is answered with
  its envelope and the status ``status_for`` gives it (``422`` for a missing value) before any
  model call. When the browser goes away, the stream is closed and the runtime call cancelled.

``GET /`` is a page (``form.html``) whose form fills in field by field from the ``partial``
events while the model is still writing (it applies their changes, as
``templiqx_contracts.apply_partial_changes`` does in Python).

Run it (offline, on the scripted mock replaying the welcome package's streaming scenario)::

    TEMPLIQX_MOCK_SCENARIO=fixtures/packages/welcome/scenarios/stream-vip/manifest.json \\
    TEMPLIQX_RUNTIME=mock uv run python examples/fastapi-streaming/app.py

    curl -N -X POST localhost:8000/summary \\
         -d @fixtures/packages/welcome/scenarios/stream-vip/request.json

or open http://127.0.0.1:8000/ and press "Summarise" (add ``TEMPLIQX_MOCK_PACE_MS=150`` to
watch the form fill in at a readable pace).
"""

from __future__ import annotations

import html
import os
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from templiqx_application import TempliqxService
from templiqx_http import (
    SSE_HEADERS,
    create_app,
    envelope_sse,
    partial_sse,
    status_for,
    stream_event_sse,
)
from templiqx_local import compose, load_runtime

PACKAGE, CONTRACT = "welcome", "onboarding-summary"
HERE = Path(__file__).resolve().parent
EXAMPLE_REQUEST = HERE.parents[1] / "fixtures/packages/welcome/scenarios/stream-vip/request.json"


def host_app(service: TempliqxService) -> Starlette:
    """The host: the form page, its streaming route, and the whole operations API."""

    # --- the route: this is all a host writes --------------------------------------------
    async def summary(request: Request) -> Response:
        values = await request.json()
        run = await service.astream_contract(PACKAGE, CONTRACT, **values).open()
        if not run.ok:  # refused before any model call: its status, not a 200 stream
            envelope = run.envelope
            body = msgspec.json.encode(envelope)
            return Response(body, status_for(envelope), media_type="application/json")

        async def events() -> AsyncIterator[bytes]:
            async with run:  # leaving it (browser gone, task cancelled) cancels the runtime
                async for update in run.partials():  # every event, and what it changed
                    yield stream_event_sse(update.event) + partial_sse(update.changes)
            yield envelope_sse(run.envelope)  # ok, diagnostics with help, fingerprints

        return StreamingResponse(events(), headers=SSE_HEADERS)

    # ---------------------------------------------------------------------------------------
    async def form(request: Request) -> Response:
        """The page whose form the streamed answer fills in (``form.html``)."""
        values = EXAMPLE_REQUEST.read_text() if EXAMPLE_REQUEST.is_file() else "{}"
        page = (HERE / "form.html").read_text().replace("{{REQUEST}}", html.escape(values))
        return HTMLResponse(page)

    return Starlette(
        routes=[
            Route("/", form),
            Route("/summary", summary, methods=["POST"]),
            Mount("/templiqx", app=create_app(service)),  # the whole operations API
        ],
    )


def main() -> None:
    """Serve on 127.0.0.1:8000 with the runtime named by ``TEMPLIQX_RUNTIME``."""
    import uvicorn

    root = os.environ.get("TEMPLIQX_PACKAGES_ROOT", "fixtures/packages")
    runtime = load_runtime(os.environ.get("TEMPLIQX_RUNTIME", "fake"))
    uvicorn.run(host_app(compose(root, runtime=runtime)), host="127.0.0.1", port=8000)


if __name__ == "__main__":
    main()
