"""Composing the local service for one command: the root, the workspace and the runtime.

Runtimes are chosen by entry-point name (``templiqx.runtimes``), so an installed adapter
distribution is usable through ``--runtime NAME`` without any change here. The default, the
deterministic fake, is built in: composing it scans no entry points (reading every installed
distribution's metadata costs more than the rest of a short command's start-up).

The service and the store are imported when a service is composed (by
:func:`templiqx_local.compose.compose`), not when this module is: ``templiqx --help`` imports
it without composing anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from templiqx_cli.inputs import CliError
from templiqx_local.compose import (
    RuntimeSelectionError,
    available_runtimes,
    compose,
    load_runtime,
    unknown_runtime_message,
)
from templiqx_ports import PortError

if TYPE_CHECKING:
    from templiqx_application import TempliqxService

__all__ = ["UnknownRuntimeError", "compose_service", "runtime_names"]


BUILTIN_RUNTIME = "fake"
"""The runtime composed without an entry-point lookup (``templiqx_local.compose``'s default)."""

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
    if runtime != BUILTIN_RUNTIME and runtime not in available_runtimes():
        raise UnknownRuntimeError(
            unknown_runtime_message(runtime).replace("'; ", "' (--runtime); ", 1)
        )
    try:
        if runtime == BUILTIN_RUNTIME:
            return compose(root)
        return compose(root, runtime=load_runtime(runtime))
    except PortError as exc:
        raise CliError(
            f"compose local Templiqx service: {exc}", code=exc.code, help=ROOT_HINT
        ) from exc
    except (RuntimeSelectionError, OSError, ValueError) as exc:  # ValueError: a bad setting
        raise CliError(f"compose local Templiqx service: {exc}") from exc
