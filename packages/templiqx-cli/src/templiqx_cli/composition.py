"""Composing the local service for one command: the root, the workspace and the runtime.

Runtimes are chosen by entry-point name (``templiqx.runtimes``), so an installed adapter
distribution is usable through ``--runtime NAME`` without any change here. The default, the
deterministic fake, is built in: composing it scans no entry points (reading every installed
distribution's metadata costs more than the rest of a short command's start-up).

The local composition, the service and the store are imported when a service is composed (by
:func:`templiqx_local.compose.compose`), not when this module is: ``templiqx --help`` imports
it without composing anything.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from templiqx_cli.entry_points import group_names
from templiqx_cli.inputs import CliError

if TYPE_CHECKING:
    from templiqx_application import TempliqxService

__all__ = ["UnknownRuntimeError", "compose_service", "runtime_names"]


BUILTIN_RUNTIME = "fake"
"""The runtime composed without an entry-point lookup (``templiqx_local.compose``'s default)."""

RUNTIME_GROUP = "templiqx.runtimes"
"""``templiqx_local.compose.RUNTIME_ENTRY_POINT_GROUP`` (the name, not imported)."""
ROOT_HINT = "pass --root DIR naming the folder that holds the package folders (default: .)"


class UnknownRuntimeError(CliError):
    """``--runtime`` names no installed runtime: a usage error (exit code 2)."""


def runtime_names() -> list[str]:
    """The installed runtime names, sorted (read without importing the local composition or
    ``importlib.metadata`` when every distribution is a plain folder: ``--help`` lists them)."""
    names = group_names(RUNTIME_GROUP)
    if names is not None:
        return names
    from templiqx_local.compose import available_runtimes

    return available_runtimes()


def compose_service(root: str, runtime: str) -> TempliqxService:
    """The service over ``root`` (created if missing) running ``runtime``.

    Raises :class:`UnknownRuntimeError` for a name no distribution registers, and
    :class:`CliError` when the runtime or the store cannot be set up.
    """
    from templiqx_local.compose import (
        RuntimeSelectionError,
        available_runtimes,
        compose,
        load_runtime,
        unknown_runtime_message,
    )
    from templiqx_ports import PortError

    if runtime != BUILTIN_RUNTIME and runtime not in available_runtimes():
        raise UnknownRuntimeError(
            unknown_runtime_message(runtime).replace("'; ", "' (--runtime); ", 1)
        )
    try:
        if runtime == BUILTIN_RUNTIME:
            return compose(root)
        return compose(root, runtime=load_runtime(runtime))
    except PortError as exc:
        missing = not os.path.lexists(root)
        hint = (
            f"create the folder first (mkdir -p {shlex.quote(root)}: templiqx never creates a "
            f"packages root), or {ROOT_HINT}"
            if missing
            else ROOT_HINT
        )
        raise CliError(f"compose local Templiqx service: {exc}", code=exc.code, help=hint) from exc
    except (RuntimeSelectionError, OSError, ValueError) as exc:  # ValueError: a bad setting
        raise CliError(f"compose local Templiqx service: {exc}") from exc
