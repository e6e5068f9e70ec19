"""Generating click commands from the catalog.

One command per operation (plus ``validate``, which serves two). Parameters map by convention:

* the layout's positionals become arguments (a ``text_files`` one names a file read as text);
* ``inputs`` + ``context`` become ``--values FILE`` (``{"inputs": …, "context": …}``);
* ``capabilities`` becomes ``--capability C`` and any other string list ``--name V``, repeatable;
* a boolean becomes a flag; ``workspace`` becomes ``--workspace DIR`` made absolute;
* an ``object`` or ``json`` parameter becomes ``--name FILE`` holding JSON;
* any other string becomes ``--name VALUE`` (required when the catalog requires it).

An option that is not given is left out of the arguments, so the service applies its own
default: the command line decides nothing the Python API would not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click

from templiqx_application.catalog import OperationSpec, ParameterSpec
from templiqx_cli.completion import complete_contracts, complete_packages
from templiqx_cli.inputs import absolute_workspace, read_json, read_text, read_values
from templiqx_cli.layout import Layout, MergedCommand, layout_for

__all__ = [
    "GLOBAL_NOTE",
    "Globals",
    "OperationCall",
    "global_options",
    "merged_command",
    "operation_command",
]

Binding = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Turns the parsed click values into service arguments (reading files when needed)."""


@dataclass(frozen=True)
class Globals:
    """The options every command accepts, before or after its name."""

    root: str
    as_json: bool
    runtime: str
    root_given: bool = False
    """Whether ``--root`` was given (``root`` is ``.`` otherwise)."""
    runtime_given: bool = False
    """Whether ``--runtime`` was given (``runtime`` is ``fake`` otherwise)."""


@dataclass(frozen=True)
class OperationCall:
    """What a command asks the runner to do: the operation and how to build its arguments."""

    operation: str
    spec: OperationSpec
    build_arguments: Callable[[], dict[str, Any]]
    files: Mapping[str, str] = field(default_factory=dict)
    """The host files named on the command line whose text became an argument, by parameter."""
    values_file: str | None = None
    """The ``--values`` file as given (``-``: standard input), when there is one."""


Runner = Callable[[Globals, OperationCall], int]

ROOT_HELP = "Folder holding the package folders (default: .)."
JSON_HELP = "Print the envelope as compact JSON (and stream events as JSON lines), for machines."
RUNTIME_HELP = (
    "Runtime for execute, by entry-point name in the templiqx.runtimes group "
    "(default: fake, the deterministic offline runtime)."
)


GLOBAL_NOTE = (
    "Global options --root DIR, --json and --runtime NAME are accepted before or after the "
    "command (templiqx --help describes them)."
)


def global_options(*, hidden: bool = False) -> list[click.Parameter]:
    """``--root``, ``--json`` and ``--runtime``, attached to the group and to every command.

    A command's own copies are ``hidden``: its help points to ``templiqx --help`` instead of
    repeating them, but they are still accepted after the command's name.
    """
    return [
        click.Option(
            ["--root", "root"], metavar="DIR", default=None, help=ROOT_HELP, hidden=hidden
        ),
        click.Option(
            ["--json", "as_json"], is_flag=True, default=False, help=JSON_HELP, hidden=hidden
        ),
        click.Option(
            ["--runtime", "runtime"],
            metavar="NAME",
            default=None,
            help=RUNTIME_HELP,
            hidden=hidden,
        ),
    ]


def resolve_globals(values: Mapping[str, Any]) -> Globals:
    """The effective global options: the command's own value wins, then the group's."""
    ctx = click.get_current_context()
    group: Mapping[str, Any] = ctx.parent.params if ctx.parent is not None else {}
    given_root = values.get("root") or group.get("root")
    given_runtime = values.get("runtime") or group.get("runtime")
    as_json = bool(values.get("as_json") or group.get("as_json"))
    return Globals(
        root=str(given_root or "."),
        as_json=as_json,
        runtime=str(given_runtime or "fake"),
        root_given=given_root is not None,
        runtime_given=given_runtime is not None,
    )


def _dest(name: str) -> str:
    return f"arg_{name}"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _metavar(name: str) -> str:
    return name.upper()


_COMPLETIONS = {
    "package": complete_packages,
    "left_package": complete_packages,
    "right_package": complete_packages,
    "contract": complete_contracts,
    "left_contract": complete_contracts,
    "right_contract": complete_contracts,
}


def _argument(name: str, metavar: str, *, required: bool) -> click.Argument:
    """A positional, completing package and contract names in the shell."""
    return click.Argument(
        [_dest(name)], metavar=metavar, required=required, shell_complete=_COMPLETIONS.get(name)
    )


def _positional(parameter: ParameterSpec, layout: Layout) -> tuple[click.Parameter, Binding]:
    dest = _dest(parameter.name)
    argument = _argument(parameter.name, _metavar(parameter.name), required=parameter.required)

    def bind(values: Mapping[str, Any]) -> dict[str, Any]:
        raw = values.get(dest)
        if raw is None:
            return {}
        if parameter.name in layout.text_files:
            return {parameter.name: read_text(raw)}
        if parameter.type in ("object", "json"):
            return {parameter.name: read_json(raw)}
        return {parameter.name: raw}

    return argument, bind


def _option(parameter: ParameterSpec, layout: Layout) -> tuple[click.Parameter, Binding]:
    dest = _dest(parameter.name)
    name = parameter.name
    help_text = parameter.description
    if parameter.type == "boolean":
        option = click.Option([_flag(name), dest], is_flag=True, default=False, help=help_text)

        def bind_flag(values: Mapping[str, Any]) -> dict[str, Any]:
            return {name: True} if values.get(dest) else {}

        return option, bind_flag
    if parameter.type == "string_list":
        flag = "--capability" if name == "capabilities" else _flag(name)
        option = click.Option(
            [flag, dest],
            multiple=True,
            metavar="VALUE",
            help=f"{help_text} Repeat for several values.",
        )

        def bind_list(values: Mapping[str, Any]) -> dict[str, Any]:
            items = values.get(dest) or ()
            return {name: list(items)} if items else {}

        return option, bind_list
    if parameter.type in ("object", "json"):
        option = click.Option(
            [_flag(name), dest], metavar="FILE", help=f"{help_text} (a JSON file)"
        )

        def bind_json(values: Mapping[str, Any]) -> dict[str, Any]:
            path = values.get(dest)
            return {} if path is None else {name: read_json(path)}

        return option, bind_json
    cli_default = layout.cli_defaults.get(name)
    required = parameter.required and cli_default is None
    if isinstance(parameter.choices, list):  # the service judges the value; help lists them
        help_text += f" One of: {', '.join(parameter.choices)} (default: {parameter.default})."
    option = click.Option(
        [_flag(name), dest],
        metavar="DIR" if name == "workspace" else _metavar(name),
        required=required,
        default=cli_default,
        show_default=cli_default is not None,
        help=help_text,
    )

    def bind_string(values: Mapping[str, Any]) -> dict[str, Any]:
        value = values.get(dest)
        if value is None:
            return {}
        return {name: absolute_workspace(value) if name == "workspace" else value}

    return option, bind_string


def _values_option() -> tuple[click.Parameter, Binding]:
    dest = "values_file"
    option = click.Option(
        ["--values", dest],
        metavar="FILE",
        help='JSON file {"inputs": {…}, "context": {…}} (both keys optional).',
    )

    def bind(values: Mapping[str, Any]) -> dict[str, Any]:
        path = values.get(dest)
        return {} if path is None else read_values(path)

    return option, bind


def _parameters(
    spec: OperationSpec, layout: Layout
) -> tuple[list[click.Parameter], list[click.Parameter], list[Binding]]:
    """Positionals (in layout order), options, and the bindings of both."""
    by_name = {p.name: p for p in spec.parameters}
    positionals: list[click.Parameter] = []
    options: list[click.Parameter] = []
    bindings: list[Binding] = []
    for name in layout.positionals:
        if name in by_name:
            param, bind = _positional(by_name[name], layout)
            positionals.append(param)
            bindings.append(bind)
    values_pair = {"inputs", "context"} <= by_name.keys() and all(
        by_name[n].type == "object" for n in ("inputs", "context")
    )
    if values_pair:
        param, bind = _values_option()
        options.append(param)
        bindings.append(bind)
    for parameter in spec.parameters:
        if parameter.name in layout.positionals:
            continue
        if values_pair and parameter.name in ("inputs", "context"):
            continue
        param, bind = _option(parameter, layout)
        options.append(param)
        bindings.append(bind)
    return positionals, options, bindings


def _help(summary: str, arguments: list[tuple[str, str]], example: str, notes: str) -> str:
    """Summary, arguments, example(s), then the notes (which may explain the example).

    The global options are named once, in a closing line, not listed with every command.
    """
    parts = [summary]
    if arguments:
        width = max(len(metavar) for metavar, _ in arguments)
        lines = [f"  {metavar.ljust(width)}  {text}" for metavar, text in arguments]
        parts.append("\b\nArguments:\n" + "\n".join(lines))
    if example:
        lines = example.split("\n")
        title = "Example:" if len(lines) == 1 else "Examples:"
        parts.append(f"\b\n{title}\n" + "\n".join(f"  {line}" for line in lines))
    if notes:
        parts.append(notes)
    parts.append(GLOBAL_NOTE)
    return "\n\n".join(parts)


def _example(layout: Layout) -> str:
    if layout.example:
        return layout.example
    words = ["templiqx", layout.command, *(f"<{_metavar(n)}>" for n in layout.positionals)]
    return " ".join(words)


def _shown_path(path: str) -> str:
    """How diagnostics name a file given on the command line (``-`` is standard input)."""
    return "<stdin>" if path == "-" else path


def _bind_all(bindings: list[Binding], values: Mapping[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for bind in bindings:
        arguments.update(bind(values))
    return arguments


def operation_command(spec: OperationSpec, runner: Runner) -> click.Command:
    """The click command of one catalog operation."""
    required_strings = tuple(p.name for p in spec.parameters if p.required and p.type == "string")
    layout = layout_for(spec.name, required_strings)
    positionals, options, bindings = _parameters(spec, layout)
    described = {p.name: p.description for p in spec.parameters}
    described.update(layout.argument_help)
    arguments_help = [(_metavar(n), described[n]) for n in layout.positionals if n in described]

    def callback(**values: Any) -> int:
        files = {
            name: _shown_path(str(values[_dest(name)]))
            for name in layout.text_files
            if values.get(_dest(name)) is not None
        }
        values_file = values.get("values_file")
        call = OperationCall(
            spec.name,
            spec,
            lambda: _bind_all(bindings, values),
            files,
            values_file if isinstance(values_file, str) else None,
        )
        return runner(resolve_globals(values), call)

    return click.Command(
        layout.command,
        params=[*positionals, *options, *global_options(hidden=True)],
        callback=callback,
        help=_help(spec.summary, arguments_help, _example(layout), layout.notes),
        short_help=spec.summary,
    )


def merged_command(
    merged: MergedCommand, short: OperationSpec, long: OperationSpec, runner: Runner
) -> click.Command:
    """One command for two operations: ``long`` when the last positional is given."""
    layout = Layout(merged.command, merged.positionals)
    long_parameters = {p.name: p for p in long.parameters}
    last = merged.positionals[-1]
    params: list[click.Parameter] = []
    for name in merged.positionals:
        metavar = _metavar(name) if name != last else f"[{_metavar(name)}]"
        params.append(_argument(name, metavar, required=name != last))

    def callback(**values: Any) -> int:
        spec = long if values.get(_dest(last)) is not None else short

        def build() -> dict[str, Any]:
            names = [p.name for p in spec.parameters]
            return {n: values[_dest(n)] for n in names if values.get(_dest(n)) is not None}

        return runner(resolve_globals(values), OperationCall(spec.name, spec, build))

    arguments_help = [
        (_metavar(n), ("Optional. " if n == last else "") + long_parameters[n].description)
        for n in layout.positionals
    ]
    summary = f"{short.summary} With {_metavar(last)}: {long.summary[0].lower()}{long.summary[1:]}"
    return click.Command(
        merged.command,
        params=[*params, *global_options(hidden=True)],
        callback=callback,
        help=_help(summary, arguments_help, merged.example, ""),
        short_help=f"{short.summary.rstrip('.')} (or one contract).",
    )
