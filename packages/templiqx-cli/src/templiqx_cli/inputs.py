"""Reading the host files a command names (``--values``, ``--fixture-output``, ``put SOURCE``).

Files are read after the service is composed, as plain paths relative to the working directory
(``-`` is an ordinary file name; nothing reads stdin). A failure raises :class:`CliError`, which
the CLI prints as ``templiqx: <cause>`` and turns into exit code 1.
"""

from __future__ import annotations

import os
from typing import Any

from templiqx_contracts import JSONDecodeError, decode_json

__all__ = ["CliError", "absolute_workspace", "read_json", "read_text", "read_values"]


class CliError(Exception):
    """An I/O or decode failure outside any operation (exit code 1)."""


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise CliError(f"read {path}: {reason} (os error {exc.errno})") from exc


def read_text(path: str) -> str:
    """A UTF-8 text file."""
    data = _read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"read {path}: file is not valid UTF-8 ({exc.reason})") from exc


def read_json(path: str) -> Any:
    """One JSON document, keeping integer/float identity and refusing NaN and infinities."""
    data = _read_bytes(path)
    try:
        return decode_json(data)
    except JSONDecodeError as exc:
        raise CliError(f"decode JSON from {path}: {exc}") from exc


def read_values(path: str) -> dict[str, Any]:
    """A ``--values`` file: ``{"inputs": {…}, "context": {…}}``, both keys optional.

    Returns the service arguments it stands for (``inputs`` / ``context`` when present).
    """
    document = read_json(path)
    where = f"decode render request from {path}"
    if not isinstance(document, dict):
        raise CliError(f'{where}: expected a JSON object {{"inputs": {{…}}, "context": {{…}}}}')
    unknown = sorted(key for key in document if key not in ("inputs", "context"))
    if unknown:
        raise CliError(f"{where}: unknown field `{unknown[0]}`, expected `inputs` or `context`")
    arguments: dict[str, Any] = {}
    for key in ("inputs", "context"):
        if key in document:
            if not isinstance(document[key], dict):
                raise CliError(f"{where}: `{key}` must be a JSON object")
            arguments[key] = document[key]
    return arguments


def absolute_workspace(path: str) -> str:
    """A ``--workspace`` value made absolute against the working directory, not normalised.

    ``..`` components stay in place, so the service can refuse them with ``TQX_PATH_INVALID``.
    """
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
