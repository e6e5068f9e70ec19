"""Stream a templiqx contract to the browser as Server-Sent Events (Starlette + uvicorn).

``POST /summary`` with ``{"inputs": {...}, "context": {...}}`` compiles the welcome package's
``onboarding-summary`` contract and, when it is valid, streams every event of its execution as
one SSE event (``event: Delta``, ..., then ``event: Complete`` or ``event: Failed``). The answer
is structured (JSON), so each ``Delta`` is followed by an ``event: partial`` whose data is the
answer so far — the object as it grows, unfinished strings included — which ``GET /`` (a form,
``form.html``) uses to fill in its fields live. A request the contract refuses is answered
``422`` with the envelope, before any model call. When the browser goes away, the stream is
closed and the runtime call cancelled.

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
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from templiqx_application import TempliqxService
from templiqx_contracts import MISSING, Delta, encode_stream_event
from templiqx_local import compose, load_runtime

PACKAGE, CONTRACT = "welcome", "onboarding-summary"
HERE = Path(__file__).resolve().parent
EXAMPLE_REQUEST = HERE.parents[1] / "fixtures/packages/welcome/scenarios/stream-vip/request.json"


def sse(name: str, data: str) -> str:
    """One Server-Sent Event."""
    return f"event: {name}\ndata: {data}\n\n"


def create_app(service: TempliqxService) -> Starlette:
    """The app: the streaming route over ``service``, and the form page that reads it."""

    # --- the route: this is all a host writes --------------------------------------------
    async def summary(request: Request) -> Response:
        values = await request.json()
        run = await service.astream_contract(PACKAGE, CONTRACT, **values).open()
        if not run.ok:  # refused before any model call: answer 4xx, not a 200 stream
            return JSONResponse(run.envelope.to_builtins(), status_code=422)

        async def events() -> AsyncIterator[str]:
            async with run:  # leaving it (browser gone, task cancelled) cancels the runtime
                async for update in run.partials():  # every event, and the answer so far
                    event = update.event
                    yield sse(type(event).__name__, encode_stream_event(event).decode())
                    if isinstance(event, Delta) and update.value is not MISSING:
                        yield sse("partial", json.dumps(update.value, ensure_ascii=False))

        return StreamingResponse(events(), media_type="text/event-stream")

    # ---------------------------------------------------------------------------------------
    async def form(request: Request) -> Response:
        """The page whose form the streamed answer fills in (``form.html``)."""
        values = EXAMPLE_REQUEST.read_text() if EXAMPLE_REQUEST.is_file() else "{}"
        page = (HERE / "form.html").read_text().replace("{{REQUEST}}", html.escape(values))
        return HTMLResponse(page)

    return Starlette(
        routes=[Route("/", form), Route("/summary", summary, methods=["POST"])],
    )


def main() -> None:
    """Serve on 127.0.0.1:8000 with the runtime named by ``TEMPLIQX_RUNTIME``."""
    import uvicorn

    root = os.environ.get("TEMPLIQX_PACKAGES_ROOT", "fixtures/packages")
    runtime = load_runtime(os.environ.get("TEMPLIQX_RUNTIME", "fake"))
    uvicorn.run(create_app(compose(root, runtime=runtime)), host="127.0.0.1", port=8000)


if __name__ == "__main__":
    main()
