"""Human output: each operation's envelope rendered for people (what the CLI prints without
``--json``).

A registry maps each operation to its :class:`Renderer`; an operation without one (a new catalog
entry, say) is shown with the generic renderer, whose body is the result as indented JSON.
``--json`` never comes here: it prints the envelope itself, byte for byte.

Register your own with :func:`register` (or replace one): a renderer is a :class:`Renderer`
subclass overriding the steps it needs (``summary``, ``body``, …; see
:mod:`templiqx_cli.human.base`).
"""

from __future__ import annotations

from templiqx_cli.human import artifacts, contracts, evals, execution, packages, trust
from templiqx_cli.human.base import Renderer, View, command_of
from templiqx_cli.human.style import Style, style_for

__all__ = [
    "RENDERERS",
    "Renderer",
    "Style",
    "View",
    "command_of",
    "register",
    "render",
    "renderer_for",
    "style_for",
]

RENDERERS: dict[str, Renderer] = {
    **packages.RENDERERS,
    **contracts.RENDERERS,
    **execution.RENDERERS,
    **evals.RENDERERS,
    **artifacts.RENDERERS,
    **trust.RENDERERS,
}
"""Operation name -> its renderer."""

_GENERIC = Renderer()


def register(operation: str, renderer: Renderer) -> None:
    """Render ``operation``'s envelopes with ``renderer`` from now on."""
    RENDERERS[operation] = renderer


def renderer_for(operation: str) -> Renderer:
    """The operation's renderer, or the generic one (the result as indented JSON)."""
    return RENDERERS.get(operation, _GENERIC)


def render(view: View) -> str:
    """The whole human rendering of ``view``, one string ending in a newline."""
    return "\n".join(renderer_for(view.operation).render(view)) + "\n"
