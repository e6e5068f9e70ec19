"""Composing the local service for one command: the root, the workspace and the runtime.

Runtimes are chosen by entry-point name (``templiqx.runtimes``), so an installed adapter
distribution is usable through ``--runtime NAME`` without any change here.
"""

from __future__ import annotations

from templiqx_application import TempliqxService
from templiqx_cli.inputs import CliError
from templiqx_local.compose import (
    RuntimeSelectionError,
    available_runtimes,
    compose,
    load_runtime,
    unknown_runtime_message,
)
from templiqx_ports import PortError

__all__ = ["UnknownRuntimeError", "compose_service", "runtime_names"]


ROOT_HINT = "pass --root DIR naming the folder that holds the package folders (default: .)"


class UnknownRuntimeError(CliError):
    """``--runtime`` names no installed runtime: a usage error (exit code 2)."""


def runtime_names() -> list[str]:
    """The installed runtime names, sorted."""
    return available_runtimes()


def compose_service(root: str, runtime: str) -> TempliqxService:
    """The service over ``root`` (created if missing) running ``runtime``.

    Raises :class:`UnknownRuntimeError` for a name no distribution registers, and
    :class:`CliError` when the runtime or the store cannot be set up.
    """
    if runtime not in available_runtimes():
        raise UnknownRuntimeError(
            unknown_runtime_message(runtime).replace("'; ", "' (--runtime); ", 1)
        )
    try:
        adapter = load_runtime(runtime)
        return compose(root, runtime=adapter)
    except PortError as exc:
        raise CliError(
            f"compose local Templiqx service: {exc}", code=exc.code, help=ROOT_HINT
        ) from exc
    except (RuntimeSelectionError, OSError) as exc:
        raise CliError(f"compose local Templiqx service: {exc}") from exc
