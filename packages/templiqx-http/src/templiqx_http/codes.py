"""The codes only the HTTP surface reports: failures of the transport, each with a fix hint.

Every other code comes from the service and means the same on every surface. A transport
failure's diagnostic carries a ``help`` line of its own (naming the setting to change, the
header to send); these hints are the general ones the diagnostic reference lists.
"""

from __future__ import annotations

from typing import Final

__all__ = ["HTTP_CODES", "HTTP_STATUS"]

HTTP_CODES: Final[dict[str, str]] = {
    "TQX_HTTP_JSON": "Send the body the route takes: a JSON object with Content-Type: "
    "application/json and only its members (the OpenAPI document lists them), or a valid "
    "query string on the artifact and catalog routes.",
    "TQX_HTTP_IF_MATCH_REQUIRED": "Send the current fingerprint in If-Match: "
    "fingerprints.package (manifest of export_package_identity) for package writes, "
    "fingerprints.contract for contracts, fingerprints.artifact for artifacts.",
    "TQX_HTTP_BODY_TOO_LARGE": "Send a smaller body, or raise the server's limit "
    "(TEMPLIQX_HTTP_MAX_BODY_BYTES, default 1 MiB).",
    "TQX_HTTP_WORKSPACE_DISABLED": "Leave out the workspace parameter; an operator may enable "
    "the override (TEMPLIQX_HTTP_ALLOW_WORKSPACE_OVERRIDE), confined to named folders.",
    "TQX_HTTP_UNAUTHORIZED": "Send Authorization: Bearer <token> with the server's token "
    "(TEMPLIQX_HTTP_TOKEN).",
    "TQX_HTTP_BUSY": "Retry after Retry-After seconds; the server is at its concurrency limit "
    "(TEMPLIQX_HTTP_MAX_CONCURRENT).",
    "TQX_HTTP_TRANSPORT": "The request ran past the server's deadline and was cancelled: send "
    "less work, stream the execution, or raise TEMPLIQX_HTTP_REQUEST_TIMEOUT_S.",
}
"""Code -> how to fix it."""

HTTP_STATUS: Final[dict[str, int]] = {
    "TQX_HTTP_JSON": 400,
    "TQX_HTTP_IF_MATCH_REQUIRED": 400,
    "TQX_HTTP_BODY_TOO_LARGE": 413,
    "TQX_HTTP_WORKSPACE_DISABLED": 403,
    "TQX_HTTP_UNAUTHORIZED": 401,
    "TQX_HTTP_BUSY": 503,
    "TQX_HTTP_TRANSPORT": 504,
}
"""Code -> the status a transport failure answers with."""
