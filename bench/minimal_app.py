"""The smallest Starlette apps P12 compares templiqx-http with.

``python minimal_app.py fixed BODY_FILE`` answers every POST with the file's bytes as JSON:
what HTTP itself costs (P12f). ``python minimal_app.py service ROOT`` is the glue a host would
write by hand for the same call: one route that reads the JSON body, awaits the service's
``acompile_contract`` with its ``render`` values and capabilities, and answers the envelope
encoded as templiqx-http encodes it (P12). Both serve on 127.0.0.1 (ephemeral port) with the
uvicorn configuration templiqx-http-server uses (h11, no access log), and print
``{"event":"listening","port":N}`` once they listen.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def fixed_app(body_file: str) -> Starlette:
    body = Path(body_file).read_bytes()

    async def answer(request: Request) -> Response:
        await request.body()  # as any route that takes a body must
        return Response(body, media_type="application/json")

    return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


def service_app(root: str) -> Starlette:
    from templiqx_local import compose

    service = compose(root)
    encode = msgspec.json.encode

    async def compile_contract(request: Request) -> Response:
        body = await request.json()
        render = body.get("render") or {}
        envelope = await service.acompile_contract(
            request.path_params["package"],
            request.path_params["contract"],
            inputs=render.get("inputs"),
            context=render.get("context"),
            capabilities=body.get("capabilities"),
        )
        return Response(encode(envelope), media_type="application/json")

    path = "/operations/v1/packages/{package}/contracts/{contract}/compile"
    return Starlette(routes=[Route(path, compile_contract, methods=["POST"])])


def main() -> None:
    mode, argument = sys.argv[1], sys.argv[2]
    app = fixed_app(argument) if mode == "fixed" else service_app(argument)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # Nagle off
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    listening = {"event": "listening", "port": sock.getsockname()[1]}
    print(json.dumps(listening, separators=(",", ":")), flush=True)
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=600,
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
