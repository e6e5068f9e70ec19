"""The strict Templiqx YAML reader.

It reads YAML the way the reference implementation does (``core.md`` §1.1): libyaml's event
stream without YAML 1.1 resolvers, YAML 1.2 core-schema typing of plain scalars, integer/float
identity, raw-text keys for free JSON maps, "direct" versus "buffered" string positions, strict
rejection of unknown fields — and, deliberately stricter than the reference, duplicate keys are
errors everywhere. Limits (size, depth, aliases) are in :mod:`templiqx_core.limits`.

:func:`read_yaml` gives a raw node tree; :func:`read_json` reads a free JSON value from YAML.
The typed readers of contracts and packages live in :mod:`templiqx_core.parse`.
"""

from __future__ import annotations

from typing import Any

from templiqx_core._yaml_decode import json_value
from templiqx_core._yaml_tree import Mapping, Node, Scalar, Sequence, YamlError, read_document

__all__ = [
    "Mapping",
    "Node",
    "Scalar",
    "Sequence",
    "YamlError",
    "read_json",
    "read_yaml",
]


def read_yaml(source: str | bytes) -> Node:
    """Read exactly one YAML document into raw nodes; raises :class:`YamlError`."""
    return read_document(source)


def read_json(source: str | bytes) -> Any:
    """Read one YAML document as a free JSON value; raises :class:`YamlError`."""
    return json_value(read_document(source), "", False)
