"""Shell completion of package and contract names (click's completion, see the CLI reference).

Enable it with ``eval "$(_TEMPLIQX_COMPLETE=bash_source templiqx)"`` (``zsh_source``,
``fish_source``). Command names and options complete through click; these functions add the
package folders under the packages root (``--root``, default ``.``) and a package's contract ids.
Completion only lists folders: it never composes the service or creates anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # imported when completing, not at start-up (`--help` imports this module)
    from pathlib import Path

    from click.shell_completion import CompletionItem

__all__ = ["complete_contracts", "complete_packages"]

# A contract argument's package argument (the click parameter names of templiqx_cli.commands).
_PACKAGE_OF = {
    "arg_contract": "arg_package",
    "arg_left_contract": "arg_left_package",
    "arg_right_contract": "arg_right_package",
}


def _root(ctx: click.Context) -> Path:
    from pathlib import Path

    given = ctx.params.get("root") or (ctx.parent.params.get("root") if ctx.parent else None)
    return Path(str(given or "."))


def complete_packages(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The package folders (those holding ``templiqx.yaml``) whose names start with the input."""
    from click.shell_completion import CompletionItem

    try:
        folders = sorted(p.parent.name for p in _root(ctx).glob("*/templiqx.yaml"))
    except OSError:
        return []
    return [CompletionItem(name) for name in folders if name.startswith(incomplete)]


def complete_contracts(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The contract ids of the package named before this argument."""
    from click.shell_completion import CompletionItem

    package = ctx.params.get(_PACKAGE_OF.get(param.name or "", ""))
    if not isinstance(package, str):
        return []
    try:
        ids = sorted(p.stem for p in (_root(ctx) / package / "contracts").glob("*.yaml"))
    except OSError:
        return []
    return [CompletionItem(name) for name in ids if name.startswith(incomplete)]
