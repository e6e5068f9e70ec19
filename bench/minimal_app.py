"""The smallest Starlette app: every POST answers fixed JSON bytes (P12's baseline).

``python minimal_app.py BODY_FILE`` serves on 127.0.0.1 (ephemeral port) with the uvicorn
configuration templiqx-http-server uses (h11, no access log), and prints
``{"event":"listening","port":N}`` once it listens. It reads the request body, as any route
that takes one must, and answers 200 ``application/json`` with the file's bytes.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def main() -> None:
    body = Path(sys.argv[1]).read_bytes()

    async def answer(request: Request) -> Response:
        await request.body()
        return Response(body, media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])
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
