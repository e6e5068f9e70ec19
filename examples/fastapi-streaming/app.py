"""Stream a templiqx contract to the browser as Server-Sent Events (Starlette + uvicorn).

``POST /summary`` with ``{"inputs": {...}, "context": {...}}`` compiles the welcome package's
``onboarding-summary`` contract and, when it is valid, streams every event of its execution as
one SSE event (``event: Delta``, ..., then ``event: Complete`` or ``event: Failed``). A request
the contract refuses is answered ``422`` with the envelope, before any model call. When the
browser goes away, the stream is closed and the runtime call cancelled.

Run it (offline, on the scripted mock replaying the welcome package's streaming scenario)::

    TEMPLIQX_MOCK_SCENARIO=fixtures/packages/welcome/scenarios/stream-vip/manifest.json \\
    TEMPLIQX_RUNTIME=mock uv run python examples/fastapi-streaming/app.py

    curl -N -X POST localhost:8000/summary \\
         -d @fixtures/packages/welcome/scenarios/stream-vip/request.json
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from templiqx_application import TempliqxService
from templiqx_contracts import encode_stream_event
from templiqx_local import compose, load_runtime

PACKAGE, CONTRACT = "welcome", "onboarding-summary"


def create_app(service: TempliqxService) -> Starlette:
    """The app: one streaming route over ``service``."""

    # --- the route: this is all a host writes --------------------------------------------
    async def summary(request: Request) -> Response:
        values = await request.json()
        run = await service.astream_contract(PACKAGE, CONTRACT, **values).open()
        if not run.ok:  # refused before any model call: answer 4xx, not a 200 stream
            return JSONResponse(run.envelope.to_builtins(), status_code=422)

        async def events() -> AsyncIterator[str]:
            async with run:  # leaving it (browser gone, task cancelled) cancels the runtime
                async for event in run:
                    data = encode_stream_event(event).decode()
                    yield f"event: {type(event).__name__}\ndata: {data}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    # ---------------------------------------------------------------------------------------
    return Starlette(routes=[Route("/summary", summary, methods=["POST"])])


def main() -> None:
    """Serve on 127.0.0.1:8000 with the runtime named by ``TEMPLIQX_RUNTIME``."""
    import uvicorn

    root = os.environ.get("TEMPLIQX_PACKAGES_ROOT", "fixtures/packages")
    runtime = load_runtime(os.environ.get("TEMPLIQX_RUNTIME", "fake"))
    uvicorn.run(create_app(compose(root, runtime=runtime)), host="127.0.0.1", port=8000)


if __name__ == "__main__":
    main()
