"""One HTTP exchange with the model server, on the standard library's ``http.client``.

A call has one deadline for everything (connect, headers, body or stream). A set cancel token
must end the call within a second even while the server sends nothing (DECISIONS 6), and a read
blocked on a silent socket cannot look at a token: so each exchange runs a *watcher* thread that
polls the token and the deadline every 20 ms and, when either fires, shuts the socket down. The
blocked read returns at once, the server sees the connection close, and the exchange reports
why (:meth:`Exchange.failure_for`). Between reads the token is looked at too.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Final
from urllib.parse import urlsplit

from acme_ollama.failures import Code, failure
from templiqx_ports import CancelToken, RuntimeFailureError

__all__ = ["Exchange"]

_POLL_S: Final = 0.02
_READ: Final = 65_536


class Exchange:
    """POST one JSON body; read the status, headers and body as it arrives."""

    def __init__(
        self, url: str, headers: dict[str, str], timeout_s: float, cancel: CancelToken | None
    ) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.where = f"{self.host}:{self.port}"
        self.path = parts.path or "/"
        self.headers = headers
        self.cancel = cancel
        self.deadline = time.monotonic() + timeout_s
        self._https = parts.scheme == "https"
        self._conn: http.client.HTTPConnection | None = None
        self._sock: socket.socket | None = None
        self._response: http.client.HTTPResponse | None = None
        self._done = threading.Event()
        self._reason: Code | None = None

    def send(self, body: bytes) -> tuple[int, dict[str, str]]:
        """Connect, send ``body``, read the response head: ``(status, lowercased headers)``."""
        self.check()
        remaining = max(self.deadline - time.monotonic(), 0.001)
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        self._conn = kind(self.host, self.port, timeout=remaining)
        try:
            self._conn.connect()
            self._sock = self._conn.sock  # http.client hands it to the response and forgets it
            threading.Thread(target=self._watch, daemon=True).start()
            self._conn.request("POST", self.path, body=body, headers=self.headers)
            self._response = self._conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            raise self.failure_for(exc, "could not reach the model server") from None
        return self._response.status, {k.lower(): v for k, v in self._response.getheaders()}

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (de-chunked); ends at the end of the body."""
        response = self._response
        if response is None:  # pragma: no cover - send() comes first
            return
        while True:
            self.check()
            try:
                data = response.read1(_READ)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                raise self.failure_for(exc, "the model server closed the connection") from None
            self.check()
            if not data:
                return
            yield data

    def close(self) -> None:
        """Stop the watcher and close the connection (safe to call twice)."""
        self._done.set()
        self._shutdown()
        if self._response is not None:
            self._response.close()
        if self._conn is not None:
            self._conn.close()

    def check(self) -> None:
        """Raise the cancellation or timeout failure if either has happened."""
        reason = self._reason or self._fired()
        if reason is not None:
            raise self._stopped(reason)

    def failure_for(self, error: BaseException, sentence: str) -> RuntimeFailureError:
        """Why an I/O error happened: the watcher's reason if it fired, else ``sentence``."""
        reason = self._reason or self._fired()
        if reason is not None:
            return self._stopped(reason)
        if isinstance(error, TimeoutError):
            return failure(Code.TIMEOUT, "the call exceeded its deadline")
        return failure(Code.UNAVAILABLE, f"{sentence} ({self.where})")

    def _fired(self) -> Code | None:
        if self.cancel is not None and self.cancel.is_set():
            return Code.CANCELLED
        if time.monotonic() >= self.deadline:
            return Code.TIMEOUT
        return None

    def _watch(self) -> None:
        while not self._done.wait(_POLL_S):
            reason = self._fired()
            if reason is not None:
                self._reason = reason
                self._shutdown()
                return

    def _shutdown(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _stopped(reason: Code) -> RuntimeFailureError:
        if reason is Code.CANCELLED:
            return failure(Code.CANCELLED, "the call was cancelled by the caller")
        return failure(Code.TIMEOUT, "the call exceeded its deadline")
