"""The console-script entry point: a fast path for ``catalog``, click for everything else.

``templiqx catalog`` must answer as fast as the interpreter starts (a benchmark holds it to a few
times ``python3 -c pass``), so it is recognised here, with plain string checks, and answered from
the snapshot of the service catalog shipped beside this module; neither click nor the service is
imported. Every other command line goes to the click application.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_VALUE_OPTIONS = ("--root", "--runtime")


def _is_plain_catalog_call(argv: list[str]) -> bool | None:
    """``None`` unless ``argv`` is exactly ``catalog`` with global options; else ``--json``."""
    command_seen = False
    as_json = False
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "catalog" and not command_seen:
            command_seen = True
        elif token == "--json":
            as_json = True
        elif token in _VALUE_OPTIONS:
            if index + 1 >= len(argv):
                return None
            index += 1
        elif not any(token.startswith(f"{option}=") for option in _VALUE_OPTIONS):
            return None
        index += 1
    return as_json if command_seen else None


def main(argv: list[str] | None = None) -> int:
    """Run ``templiqx`` with ``argv`` (default: the process arguments); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = _is_plain_catalog_call(args)
    if as_json is not None:
        from templiqx_cli.snapshot import print_catalog

        return print_catalog(as_json=as_json)
    from templiqx_cli.app import run

    return run(args)
