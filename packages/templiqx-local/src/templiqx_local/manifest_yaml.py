"""Reading and writing ``templiqx.yaml`` (and reading ``templiqx.lock``).

Reading goes through the core parser; a parse failure becomes ``TQX_DATA_INVALID`` with the
file's absolute path. Writing produces YAML that reads back to an identical manifest.

The layout is block style at the top (one field per line, in the manifest's field order, empty
inventories as ``[]``/``{}``), with every scalar written so that a YAML 1.2 core-schema reader
cannot mistype it:

* strings are always double-quoted, escaping ``"``, ``\\``, control characters, C1 controls,
  the Unicode line/paragraph separators, the byte-order mark and non-characters;
* integers are plain decimal, floats use :func:`templiqx_contracts.format_float` (which always
  carries a ``.`` or an exponent, so a float never reads back as an integer), booleans are
  ``true``/``false`` and null is ``null``;
* free JSON values (tool-contract schemas) are written in flow style, i.e. as JSON;
* keys are plain when they are lowercase identifiers (other than ``null``/``true``/``false``),
  double-quoted otherwise;
* a key too long for an implicit YAML key (over ~1 KiB) is written as an explicit ``? key``.

:func:`dump_manifest` re-parses what it wrote and refuses (``TQX_DATA_INVALID``) anything that
would not read back to the same canonical JSON, so a manifest is never written that the store
could not read again.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import msgspec

from templiqx_contracts import (
    LRU,
    Diagnostic,
    PackageLock,
    PackageManifest,
    canonical_json,
    digest_key,
    format_float,
)
from templiqx_core.parse import parse_lock, parse_manifest
from templiqx_ports import InvalidDataError

__all__ = [
    "dump_manifest",
    "load_lock",
    "load_manifest",
    "render_field",
    "yaml_scalar",
    "yaml_string",
]

_PLAIN_SAFE = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII except '"' and '\'
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}
_PLAIN_KEY = re.compile(r"[a-z_][a-z0-9_]*")
_IMPLICIT_KEY_LIMIT = 1000
_FLOW_KEYS = frozenset({"schema"})


def _escape_char(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x20 or code == 0x7F or 0x80 <= code <= 0x9F:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        raise InvalidDataError("text contains a lone surrogate and is not valid Unicode")
    if code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF):
        return f"\\u{code:04x}"
    return char


def yaml_string(value: str) -> str:
    """``value`` as a YAML double-quoted scalar."""
    if _PLAIN_SAFE.fullmatch(value) is not None:
        return f'"{value}"'
    return '"' + "".join(_escape_char(char) for char in value) + '"'


def yaml_scalar(value: Any) -> str:
    """A JSON scalar (str, int, float, bool, None) as YAML text of the same type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        try:
            return format_float(value)
        except ValueError as exc:
            raise InvalidDataError(str(exc)) from exc
    if isinstance(value, str):
        return yaml_string(value)
    raise InvalidDataError(f"cannot write a value of type {type(value).__name__} as YAML")


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            key_text = yaml_string(str(key))
            prefix = "? " if len(key_text) > _IMPLICIT_KEY_LIMIT else ""
            items.append(f"{prefix}{key_text}: {_flow(item)}")
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return yaml_scalar(value)


def _key(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key) is not None and key not in ("null", "true", "false"):
        return key
    return yaml_string(key)


def _mapping(value: dict[str, Any], indent: int, lines: list[str], *, top: bool) -> None:
    pad = " " * indent
    for key, item in value.items():
        key_text = _key(str(key))
        flow = key in _FLOW_KEYS and not top
        if len(key_text) > _IMPLICIT_KEY_LIMIT:
            lines.append(f"{pad}? {key_text}")
            head = f"{pad}:"
        else:
            head = f"{pad}{key_text}:"
        if not flow and isinstance(item, (dict, list)) and item:
            lines.append(head)
            _block(item, indent + 2, lines)
        else:
            text = _flow(item) if isinstance(item, (dict, list)) else yaml_scalar(item)
            lines.append(f"{head} {text}")


def _block(value: dict[str, Any] | list[Any], indent: int, lines: list[str]) -> None:
    if isinstance(value, dict):
        _mapping(value, indent, lines, top=False)
        return
    pad = " " * indent
    for item in value:
        if isinstance(item, (dict, list)) and item:
            start = len(lines)
            _block(item, indent + 2, lines)
            first = lines[start]
            lines[start] = f"{pad}- {first[indent + 2 :]}"
        else:
            text = _flow(item) if isinstance(item, (dict, list)) else yaml_scalar(item)
            lines.append(f"{pad}- {text}")


def render_field(name: str, value: Any) -> str:
    """One top-level manifest entry (``name: value``, without a final newline), written as
    :func:`dump_manifest` writes it."""
    lines: list[str] = []
    _mapping({name: value}, 0, lines, top=True)
    return "\n".join(lines)


def dump_manifest(manifest: PackageManifest, *, verify: bool = True) -> str:
    """The YAML text of ``manifest``; with ``verify``, checked to read back identically.

    Raises :class:`~templiqx_ports.InvalidDataError` for values YAML cannot carry faithfully.
    """
    data = msgspec.to_builtins(manifest)
    lines: list[str] = []
    _mapping(data, 0, lines, top=True)
    text = "\n".join(lines) + "\n"
    if verify:
        parsed, diagnostics = parse_manifest(text)
        if parsed is None:
            raise InvalidDataError(f"manifest would not read back: {_describe(diagnostics)}")
        try:
            same = canonical_json(parsed) == canonical_json(manifest)
        except ValueError as exc:
            raise InvalidDataError(f"manifest cannot be written: {exc}") from exc
        if not same:
            raise InvalidDataError("manifest would not read back to the same value")
    return text


def _describe(diagnostics: list[Diagnostic]) -> str:
    messages = []
    for diagnostic in diagnostics:
        if diagnostic.severity != "error":
            continue
        where = ""
        if diagnostic.span is not None:
            where = f"line {diagnostic.span.line}, column {diagnostic.span.column}: "
        messages.append(where + diagnostic.message)
    return "; ".join(messages) or "unreadable"


_PARSED_MANIFESTS: LRU[bytes, bytes] = LRU(256, max_weight=16 * 1024 * 1024, weigh=len)
"""Manifests parsed before, by the digest of their bytes: msgpack of the parsed value.

Every operation on a package reads its manifest, and parsing the YAML was the largest part of
a cached compile (about a third): the bytes are still read every time (so an edit is seen at
once), the parse is kept. A hit is decoded into a fresh value, so no caller shares it.
"""

_packed = msgspec.msgpack.Encoder()
_unpack = msgspec.msgpack.Decoder(PackageManifest)


def load_manifest(data: bytes, path: str) -> PackageManifest:
    """Parse manifest bytes read from ``path``; ``TQX_DATA_INVALID`` naming ``path`` on failure."""
    key = digest_key(path.encode("utf-8", "surrogatepass") + b"\0" + data)
    kept = _PARSED_MANIFESTS.get(key)
    if kept is not None:
        return _unpack.decode(kept)
    manifest, diagnostics = parse_manifest(data, path)
    if manifest is None:
        raise InvalidDataError(f"{path}: {_describe(diagnostics)}")
    # a value msgpack cannot hold (an integer beyond 64 bits) is parsed every time
    with contextlib.suppress(TypeError, ValueError, OverflowError, msgspec.EncodeError):
        _PARSED_MANIFESTS.put(key, _packed.encode(manifest))
    return manifest


def load_lock(data: bytes, path: str) -> PackageLock:
    """Parse lock-file bytes read from ``path``; ``TQX_DATA_INVALID`` naming ``path`` on failure."""
    lock, diagnostics = parse_lock(data, path)
    if lock is None:
        raise InvalidDataError(f"{path}: {_describe(diagnostics)}")
    return lock
