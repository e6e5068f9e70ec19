"""The ``templiqx`` command group: sections in ``--help``, plugins, suggestions, ``help``.

* ``templiqx --help`` lists the commands in sections (packages, contracts, execution, evals,
  artifacts, trust), the global options once, and the installed runtimes.
* A command name the CLI does not know is looked up in the ``templiqx.cli_plugins`` entry-point
  group (a callable ``main(argv) -> int`` receiving the remaining arguments verbatim); plugins
  are listed in their own section, described by their distribution's summary.
* A mistyped command name gets a "did you mean" suggestion.
* ``templiqx help [COMMAND]`` shows the group's or a command's help (a plugin's own);
  ``--json`` prints it as data.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click
import click.formatting

from templiqx_cli.composition import runtime_names
from templiqx_cli.entry_points import Found, group_entries
from templiqx_cli.layout import SECTIONS

__all__ = ["PLUGIN_GROUP", "TempliqxGroup", "command_info", "help_command", "help_data"]

PLUGIN_GROUP = "templiqx.cli_plugins"


def entry_points(*, group: str) -> list[Found]:
    """The entry points of ``group``, read by :mod:`templiqx_cli.entry_points` (which needs
    no ``importlib.metadata``: its imports, ``email``, ``zipfile``, ..., cost more than the rest of
    ``--help``'s start-up), or by :func:`importlib.metadata.entry_points` when a distribution
    is zipped."""
    found = group_entries(group)
    if found is not None:
        return found
    from importlib.metadata import entry_points as scan

    listed: list[Found] = []
    for entry in scan(group=group):
        dist = getattr(entry, "dist", None)
        summary = dist.metadata.get("Summary") if dist is not None else None
        text = str(summary) if summary else None
        listed.append(Found(entry.name, entry.value, group, None, text))
    return listed


def _plugin_summary(entry: Found) -> str:
    """What the plugin is: its distribution's one-line summary (no import needed)."""
    describe = getattr(entry, "summary", None)
    summary = describe() if callable(describe) else None
    if summary:
        return str(summary).rstrip(".") + " (see its --help)."
    return f"The '{entry.name}' command of {entry.value.split(':')[0]} (see its --help)."


def _plugin_command(entry: Found) -> click.Command:
    def callback() -> int:
        plugin: Callable[[list[str] | None], int] = entry.load()
        return int(plugin(list(click.get_current_context().args)))

    summary = _plugin_summary(entry)
    return click.Command(
        entry.name,
        callback=callback,
        help=f"{summary}\n\nProvided by {entry.value}; its own --help lists its options.",
        short_help=summary,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


def help_width(max_width: int | None) -> int:
    """The width click's help formatter would choose, without importing ``shutil`` for it
    (issue #33: with ``bz2`` and ``lzma`` behind it, that import was a tenth of ``--help``'s
    time above its floor). Same rule: a positive ``COLUMNS``, else the size of the terminal
    on ``sys.__stdout__``, else 80 columns; then ``max(min(columns, max_width) - 2, 50)``, and
    click's ``FORCED_WIDTH`` (set by its test runner) wins over all of it."""
    forced = click.formatting.FORCED_WIDTH
    if forced is not None:
        return forced
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return max(min(columns, max_width or 80) - 2, 50)


class TempliqxGroup(click.Group):
    """The ``templiqx`` group: its own commands by section, then the installed plugins."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The group's context, its help width set the way click sets it (see
        :func:`help_width`); every command's context inherits it."""
        settings = self.context_settings
        if (
            parent is None
            and extra.get("terminal_width") is None
            and settings.get("terminal_width") is None
        ):
            width = extra.get("max_content_width") or settings.get("max_content_width")
            extra["terminal_width"] = help_width(width)
        return super().make_context(info_name, args, parent=parent, **extra)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections: dict[str, str] = {}
        """Command name -> section key (a key of :data:`templiqx_cli.layout.SECTIONS`)."""
        self._plugins: list[Found] | None = None

    def plugins(self) -> list[Found]:
        """The installed plugins, read once per group (each scan reads every distribution)."""
        if self._plugins is None:
            self._plugins = entry_points(group=PLUGIN_GROUP)
        return self._plugins

    def add_to_section(self, command: click.Command, section: str) -> None:
        """Add ``command``, listed under ``section`` in ``--help``."""
        self.add_command(command)
        self.sections[str(command.name)] = section

    def list_commands(self, ctx: click.Context) -> list[str]:
        own = list(self.commands)
        plugins = sorted({entry.name for entry in self.plugins()})
        return own + [name for name in plugins if name not in self.commands]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        known = self.commands.get(cmd_name)
        if known is not None:
            return known
        found = [entry for entry in self.plugins() if entry.name == cmd_name]
        return _plugin_command(found[0]) if found else None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            if close:
                options = " or ".join(repr(option) for option in close)
                ctx.fail(f"No such command {name!r}. Did you mean {options}?")
        return super().resolve_command(ctx, args)

    def section_of(self, name: str) -> str:
        """The section key ``templiqx --help`` lists ``name`` under."""
        if name in self.sections:
            return self.sections[name]
        return "plugins" if name not in self.commands else "other"

    def sectioned(self, ctx: click.Context) -> list[tuple[str, list[tuple[str, click.Command]]]]:
        """The listed commands by section, in :data:`SECTIONS` order: (title, [(name, cmd)])."""
        grouped: dict[str, list[tuple[str, click.Command]]] = {key: [] for key in SECTIONS}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                grouped.setdefault(self.section_of(name), []).append((name, command))
        return [(SECTIONS.get(key, key), rows) for key, rows in grouped.items() if rows]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """One titled list per section, all aligned on the same column."""
        sections = self.sectioned(ctx)
        names = max(len(name) for _, rows in sections for name, _ in rows)
        limit = formatter.width - 6 - names
        for title, rows in sections:
            with formatter.section(title):
                formatter.write_dl(
                    [(name.ljust(names), cmd.get_short_help_str(limit)) for name, cmd in rows]
                )

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        runtimes = ", ".join(runtime_names()) or "none"
        formatter.write_paragraph()
        formatter.write_text(
            f"Installed runtimes (--runtime, entry-point group templiqx.runtimes): {runtimes}."
        )
        formatter.write_paragraph()
        formatter.write_text(
            "templiqx help COMMAND (or templiqx COMMAND --help) describes a command. Shell "
            "completion: see docs/reference/cli.md."
        )


def _parameter_info(parameter: click.Parameter, ctx: click.Context) -> dict[str, Any]:
    """One argument or option of a command, as data."""
    info: dict[str, Any] = {"name": parameter.human_readable_name, "required": parameter.required}
    if isinstance(parameter, click.Option):
        info["name"] = max(parameter.opts, key=len)
        info["flags"] = [*parameter.opts, *parameter.secondary_opts]
        info["help"] = parameter.help or ""
        info["takes_value"] = not parameter.is_flag
        info["repeatable"] = parameter.multiple
        if parameter.metavar:
            info["metavar"] = parameter.metavar
        default = parameter.default if not callable(parameter.default) else None
        if isinstance(default, (str, int, float, bool)) and not parameter.is_flag:
            info["default"] = default
    else:
        info["metavar"] = parameter.make_metavar(ctx)
        info["name"] = info["metavar"].strip("[]").removesuffix("...")
    return info


def command_info(
    group: TempliqxGroup, parent: click.Context, name: str, command: click.Command
) -> dict[str, Any]:
    """What ``templiqx help --json`` says about one command."""
    info: dict[str, Any] = {
        "name": name,
        "section": SECTIONS.get(group.section_of(name), group.section_of(name)),
        "summary": command.get_short_help_str(1000),
    }
    if name not in group.commands:  # a plugin: it describes itself (``templiqx NAME --help``)
        info["plugin"] = True
        return info
    with click.Context(command, info_name=name, parent=parent) as ctx:
        info["usage"] = " ".join(command.collect_usage_pieces(ctx))
        info["usage"] = f"templiqx {name} {info['usage']}".rstrip()
        visible = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
        info["arguments"] = [
            _parameter_info(p, ctx) for p in visible if isinstance(p, click.Argument)
        ]
        info["options"] = [_parameter_info(p, ctx) for p in visible if isinstance(p, click.Option)]
        info["help"] = (command.help or "").replace("\b\n", "")
    return info


def help_data(group: TempliqxGroup, parent: click.Context, command: str | None) -> dict[str, Any]:
    """``templiqx help --json``: the program and every command (or one command) as data."""
    if command is not None:
        found = group.get_command(parent, command)
        assert found is not None
        return command_info(group, parent, command, found)
    options = [
        _parameter_info(p, parent)
        for p in group.get_params(parent)
        if isinstance(p, click.Option) and not p.hidden
    ]
    commands = [
        command_info(group, parent, name, found)
        for _, rows in group.sectioned(parent)
        for name, found in rows
    ]
    return {
        "program": "templiqx",
        "usage": "templiqx [OPTIONS] COMMAND [ARGS]...",
        "options": options,
        "runtimes": runtime_names(),
        "commands": commands,
    }


def help_command() -> click.Command:
    """``templiqx help [COMMAND]``: the group's help, or one command's (a plugin's own); with
    ``--json``, the same as JSON data."""

    def callback(command: str | None, as_json: bool) -> int:
        ctx = click.get_current_context()
        parent = ctx.parent if ctx.parent is not None else ctx
        group = parent.command
        as_json = as_json or bool(parent.params.get("as_json"))
        if command is not None and isinstance(group, click.Group):
            found = group.get_command(parent, command)
            if found is None:
                group.resolve_command(parent, [command])  # fails with a suggestion if it can
                ctx.fail(f"No such command {command!r}.")
        if as_json and isinstance(group, TempliqxGroup):
            import json

            click.echo(json.dumps(help_data(group, parent, command), ensure_ascii=False))
            return 0
        if command is None or not isinstance(group, click.Group):
            click.echo(group.get_help(parent))
            return 0
        found = group.get_command(parent, command)
        assert found is not None
        if command not in group.commands:  # a plugin: it prints its own help
            return int(
                found.main(["--help"], prog_name=f"templiqx {command}", standalone_mode=False)
            )
        with click.Context(found, info_name=command, parent=parent) as sub:
            click.echo(found.get_help(sub))
        return 0

    return click.Command(
        "help",
        params=[
            click.Argument(["command"], metavar="[COMMAND]", required=False),
            click.Option(  # the global --json, accepted after `help` like after any command
                ["--json", "as_json"], is_flag=True, default=False, hidden=True
            ),
        ],
        callback=callback,
        help="Show the help of templiqx, or of one COMMAND; with --json, as JSON data (every "
        "command with its usage, arguments and options), for tools.\n\n\b\nArguments:\n"
        "  COMMAND  Optional. The command to describe (a plugin describes itself).\n\n"
        "\b\nExamples:\n  templiqx help\n  templiqx help validate\n  templiqx help --json",
        short_help="Show the help of templiqx or of one command.",
    )
