"""The click application: the group, the runner every generated command calls, and exit codes.

Exit codes: 0 when the envelope is ok, 2 when it is not or on a usage error, 1 on an I/O or
decode failure outside any operation (``templiqx: <cause>`` on stderr), 130 on Ctrl-C.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from templiqx_application import CATALOG
from templiqx_cli.commands import Globals, OperationCall, merged_command, operation_command
from templiqx_cli.composition import UnknownRuntimeError, compose_service
from templiqx_cli.group import PLUGIN_GROUP, TempliqxGroup, help_command
from templiqx_cli.inputs import STDIN, CliError, values_document
from templiqx_cli.layout import MERGED, layout_for
from templiqx_cli.terminal import terminal_safe

# Printing an envelope (templiqx_cli.output, .hints, .snippets) and placing diagnostics are
# imported by the functions that do it: ``--help`` and usage errors never print one (issue #33).

if TYPE_CHECKING:
    from templiqx_contracts import OperationEnvelope

__all__ = ["PLUGIN_GROUP", "TempliqxGroup", "build_group", "run", "run_call"]

VERSION = "0.2.0"
EXIT_INTERRUPTED = 130

_HELP = """templiqx: validate, compile, execute and stream AI interaction contracts.

Every command runs one operation of the templiqx service. For people it prints a summary (what
passed, what failed and where, what to do); with --json, the operation's envelope as compact
JSON, for machines. Exit code 0 when the envelope is ok, 2 when it is not (or on a usage
error), 1 when a file cannot be read, 130 after Ctrl-C.

\b
Examples:
  templiqx --root fixtures/packages validate welcome
  templiqx demo
"""


def _values_placed(envelope: OperationEnvelope, call: OperationCall) -> OperationEnvelope:
    """The envelope with each request-value problem placed in the ``--values`` file it came
    from (its ``file`` as given, its ``span`` there), not in the contract."""
    path = call.values_file
    data = values_document(path) if path is not None else None
    if path is None or data is None:
        return envelope
    from templiqx_application.diagnostics import envelope_placed_in_request

    return envelope_placed_in_request(envelope, data, "<stdin>" if path == STDIN else path)


def _print(
    envelope: OperationEnvelope,
    options: Globals,
    call: OperationCall,
    arguments: dict[str, Any],
    *,
    streamed: bool = False,
) -> int:
    """Print the envelope; for people, with this command line's hints and files."""
    from templiqx_application.diagnostics import contract_file
    from templiqx_cli.hints import command_hints
    from templiqx_cli.output import print_envelope
    from templiqx_cli.snippets import SourceFiles

    envelope = _values_placed(envelope, call)
    if options.as_json:
        return print_envelope(envelope, as_json=True)
    hints = command_hints(envelope, call.spec, arguments, options.root, options.root_given)
    given: dict[str, str] = {}
    package, contract = arguments.get("package"), arguments.get("contract")
    if isinstance(package, str) and isinstance(contract, str):
        for path in call.files.values():  # a contract's source text, read from this file
            given[contract_file(package, contract)] = path
    if call.values_file is not None and call.values_file != STDIN:
        given[call.values_file] = call.values_file  # request-value problems are shown there
    files = SourceFiles(options.root, given)  # snippets: given files, else under the root
    # a stream drawn on the terminal that also shows this rendering is not shown twice
    answer_shown = streamed and _is_terminal(sys.stderr) and _is_terminal(sys.stdout)
    return print_envelope(
        envelope,
        as_json=False,
        hints=hints,
        files=files,
        arguments=arguments,
        root=options.root,
        answer_shown=answer_shown,
    )


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def run_call(options: Globals, call: OperationCall) -> int:
    """Compose the service, read the command's files, run the operation, print the envelope."""
    if call.operation == "catalog":
        return _print_catalog(options, call)
    service = compose_service(options.root, options.runtime)
    arguments = call.build_arguments()
    if arguments.get("stream") is True:  # only an operation with a `stream` flag binds one
        from templiqx_cli.output import stream_operation

        envelope, interrupted = stream_operation(
            service, call.operation, arguments, as_json=options.as_json
        )
        code = _print(envelope, options, call, arguments, streamed=True)
        return EXIT_INTERRUPTED if interrupted else code
    return _print(service.invoke(call.operation, arguments), options, call, arguments)


def _print_catalog(options: Globals, call: OperationCall) -> int:
    """The catalog, without composing a service: the shipped snapshot when no option is given,
    else the application's own answer for the options (``--view names``)."""
    arguments = call.build_arguments()
    if not arguments:
        from templiqx_cli.snapshot import print_catalog

        return print_catalog(as_json=options.as_json)
    from templiqx_application import catalog_envelope

    return _print(catalog_envelope(arguments), options, call, arguments)


def build_group() -> TempliqxGroup:
    """The ``templiqx`` command group, generated from the catalog."""
    from templiqx_cli.batch import batch_command, with_dataset
    from templiqx_cli.commands import global_options
    from templiqx_cli.demo import demo_command

    group = TempliqxGroup(
        "templiqx",
        params=global_options(),
        help=_HELP,
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    )
    click.version_option(
        VERSION, "-V", "--version", prog_name="templiqx", message="%(prog)s %(version)s"
    )(group)
    specs = {spec.name: spec for spec in CATALOG}
    merges = [m for m in MERGED if m.short in specs and m.long in specs]
    for spec in CATALOG:
        merge = next((m for m in merges if spec.name in (m.short, m.long)), None)
        if merge is None:
            layout = layout_for(spec.name, ())
            group.add_to_section(operation_command(spec, run_call), layout.section)
        elif merge.command not in group.commands:
            command = merged_command(merge, specs[merge.short], specs[merge.long], run_call)
            group.add_to_section(command, merge.section)
    group.add_to_section(demo_command(), "start")
    group.add_to_section(batch_command(), "execution")
    with_dataset(group.commands["test"], contract_positional=None)
    with_dataset(group.commands["run-eval"], contract_positional="arg_contract")
    group.add_to_section(help_command(), "start")
    return group


def run(argv: list[str]) -> int:
    """Parse ``argv`` and run the command; return the process exit code."""
    group = build_group()
    try:
        result = group.main(args=argv, prog_name="templiqx", standalone_mode=False)
    except UnknownRuntimeError as exc:
        sys.stderr.write(terminal_safe(exc.render()) + "\n")
        return 2
    except CliError as exc:
        sys.stderr.write(terminal_safe(exc.render()) + "\n")
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        sys.stderr.write("templiqx: interrupted\n")
        return EXIT_INTERRUPTED
    return result if isinstance(result, int) else 0
