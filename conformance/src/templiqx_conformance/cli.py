"""The command: ``templiqx-conformance``, also ``templiqx conformance`` (:func:`plugin`).

::

    templiqx-conformance run package.module:factory [--transport NAME]
                             [--failures package.module:cases] [--check NAME ...] [--json]
    templiqx-conformance list [--transport NAME] [--json]
    templiqx-conformance scenarios DIRECTORY [--json]

``run`` prints a pass/fail table (or the report as JSON with ``--json``). The factory reference
may name an adapter class, a zero-argument factory, a factory receiving the base URL (with
``--transport``) or an :class:`~templiqx_conformance.AdapterTarget`. ``--transport`` takes a
registered transport name (``openai``, or one registered under ``templiqx.conformance.wires``)
or a ``package.module:Wire`` reference. ``scenarios`` replays reference scenario manifests
(needs ``templiqx-conformance[scenarios]``).

Exit status: 0 when every check passed (or did not apply), 2 when a check failed or the
command was misused, 1 when the target could not be loaded or an I/O error occurred; causes
go to stderr as ``templiqx-conformance: <cause>`` (``templiqx conformance: <cause>`` when run as
the ``templiqx`` plugin, which also names itself so in its usage and help).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import msgspec

from templiqx_conformance.errors import TargetError
from templiqx_conformance.references import load_object
from templiqx_conformance.report import ConformanceReport, render_table
from templiqx_conformance.runner import checks_for, run_conformance
from templiqx_conformance.target import AdapterTarget, FailureCase
from templiqx_conformance.wires.registry import transport_names

__all__ = ["main", "plugin"]

PROG = "templiqx-conformance"
PLUGIN_PROG = "templiqx conformance"

_EPILOG = """\
examples:
  {prog} list
  {prog} run templiqx_application:DeterministicFakeRuntime
  {prog} run my_adapter:create_runtime --failures my_adapter:failure_cases --json
  {prog} run my_adapter:Client --transport openai --check transport.tool_calls
  {prog} run my_adapter:make --transport ollama
  {prog} run my_adapter:make --transport my_adapter_kit:ChatWire
  {prog} scenarios path/to/package/scenarios

MODULE:FACTORY names an importable object: an adapter class, a zero-argument factory, a factory
receiving the loopback server's base URL (with --transport), or an AdapterTarget. --transport
takes a transport name ({names}) or MODULE:WIRE, a templiqx_conformance.Wire. Exit status:
0 when every check passed or did not apply, 2 when a check failed (or on a usage error), 1 when
the target could not be loaded.
"""
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_FAILED = 2


def _transport(value: str) -> str:
    """argparse type: a known transport name, or a MODULE:WIRE reference (resolved later)."""
    if ":" in value or value in transport_names():
        return value
    raise argparse.ArgumentTypeError(
        f"unknown transport {value!r} (choose from {', '.join(transport_names())}, "
        "or give MODULE:WIRE)"
    )


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Check that a templiqx runtime adapter keeps the runtime port's contract.",
        epilog=_EPILOG.format(prog=prog, names=", ".join(transport_names())),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the kit against an adapter and print a pass/fail table",
        epilog=f"example: {prog} run templiqx_application:DeterministicFakeRuntime",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "target",
        metavar="MODULE:FACTORY",
        help="package.module:name of an adapter class, a factory, or an AdapterTarget",
    )
    run.add_argument(
        "--transport",
        type=_transport,
        metavar="NAME",
        help="the adapter talks HTTP to a provider the kit plays: a transport name (openai, "
        "anthropic-messages, ollama, or a registered one) or MODULE:WIRE; the factory receives "
        "the kit server's URL",
    )
    run.add_argument(
        "--failures",
        metavar="MODULE:CASES",
        help="package.module:name of a list of FailureCase (or a function returning one)",
    )
    run.add_argument(
        "--check",
        action="append",
        metavar="NAME",
        help="run only this check (repeatable)",
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")

    listing = commands.add_parser(
        "list",
        help="list the checks and what each proves",
        epilog=f"example: {prog} list --transport openai",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listing.add_argument(
        "--transport",
        type=_transport,
        metavar="NAME",
        help="also list the checks of the transport suite",
    )
    listing.add_argument("--json", action="store_true", help="print the list as JSON")

    scenarios = commands.add_parser(
        "scenarios",
        help="replay a folder of scenario manifests and compare golden receipt fingerprints",
        epilog=f"example: {prog} scenarios fixtures/packages/welcome/scenarios",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scenarios.add_argument(
        "directory",
        help="a package's scenarios folder, or the package folder holding one",
    )
    scenarios.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _failures(reference: str | None) -> list[FailureCase]:
    if reference is None:
        return []
    value: Any = load_object(reference)
    if callable(value) and not isinstance(value, FailureCase):
        value = value()
    if isinstance(value, FailureCase):
        return [value]
    try:
        cases = list(value)
    except TypeError:
        raise TargetError(f"{reference} is not a list of FailureCase") from None
    if not all(isinstance(case, FailureCase) for case in cases):
        raise TargetError(f"{reference} must hold FailureCase values only")
    return cases


def _emit(report: ConformanceReport, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(report.to_json().decode("utf-8") + "\n")
    else:
        sys.stdout.write(render_table(report))
    return EXIT_OK if report.ok else EXIT_FAILED


def _run(args: argparse.Namespace) -> int:
    target: Any = load_object(args.target)
    failures = _failures(args.failures)
    if not isinstance(target, AdapterTarget) and not callable(target):
        raise TargetError(f"{args.target} is neither callable nor an AdapterTarget")
    report = run_conformance(
        target, transport=args.transport, failures=failures or None, checks=args.check
    )
    return _emit(report, args.json)


def _list(args: argparse.Namespace) -> int:
    checks = checks_for(args.transport)
    if args.json:
        rows = [{"name": check.name, "invariant": check.invariant} for check in checks]
        sys.stdout.write(msgspec.json.encode(rows).decode("utf-8") + "\n")
    else:
        width = max(len(check.name) for check in checks)
        for check in checks:
            sys.stdout.write(f"{check.name:<{width}}  {check.invariant}\n")
    return EXIT_OK


def _scenarios(args: argparse.Namespace) -> int:
    from templiqx_conformance.scenarios import replay_scenarios

    return _emit(replay_scenarios(args.directory), args.json)


def plugin(argv: Sequence[str] | None = None) -> int:
    """The ``conformance`` command of ``templiqx`` (entry-point group ``templiqx.cli_plugins``).

    The same command as :func:`main`, naming itself ``templiqx conformance``.
    """
    return main(argv, prog=PLUGIN_PROG)


def main(argv: Sequence[str] | None = None, *, prog: str = PROG) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status.

    ``prog`` is the name the command gives itself in usage, help and error messages.
    """
    parser = _parser(prog)
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_FAILED
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "list":
            return _list(args)
        return _scenarios(args)
    except TargetError as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
        return EXIT_ERROR
    except BrokenPipeError:  # the reader went away (e.g. `| head`): nothing left to say
        return EXIT_OK
    except OSError as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
        return EXIT_ERROR
