"""Transports by name: the wires the kit ships, and wires registered by other distributions.

The kit ships three: ``openai`` (chat completions, data-only SSE), ``anthropic-messages``
(named-event SSE) and ``ollama`` (NDJSON). A distribution that ships an adapter for another
provider can register its :class:`~templiqx_conformance.wires.Wire` under the entry-point group
``templiqx.conformance.wires``::

    [project.entry-points."templiqx.conformance.wires"]
    acme-chat = "acme_chat_kit:ChatWire"

after which ``templiqx-conformance run pkg.mod:make --transport acme-chat`` finds it. A
reference ``package.module:attribute`` works too, without registering anything.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Final

from templiqx_conformance.errors import TargetError
from templiqx_conformance.references import load_object
from templiqx_conformance.wires.messages import MessagesWire
from templiqx_conformance.wires.ollama import OllamaWire
from templiqx_conformance.wires.openai import OpenAIWire
from templiqx_conformance.wires.wire import Wire

__all__ = ["TRANSPORTS", "WIRE_ENTRY_POINTS", "as_wire", "resolve_wire", "transport_names"]

WIRE_ENTRY_POINTS: Final = "templiqx.conformance.wires"
"""Entry-point group naming wires: ``name = "package.module:MyWire"`` (a class, an instance or
a zero-argument factory). ``templiqx-conformance run ... --transport name`` then finds it."""

_BUILT_IN: Final[dict[str, Callable[[], Wire]]] = {
    "openai": OpenAIWire,
    "anthropic-messages": MessagesWire,
    "ollama": OllamaWire,
}

TRANSPORTS: Final = tuple(_BUILT_IN)
"""The transports built into the kit. More are registered under :data:`WIRE_ENTRY_POINTS` or
passed as a :class:`~templiqx_conformance.wires.Wire`; :func:`transport_names` lists all."""


def _registered() -> dict[str, Any]:
    return {point.name: point for point in entry_points(group=WIRE_ENTRY_POINTS)}


def transport_names() -> list[str]:
    """Every transport name the kit can resolve: built in, then registered (sorted)."""
    return [*_BUILT_IN, *sorted(set(_registered()) - set(_BUILT_IN))]


def as_wire(value: Any, source: str) -> Wire:
    """``value`` as a :class:`Wire`: an instance, or a class / factory that makes one."""
    if isinstance(value, Wire):
        return value
    if callable(value):
        try:
            made = value()
        except Exception as exc:
            raise TargetError(f"{source} could not make a Wire: {exc}") from exc
        if isinstance(made, Wire):
            return made
        value = made
    raise TargetError(
        f"{source} must be a templiqx_conformance.Wire (an instance, a subclass, or a factory "
        f"returning one), got {type(value).__name__}"
    )


def resolve_wire(transport: str | Wire) -> Wire:
    """The :class:`Wire` for a transport name, a ``package.module:attribute`` or a wire."""
    if isinstance(transport, Wire):
        return transport
    if not isinstance(transport, str):
        raise TargetError(
            f"transport must be a name, a package.module:attribute reference or a Wire, "
            f"got {type(transport).__name__}"
        )
    if transport in _BUILT_IN:
        return _BUILT_IN[transport]()
    if ":" in transport:
        return as_wire(load_object(transport), transport)
    registered = _registered()
    if transport in registered:
        try:
            loaded = registered[transport].load()
        except Exception as exc:
            raise TargetError(f"transport {transport!r} could not be loaded: {exc}") from exc
        return as_wire(loaded, f"the entry point {transport!r} of {WIRE_ENTRY_POINTS}")
    raise TargetError(
        f"unknown transport {transport!r}: the kit knows {', '.join(transport_names())}; "
        f"pass a Wire, a package.module:Wire reference, or register one under the "
        f"entry-point group {WIRE_ENTRY_POINTS}"
    )
