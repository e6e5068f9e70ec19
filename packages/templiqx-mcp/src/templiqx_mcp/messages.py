"""What one line from the client is: a message for the SDK, a batch, or a refusal to answer.

The SDK's own reader (``jsonrpc_message_adapter.validate_json``) accepts exactly the messages
MCP defines, nested at most about 200 levels. What it refuses is read again here, so that every
line gets the reply JSON-RPC 2.0 prescribes, carrying the request's ``id`` whenever it can be
read:

* a message nested deeper than the SDK reads is read here (the service then holds arguments
  to :data:`~templiqx_application.MAX_ARGUMENT_DEPTH` levels and says so with the request's
  ``id``); one too deep to read at all (about 1000 levels) is refused (-32600) naming that
  limit, with its ``id`` when the line's first bytes or its last member show it;
* text that is not JSON is the parse error -32700 (``id: null``: the id cannot be read);
* a message holding an integer of more than :data:`MAX_INTEGER_DIGITS` digits is -32600 with
  its ``id`` (issue #29: it used to be a parse error with ``id: null``);
* a JSON value that is not an object (``null``, ``42``, ``"x"``) and an empty batch (``[]``)
  are -32600 with ``id: null``; an object that is not an MCP message is -32600 with its ``id``
  when it has a usable one, saying what is wrong with it;
* a non-empty array is a :class:`Batch`: each element is read as one line would be, and the
  transport answers the batch with one array (:mod:`templiqx_mcp.wire`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from templiqx_application import MAX_ARGUMENT_DEPTH

__all__ = [
    "HEAD_BYTES",
    "INVALID_REQUEST",
    "MAX_INTEGER_DIGITS",
    "PARSE_ERROR",
    "Batch",
    "Refusal",
    "head_id",
    "read_element",
    "read_refused",
    "tail_id",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600

HEAD_BYTES: Final = 4096
"""How much of a refused line is searched for its request id from the start."""

_TAIL_CHARACTERS: Final = 512

_ID: Final = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.){0,200}")')
_TAIL_ID: Final = re.compile(
    r'[,{]\s*"id"\s*:\s*(-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.){0,200}")\s*}\s*$'
)


@dataclass(frozen=True)
class Refusal:
    """A line answered with a JSON-RPC error: code, message, the request's id (``None``: it
    could not be read) and a note for the server's log."""

    code: int
    message: str
    request_id: str | int | None
    note: str


@dataclass(frozen=True)
class Batch:
    """A JSON-RPC batch: the array's elements, each to be read like one line."""

    elements: list[Any]


def head_id(head: bytes) -> str | int | None:
    """The top-level ``id`` of a JSON object whose first bytes are ``head``, when it is there.

    Only members of the outermost object count: the scan skips strings and tracks nesting, so
    an ``"id"`` inside ``params`` is never taken for the request's.
    """
    depth = 0
    index = 0
    in_string = False
    while index < len(head):
        char = head[index]
        if in_string:
            if char == 0x5C:  # backslash
                index += 1
            elif char == 0x22:
                in_string = False
        elif char == 0x22:  # a string starts: a key of the outer object?
            if depth == 1:
                match = _ID.match(head, index)
                if match is not None:
                    return _id_value(match.group(1))
            in_string = True
        elif char in b"{[":
            depth += 1
        elif char in b"}]":
            depth -= 1
        index += 1
    return None


def tail_id(line: str) -> str | int | None:
    """The ``id`` of a JSON object whose last member is ``"id"`` (``..., "id": 7}``)."""
    match = _TAIL_ID.search(line[-_TAIL_CHARACTERS:].rstrip())
    return _id_value(match.group(1).encode("utf-8")) if match is not None else None


def _id_value(raw: bytes) -> str | int | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _usable_id(value: dict[Any, Any]) -> str | int | None:
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, (str, int)):
        return None
    return found


def _what(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _problem(value: dict[Any, Any]) -> str:
    """Why an object is not an MCP message, in a few words."""
    if value.get("jsonrpc") != "2.0":
        return 'the member "jsonrpc" must be "2.0"'
    if "id" in value and _usable_id(value) is None:
        return 'the member "id" must be a string or an integer'
    if "method" in value:
        if not isinstance(value["method"], str):
            return 'the member "method" must be a string'
        if "params" in value and not isinstance(value["params"], dict):
            return 'the member "params" must be an object'
        return "not a request or notification MCP defines"
    if "result" in value or "error" in value:
        if "id" not in value:
            return 'a response needs the "id" of its request'
        return "not a response MCP defines"
    return 'a request needs "method" (and "id"); a response needs "result" or "error"'


def _too_deep(request_id: str | int | None) -> Refusal:
    return Refusal(
        INVALID_REQUEST,
        "Invalid Request: the message is nested too deeply to read (about 1000 levels); "
        f"arguments may nest at most {MAX_ARGUMENT_DEPTH} levels (MAX_ARGUMENT_DEPTH): "
        "flatten them",
        request_id,
        "nested too deeply to read",
    )


def read_element(value: Any) -> Any:
    """One decoded message (a line's value or a batch element): the SDK's message type, or a
    :class:`Refusal`."""
    import mcp.types as types

    if not isinstance(value, dict):
        what = _what(value)
        return Refusal(
            INVALID_REQUEST,
            f"Invalid Request: a JSON-RPC message is an object, not {what}",
            None,
            f"invalid request ({what})",
        )
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except Exception:  # the SDK's validation error: not a message MCP defines
        message = None
    if message is not None and not (
        # the SDK reads a request whose id is unusable (true, 1.5) as a notification
        isinstance(message, types.JSONRPCNotification) and "id" in value
    ):
        return message
    problem = _problem(value)
    return Refusal(INVALID_REQUEST, f"Invalid Request: {problem}", _usable_id(value), problem)


MAX_INTEGER_DIGITS: Final = 4300
"""The most digits an integer in a message may have (the interpreter's own conversion limit)."""


class _HugeIntegers:
    """``parse_int`` for :func:`json.loads` that notes integers of more than
    :data:`MAX_INTEGER_DIGITS` digits (read as ``None``) instead of failing on them, so that the
    line's ``id`` is still read."""

    def __init__(self) -> None:
        self.found = 0

    def __call__(self, text: str) -> int | None:
        if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
            self.found += 1
            return None
        return int(text)


def _huge_integer(value: Any) -> Refusal:
    """A message holding an integer too long to read: refused, with its ``id`` when usable."""
    request_id = _usable_id(value) if isinstance(value, dict) else None
    return Refusal(
        INVALID_REQUEST,
        f"Invalid Request: the message holds an integer of more than {MAX_INTEGER_DIGITS} "
        "digits, out of range for any argument; send it as a string",
        request_id,
        "an integer out of range",
    )


def _strict_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_refused(line: str) -> Any:
    """What a line the SDK's reader refused is: a message after all, a :class:`Batch`, or a
    :class:`Refusal` (see the module docstring)."""
    huge = _HugeIntegers()
    try:
        value = msgspec.json.decode(line)
    except RecursionError:
        request_id = head_id(line[:HEAD_BYTES].encode("utf-8", "replace"))
        if request_id is None:
            request_id = tail_id(line)
        return _too_deep(request_id)
    except (msgspec.DecodeError, ValueError, OverflowError):
        try:  # what msgspec cannot hold (a number out of its range) may still be JSON
            value = json.loads(line, parse_constant=_strict_constant, parse_int=huge)
        except json.JSONDecodeError as bad:
            where = f"line {bad.lineno} column {bad.colno}: {bad.msg}"
            return Refusal(
                PARSE_ERROR, f"Parse error: not JSON ({where})", None, f"not JSON ({where})"
            )
        except (ValueError, RecursionError) as bad:
            where = str(bad) if isinstance(bad, ValueError) else "nested too deeply to read"
            return Refusal(
                PARSE_ERROR, f"Parse error: not JSON ({where})", None, f"not JSON ({where})"
            )
    if huge.found:
        return _huge_integer(value)
    if isinstance(value, list):
        if not value:
            return Refusal(
                INVALID_REQUEST,
                "Invalid Request: an empty batch; a batch is an array of one or more messages",
                None,
                "an empty batch",
            )
        return Batch(value)
    return read_element(value)
