"""The server's configuration: flags, then the reference's environment names, then ours.

Every setting has a flag and an environment variable; a flag wins over the environment, and a
blank variable counts as unset (as in the reference). The reference's names are read as it
reads them, so its Compose files, Helm chart and harnesses work unchanged:

========================  ===================================  ==============================
setting                   environment                          default
========================  ===================================  ==============================
bind address ``ip:port``  ``TEMPLIQX_HTTP_ADDR``               ``127.0.0.1:8080``
packages root             ``TEMPLIQX_ROOT``                    ``.``
                          (then ``TEMPLIQX_PACKAGES_ROOT``)
workspace                 ``TEMPLIQX_WORKSPACE``               ``<root>/.templiqx-workspace``
                          (then ``TEMPLIQX_WORKSPACE_ROOT``)
runtime mode              ``TEMPLIQX_RUNTIME_MODE``            ``deterministic-fake``
                          (then ``TEMPLIQX_RUNTIME``)
========================  ===================================  ==============================

The reference's names win over the port's own (``TEMPLIQX_PACKAGES_ROOT``,
``TEMPLIQX_WORKSPACE_ROOT``, ``TEMPLIQX_RUNTIME``, which ``templiqx-mcp`` reads); when both are
set to different values, ``--check`` says so. Runtime modes: ``deterministic-fake`` (the
offline fake, which answers ``fixture_output``: no credentials) and ``langfuse``, as in the
reference, plus any runtime registered in ``templiqx.runtimes`` (``fake``, ``mock``,
``openai``, ``langfuse``, third-party ones).

The default bind is loopback (the reference's was ``0.0.0.0``; DECISIONS 28). Any other address
needs a bearer token (``TEMPLIQX_HTTP_TOKEN`` or ``--token-file``) unless the operator waives it
explicitly (``--allow-unauthenticated`` / ``TEMPLIQX_HTTP_ALLOW_UNAUTHENTICATED=1``). The token
is never a flag: a command line is visible to every user of the machine.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from templiqx_http.settings import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_REQUEST_TIMEOUT_S,
    HttpSettings,
)

__all__ = [
    "DEFAULT_ADDR",
    "DEFAULT_GRACE_S",
    "DEFAULT_KEEP_ALIVE_S",
    "DEFAULT_WORKER_THREADS",
    "MODES",
    "ConfigError",
    "ServerConfig",
    "parse_addr",
]

DEFAULT_ADDR: Final = "127.0.0.1:8080"
DEFAULT_GRACE_S: Final = 10.0
DEFAULT_WORKER_THREADS: Final = 16
"""Threads that run the service's blocking work (loading, compiling; a runtime without an async
twin, one per call). Fewer than the library's 64: every thread running Python competes with the
event loop for the GIL, and the loop waits up to a switch interval (5 ms) per runnable thread
before it can answer anyone; the runtimes templiqx ships are natively async and need none."""
DEFAULT_KEEP_ALIVE_S: Final = 5.0
"""How long an idle kept-alive connection stays open (uvicorn's default; behind a proxy that
pools connections, make it longer than the proxy's idle timeout)."""
DEFAULT_WORKSPACE_DIR: Final = ".templiqx-workspace"

MODES: Final[dict[str, str]] = {"deterministic-fake": "fake", "langfuse": "langfuse"}
"""The reference's runtime modes -> the runtime registry's names."""

READINESS_CLASS: Final[dict[str, str]] = {
    "fake": "local-demo-deterministic-fake",
    "langfuse": "optional-langfuse-runtime-not-a-signed-release",
}

ENV = {
    "addr": "TEMPLIQX_HTTP_ADDR",
    "root": "TEMPLIQX_ROOT",
    "workspace": "TEMPLIQX_WORKSPACE",
    "mode": "TEMPLIQX_RUNTIME_MODE",
    "token": "TEMPLIQX_HTTP_TOKEN",
    "token_file": "TEMPLIQX_HTTP_TOKEN_FILE",
    "allow_unauthenticated": "TEMPLIQX_HTTP_ALLOW_UNAUTHENTICATED",
    "allow_workspace_override": "TEMPLIQX_HTTP_ALLOW_WORKSPACE_OVERRIDE",
    "workspace_override_roots": "TEMPLIQX_HTTP_WORKSPACE_OVERRIDE_ROOTS",
    "max_body_bytes": "TEMPLIQX_HTTP_MAX_BODY_BYTES",
    "request_timeout": "TEMPLIQX_HTTP_REQUEST_TIMEOUT_S",
    "max_concurrent": "TEMPLIQX_HTTP_MAX_CONCURRENT",
    "cors_origins": "TEMPLIQX_HTTP_CORS_ORIGINS",
    "grace": "TEMPLIQX_HTTP_GRACE_S",
    "keep_alive": "TEMPLIQX_HTTP_KEEP_ALIVE_S",
    "worker_threads": "TEMPLIQX_HTTP_WORKER_THREADS",
    "workers": "TEMPLIQX_HTTP_WORKERS",
}
"""Setting -> its environment variable."""

PORT_NAMES: Final = {
    "root": "TEMPLIQX_PACKAGES_ROOT",
    "workspace": "TEMPLIQX_WORKSPACE_ROOT",
    "mode": "TEMPLIQX_RUNTIME",
}
"""The port's own names, read when the reference's is unset."""

_TRUE: Final = {"1", "true", "yes", "on"}
_FALSE: Final = {"0", "false", "no", "off"}


class ConfigError(ValueError):
    """The configuration cannot be used; ``problems`` lists every reason found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_addr(text: str) -> tuple[str, int]:
    """``ip:port`` or ``[ipv6]:port`` (no host names; port 0 = any free port)."""
    host, sep, port_text = text.strip().rpartition(":")
    if not sep or not host:
        raise ValueError(f"bind address {text!r} is not ip:port (e.g. 127.0.0.1:8080)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(
            f"bind address {text!r}: {host!r} is not an IP address (host names are not "
            "accepted: use 127.0.0.1, 0.0.0.0, ::1 or ::)"
        ) from None
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"bind address {text!r}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    return ipaddress.ip_address(host).is_loopback


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server needs, resolved and checked (see the module docstring)."""

    host: str = "127.0.0.1"
    port: int = 8080
    root: str = "."
    workspace: str | None = None
    mode: str = "deterministic-fake"
    runtime: str = "fake"
    token: str | None = field(default=None, repr=False)
    allow_unauthenticated: bool = False
    allow_workspace_override: bool = False
    workspace_override_roots: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    cors_origins: tuple[str, ...] = ()
    grace_s: float = DEFAULT_GRACE_S
    keep_alive_s: float = DEFAULT_KEEP_ALIVE_S
    worker_threads: int = DEFAULT_WORKER_THREADS
    workers: int = 1
    warnings: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def workspace_path(self) -> str:
        return self.workspace or os.path.join(self.root, DEFAULT_WORKSPACE_DIR)

    @property
    def readiness_class(self) -> str:
        return READINESS_CLASS.get(self.runtime, f"runtime-{self.runtime}")

    def http_settings(self) -> HttpSettings:
        return HttpSettings(
            token=self.token,
            allow_workspace_override=self.allow_workspace_override,
            max_body_bytes=self.max_body_bytes,
            request_timeout_s=self.request_timeout_s,
            max_concurrent=self.max_concurrent,
            cors_origins=self.cors_origins,
        )

    def public(self) -> dict[str, Any]:
        """What may be logged: everything but secrets (the token is only said to be set)."""
        return {
            "bind_addr": self.address,
            "root": self.root,
            "workspace": self.workspace_path,
            "runtime_mode": self.mode,
            "runtime": self.runtime,
            "readiness_class": self.readiness_class,
            "auth": "bearer" if self.token else "none",
            "workspace_override": self.allow_workspace_override,
            "max_body_bytes": self.max_body_bytes,
            "request_timeout_s": self.request_timeout_s,
            "max_concurrent": self.max_concurrent,
            "cors_origins": list(self.cors_origins),
            "grace_s": self.grace_s,
            "keep_alive_s": self.keep_alive_s,
            "worker_threads": self.worker_threads,
            "workers": self.workers,
        }

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], environ: Mapping[str, str]) -> ServerConfig:
        """The configuration from parsed ``flags`` (``None``: not given) and ``environ``.

        Raises :class:`ConfigError` listing every problem.
        """
        return _Resolver(flags, environ).resolve()


class _Resolver:
    def __init__(self, flags: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        self.flags = flags
        self.environ = environ
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def env(self, name: str) -> str | None:
        value = self.environ.get(name, "")
        return value if value.strip() else None

    def raw(self, key: str) -> tuple[Any, str]:
        """The flag's value, else the environment's, with where it came from."""
        flag = self.flags.get(key)
        if flag is not None and flag != () and flag is not False:
            return flag, "--" + key.replace("_", "-")
        name = ENV.get(key)
        if name is not None and self.env(name) is not None:
            return self.env(name), name
        port = PORT_NAMES.get(key)
        if port is not None and self.env(port) is not None:
            return self.env(port), port
        return None, ""

    def number(self, key: str, default: float, kind: type, low: float) -> Any:
        value, where = self.raw(key)
        if value is None:
            return default
        try:
            number = kind(value)
        except (TypeError, ValueError):
            self.problems.append(f"{where} must be a number, not {str(value)!r}")
            return default
        if number < low:
            self.problems.append(f"{where} must be at least {low:g}")
            return default
        return number

    def boolean(self, key: str) -> bool:
        value, where = self.raw(key)
        if value is None or isinstance(value, bool):
            return bool(value)
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text not in _FALSE:
            self.problems.append(f"{where} must be 1/true/yes/on or 0/false/no/off")
        return False

    def listing(self, key: str, separator: str) -> tuple[str, ...]:
        value, _ = self.raw(key)
        if value is None:
            return ()
        items = value if isinstance(value, (list, tuple)) else str(value).split(separator)
        return tuple(item.strip() for item in items if item.strip())

    def resolve(self) -> ServerConfig:
        addr, where = self.raw("addr")
        host, port = "127.0.0.1", 8080
        try:
            host, port = parse_addr(addr or DEFAULT_ADDR)
        except ValueError as exc:
            self.problems.append(f"{where}: {exc}")
        root = self.raw("root")[0] or "."
        workspace = self.raw("workspace")[0]
        for key in ("root", "workspace", "mode"):
            ours, theirs = self.env(ENV[key]), self.env(PORT_NAMES[key])
            if ours is not None and theirs is not None and ours != theirs:
                self.warnings.append(
                    f"{ENV[key]} and {PORT_NAMES[key]} are both set and differ; {ENV[key]} is used"
                )
        mode = str(self.raw("mode")[0] or "deterministic-fake")
        runtime = MODES.get(mode, mode)
        token = self.token()
        waived = self.boolean("allow_unauthenticated")
        if not self.problems and not is_loopback(host) and token is None and not waived:
            self.problems.append(
                f"refusing to serve on {host} (not a loopback address) without a bearer "
                f"token: set {ENV['token']} (or --token-file), or waive it explicitly with "
                f"--allow-unauthenticated if something in front authenticates every request"
            )
        if runtime == "fake" and self.env("MODEL_API_KEY") is not None:
            self.warnings.append(
                f"MODEL_API_KEY is set but ignored: runtime mode {mode} calls no model"
            )
        origins = self.listing("cors_origins", ",")
        config = ServerConfig(
            host=host,
            port=port,
            root=os.path.abspath(str(root)),
            workspace=os.path.abspath(str(workspace)) if workspace else None,
            mode=mode,
            runtime=runtime,
            token=token,
            allow_unauthenticated=waived,
            allow_workspace_override=self.boolean("allow_workspace_override"),
            workspace_override_roots=tuple(
                os.path.abspath(p) for p in self.listing("workspace_override_roots", os.pathsep)
            ),
            max_body_bytes=self.number("max_body_bytes", DEFAULT_MAX_BODY_BYTES, int, 1),
            request_timeout_s=self.number(
                "request_timeout", DEFAULT_REQUEST_TIMEOUT_S, float, 0.001
            ),
            max_concurrent=self.number("max_concurrent", DEFAULT_MAX_CONCURRENT, int, 1),
            cors_origins=origins,
            grace_s=self.number("grace", DEFAULT_GRACE_S, float, 0),
            keep_alive_s=self.number("keep_alive", DEFAULT_KEEP_ALIVE_S, float, 0.1),
            worker_threads=self.number("worker_threads", DEFAULT_WORKER_THREADS, int, 1),
            workers=self.number("workers", 1, int, 1),
            warnings=tuple(self.warnings),
        )
        if self.problems:
            raise ConfigError(self.problems)
        return config

    def token(self) -> str | None:
        path, where = self.raw("token_file")
        if path is not None:
            try:
                with open(str(path), encoding="utf-8") as handle:
                    text = handle.read().strip()
            except OSError as exc:
                self.problems.append(f"{where}: cannot read the token file: {exc.strerror}")
                return None
            if not text:
                self.problems.append(f"{where}: the token file is empty")
                return None
            return text
        value = self.env(ENV["token"])
        return value.strip() if value is not None else None
