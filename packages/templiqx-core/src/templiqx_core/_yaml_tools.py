"""Readers for a contract's tool declarations (direct positions of the contract).

``tools`` is a list of ``{name, description, arguments}``; ``tool_choice`` is a word (``auto``,
``required``, ``none``: checked by validation, so any scalar's text is read) or ``{tool: NAME}``;
``parallel_tool_calls`` is a boolean. Absent, each is unset, so the contract's fingerprint does
not change.
"""

from __future__ import annotations

from typing import Any, Final

from msgspec import UNSET

from templiqx_contracts import NamedToolChoice, ToolSpec
from templiqx_core._yaml_decode import (
    Field,
    StructSpec,
    boolean,
    json_value,
    list_of,
    read_struct,
    string,
    struct,
)
from templiqx_core._yaml_tree import Mapping, Node

__all__ = ["TOOL_FIELDS"]

_TOOL: Final = StructSpec(
    "a tool",
    ToolSpec,
    (Field("name", string), Field("description", string), Field("arguments", json_value)),
)

_NAMED_CHOICE: Final = StructSpec("a named tool choice", NamedToolChoice, (Field("tool", string),))


def _read_tool_choice(node: Node, path: str, buffered: bool) -> Any:
    if isinstance(node, Mapping):
        return read_struct(node, path, buffered, _NAMED_CHOICE)
    return string(node, path, buffered)


def _unset() -> Any:
    return UNSET


TOOL_FIELDS: Final = (
    Field("tools", list_of(struct(_TOOL), "tools"), _unset),
    Field("tool_choice", _read_tool_choice, _unset),
    Field("parallel_tool_calls", boolean, _unset),
)
"""The contract's tool fields, in the order they are listed in messages."""
