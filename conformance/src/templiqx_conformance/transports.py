"""Transports by name: the built-in ``openai`` wire and wires registered by other distributions.

A distribution that ships an adapter for another provider can register its
:class:`~templiqx_conformance.wire.Wire` under the entry-point group
``templiqx.conformance.wires``::

    [project.entry-points."templiqx.conformance.wires"]
    acme-messages = "acme_messages_kit:MessagesWire"

after which ``templiqx-conformance run pkg.mod:make --transport acme-messages`` finds it. A
reference ``package.module:attribute`` works too, without registering anything.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from templiqx_conformance.openai_wire import OpenAIWire
from templiqx_conformance.target import TRANSPORTS, TargetError, load_object
from templiqx_conformance.wire import WIRE_ENTRY_POINTS, Wire

__all__ = ["as_wire", "resolve_wire", "transport_names"]

_BUILT_IN: dict[str, Callable[[], Wire]] = dict(zip(TRANSPORTS, (OpenAIWire,), strict=True))


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
