"""What an application built by :func:`~templiqx_http.create_app` allows and bounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "DEFAULT_SSE_KEEPALIVE_S",
    "HttpSettings",
]

DEFAULT_MAX_BODY_BYTES: Final = 1_048_576
"""The reference's request body limit (1 MiB), contract sources included."""
DEFAULT_REQUEST_TIMEOUT_S: Final = 60.0
"""A request's deadline, work included (the reference's 15 s covered only waiting for the body;
a model call's own deadline, ``MODEL_TIMEOUT_MS``, defaults to 30 s and must fit inside)."""
DEFAULT_MAX_CONCURRENT: Final = 256
"""Operation requests served at once; beyond, 503 with ``Retry-After``."""
DEFAULT_SSE_KEEPALIVE_S: Final = 15.0
"""A comment line is sent on an event stream silent this long (proxies drop idle streams)."""


@dataclass(frozen=True)
class HttpSettings:
    """Limits and switches of the HTTP surface; the defaults are safe to expose on loopback.

    * ``token``: when set, every operation route requires ``Authorization: Bearer <token>``
      (compared in constant time); health, the OpenAPI document and the API docs stay open.
      Never shown by ``repr``.
    * ``allow_workspace_override``: whether the artifact routes accept the ``workspace`` query
      parameter (off: 403 ``TQX_HTTP_WORKSPACE_DISABLED``); the service confines it further
      to the folders it was composed with.
    * ``max_body_bytes``: larger bodies are 413, refused before the rest is read.
    * ``request_timeout_s``: a JSON request still running then is cancelled (a model call
      through its cancel token) and answered 504; an event stream then ends in ``Failed``.
    * ``max_concurrent``: operation requests beyond it are 503 with ``Retry-After``.
    * ``cors_origins``: origins allowed to call from a browser (none: CORS off); ``"*"`` allows
      any origin (credentials are never allowed).
    * ``sse_keepalive_s``: a comment line keeps a silent event stream open through proxies.
    """

    token: str | None = field(default=None, repr=False)
    allow_workspace_override: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    cors_origins: tuple[str, ...] = ()
    sse_keepalive_s: float = DEFAULT_SSE_KEEPALIVE_S

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise ValueError("the bearer token is blank: leave it unset or give a real one")
        if self.max_body_bytes < 1:
            raise ValueError("max_body_bytes must be at least 1")
        if not self.request_timeout_s > 0:
            raise ValueError("request_timeout_s must be more than 0")
        if self.max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        if not self.sse_keepalive_s > 0:
            raise ValueError("sse_keepalive_s must be more than 0")
