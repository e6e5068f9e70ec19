"""Log lines: one JSON object per line on standard output, never a secret.

The access log (``templiqx_http.access``) already writes JSON; every other record — the
server's own events, warnings, uvicorn's errors — is wrapped as
``{"event":"log","level":...,"logger":...,"message":...}``. What is logged about the
configuration is :meth:`~templiqx_http_server.config.ServerConfig.public`: the token is only
said to be set.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, Final

__all__ = ["LOGGER", "configure_logging", "event"]

LOGGER: Final = "templiqx_http_server"
_log = logging.getLogger(LOGGER)


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.name == "templiqx_http.access" or getattr(record, "json_event", False):
            return message
        line: dict[str, Any] = {
            "event": "log",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": message,
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def configure_logging() -> None:
    """JSON lines on stdout for templiqx's and uvicorn's loggers (once per process)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_JsonLines())
    for name, level in (
        ("templiqx_http", logging.INFO),
        (LOGGER, logging.INFO),
        ("uvicorn", logging.WARNING),
        ("uvicorn.error", logging.WARNING),
        ("uvicorn.access", logging.WARNING),
    ):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False


def event(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """One JSON line ``{"event": name, ...fields}``."""
    line = json.dumps({"event": name, **fields}, ensure_ascii=False, separators=(",", ":"))
    _log.log(level, line, extra={"json_event": True})
