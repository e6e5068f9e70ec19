"""Reading the host files a command names (``--values``, ``--fixture-output``, ``put SOURCE``).

Files are read after the service is composed, as paths relative to the working directory; ``-``
reads standard input. Every read is bounded: a regular file larger than its limit is refused
from its size, unread, and anything else (a pipe, a FIFO, ``/dev/zero``, standard input) is read
in chunks and refused as soon as it passes the limit, so no input costs more than its limit in
memory. A failure raises :class:`CliError`, which the CLI prints as ``templiqx: <cause>`` (with
``[TQX_*]`` when the failure has a stable code, and a ``help:`` line when there is a fix to
suggest) and turns into exit code 1.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any, BinaryIO, Final

from templiqx_application import MAX_ARGUMENT_BYTES, MAX_ARGUMENT_NODES
from templiqx_contracts import JSONDecodeError, decode_json, json_node_estimate

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_SOURCE_BYTES",
    "MAX_VALUES_BYTES",
    "STDIN",
    "CliError",
    "absolute_workspace",
    "read_json",
    "read_text",
    "read_values",
]

DATA_INVALID = "TQX_DATA_INVALID"

STDIN: Final = "-"
"""The file name that means standard input."""

MAX_SOURCE_BYTES: Final = 8 * 1024 * 1024
"""Largest contract source (``put SOURCE``): the YAML reader's ``MAX_DOCUMENT_BYTES``, 8 MiB."""

MAX_JSON_BYTES: Final = MAX_ARGUMENT_BYTES
"""Largest JSON file given as one argument (``--fixture-output``): ``MAX_ARGUMENT_BYTES``."""

MAX_VALUES_BYTES: Final = 2 * MAX_ARGUMENT_BYTES
"""Largest ``--values`` file: two arguments (``inputs`` and ``context``) of 8 MiB each."""

_CHUNK: Final = 1 << 20


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


def _too_large(path: str, what: str, limit: int, name: str) -> CliError:
    """One line: what is too large, the limit and its name, and the fix."""
    return CliError(
        f"read {path}: {what} than the {limit}-byte limit ({name}); pass a smaller file",
        code=DATA_INVALID,
    )


def _read_capped(handle: BinaryIO, path: str, limit: int, name: str) -> bytes:
    """Everything ``handle`` holds, refused once it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = handle.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(path, "the input holds more", limit, name)


def _read_bytes(path: str, limit: int, name: str) -> bytes:
    if path == STDIN:
        stdin = sys.stdin
        if stdin is None:
            raise CliError("read standard input: it is closed")
        try:
            return _read_capped(stdin.buffer, "standard input", limit, name)
        except OSError as exc:
            raise _os_error("standard input", exc) from exc
    try:
        with open(path, "rb", buffering=0) as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise _too_large(path, f"the file is {info.st_size} bytes, more", limit, name)
            return _read_capped(handle, path, limit, name)
    except OSError as exc:
        raise _os_error(path, exc) from exc


def _os_error(path: str, exc: OSError) -> CliError:
    reason = exc.strerror or type(exc).__name__
    return CliError(f"read {path}: {reason} (os error {exc.errno})")


def read_text(path: str) -> str:
    """A UTF-8 contract source, at most :data:`MAX_SOURCE_BYTES` (``-``: standard input)."""
    data = _read_bytes(path, MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")
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
    except (RecursionError, ValueError):  # too deep, or an integer past the digit limit
        pass
    return str(exc)


def read_json(
    path: str,
    *,
    limit: int = MAX_JSON_BYTES,
    name: str = "MAX_JSON_BYTES",
    max_nodes: int = MAX_ARGUMENT_NODES,
    nodes_name: str = "MAX_ARGUMENT_NODES",
) -> Any:
    """One JSON document, keeping integer/float identity and refusing NaN and infinities.

    At most ``limit`` bytes (:data:`MAX_JSON_BYTES` unless given) and ``max_nodes`` values and
    keys, counted before decoding (``MAX_ARGUMENT_NODES`` unless given); ``-`` is standard
    input.
    """
    data = _read_bytes(path, limit, name)
    count = json_node_estimate(data, max_nodes)
    if count > max_nodes:  # refused before decoding: a value per node is what costs memory
        raise CliError(
            f"decode JSON from {path}: the document holds about {count} values and keys, more "
            f"than the {max_nodes} allowed ({nodes_name}); pass fewer, larger values",
            code=DATA_INVALID,
        )
    try:
        return decode_json(data)
    except JSONDecodeError as exc:
        problem = _json_problem(data, exc)
        raise CliError(f"decode JSON from {path}: {problem}", code=DATA_INVALID) from exc


def read_values(path: str) -> dict[str, Any]:
    """A ``--values`` file: ``{"inputs": {…}, "context": {…}}``, both keys optional.

    Returns the service arguments it stands for (``inputs`` / ``context`` when present).
    """
    document = read_json(
        path,
        limit=MAX_VALUES_BYTES,
        name="MAX_VALUES_BYTES",
        max_nodes=2 * MAX_ARGUMENT_NODES + 3,  # inputs and context, each an argument
        nodes_name="MAX_ARGUMENT_NODES for each of inputs and context",
    )
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
