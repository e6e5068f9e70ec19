"""Reading the host files a command names (``--values``, ``--fixture-output``, ``put SOURCE``).

Files are read after the service is composed, as plain paths relative to the working directory
(``-`` is an ordinary file name; nothing reads stdin). A failure raises :class:`CliError`, which
the CLI prints as ``templiqx: <cause>`` (with ``[TQX_*]`` when the failure has a stable code,
and a ``help:`` line when there is a fix to suggest) and turns into exit code 1.
"""

from __future__ import annotations

import json
import os
from typing import Any

from templiqx_contracts import JSONDecodeError, decode_json

__all__ = ["CliError", "absolute_workspace", "read_json", "read_text", "read_values"]

DATA_INVALID = "TQX_DATA_INVALID"


class CliError(Exception):
    """An I/O or decode failure outside any operation (exit code 1).

    ``code`` is the stable ``TQX_*`` code of the failure when it has one, ``help`` a fix.
    """

    def __init__(self, message: str, *, code: str | None = None, help: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.help = help

    def render(self) -> str:
        """What the CLI prints on stderr: ``templiqx: <cause> [CODE]`` and a help line."""
        text = f"templiqx: {self}"
        if self.code:
            text += f" [{self.code}]"
        if self.help:
            text += f"\n  help: {self.help}"
        return text


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
        line, column = _position(data, exc.start)
        raise CliError(
            f"read {path}: file is not valid UTF-8 ({exc.reason}) at line {line} column {column}",
            code=DATA_INVALID,
        ) from exc


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte ``offset``."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def _json_problem(data: bytes, exc: JSONDecodeError) -> str:
    """Why ``data`` is not a JSON document, with the line and column where that shows.

    The fast decoder reports only what went wrong (``Input data was truncated``); the
    standard library's parser is asked where, since a document it also refuses fails at the
    same place. A document only templiqx refuses (NaN, infinities, numbers out of range) keeps
    the decoder's own message, which names the value.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line, column = _position(data, bad.start)
        byte = data[bad.start]
        return f"the file is not valid UTF-8 (byte 0x{byte:02x}) at line {line} column {column}"
    try:
        json.loads(text)
    except json.JSONDecodeError as located:
        if located.pos >= len(text.rstrip()):
            what = "the document ends too early (unclosed brace, bracket or string?)"
        else:
            what = located.msg[0].lower() + located.msg[1:]
        return f"{what} at line {located.lineno} column {located.colno}"
    except RecursionError:
        pass
    return str(exc)


def read_json(path: str) -> Any:
    """One JSON document, keeping integer/float identity and refusing NaN and infinities."""
    data = _read_bytes(path)
    try:
        return decode_json(data)
    except JSONDecodeError as exc:
        problem = _json_problem(data, exc)
        raise CliError(f"decode JSON from {path}: {problem}", code=DATA_INVALID) from exc


def read_values(path: str) -> dict[str, Any]:
    """A ``--values`` file: ``{"inputs": {…}, "context": {…}}``, both keys optional.

    Returns the service arguments it stands for (``inputs`` / ``context`` when present).
    """
    document = read_json(path)
    where = f"decode render request from {path}"
    if not isinstance(document, dict):
        raise CliError(
            f'{where}: expected a JSON object {{"inputs": {{…}}, "context": {{…}}}}',
            code=DATA_INVALID,
        )
    unknown = sorted(key for key in document if key not in ("inputs", "context"))
    if unknown:
        raise CliError(
            f"{where}: unknown field `{unknown[0]}`, expected `inputs` or `context`",
            code=DATA_INVALID,
        )
    arguments: dict[str, Any] = {}
    for key in ("inputs", "context"):
        if key in document:
            if not isinstance(document[key], dict):
                raise CliError(f"{where}: `{key}` must be a JSON object", code=DATA_INVALID)
            arguments[key] = document[key]
    return arguments


def absolute_workspace(path: str) -> str:
    """A ``--workspace`` value made absolute against the working directory, not normalised.

    ``..`` components stay in place, so the service can refuse them with ``TQX_PATH_INVALID``.
    """
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
