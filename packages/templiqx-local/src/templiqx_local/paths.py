"""Naming and path rules: package/contract segments and portable relative paths.

These are pure string checks; nothing here touches the filesystem. The confined, symlink-free
filesystem walk built on them lives in :mod:`templiqx_local.confined`.

* A **segment** (package name, contract id, locale, lock name) is non-empty ASCII letters,
  digits, ``.``, ``_`` and ``-``, and is neither ``.`` nor ``..``. Names starting with
  ``.templiqx-`` are reserved for the store's own bookkeeping (lock folders, the default
  workspace, temporary files) and are refused as package names.
* A **relative path** (artifact, include, template and output paths, listing prefixes) is
  ``/``-separated, every segment non-empty and not ``.`` or ``..``; no backslash, no NUL, not
  absolute. Other characters (spaces, Unicode) are allowed. Segments are at most 255 UTF-8
  bytes and the whole path at most 4096, so an over-long name is refused before the operating
  system sees it.
"""

from __future__ import annotations

import re

from templiqx_contracts import quote_input
from templiqx_ports import InvalidPathError

__all__ = [
    "MAX_COMPONENT_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SEGMENT_BYTES",
    "RESERVED_PREFIX",
    "check_package_name",
    "check_relative_path",
    "check_segment",
    "is_reserved_name",
    "is_relative_path",
    "is_segment",
]

MAX_SEGMENT_BYTES = 250
"""Longest segment name: leaves room for ``.yaml``/``.lock`` within the 255-byte file name."""
MAX_COMPONENT_BYTES = 255
"""Longest component of a relative path (the usual file-name limit)."""
MAX_PATH_BYTES = 4096
"""Longest relative path."""
RESERVED_PREFIX = ".templiqx-"
"""Names with this prefix belong to the store (locks, default workspace, temporary files)."""

_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")


def is_segment(value: str) -> bool:
    """Whether ``value`` passes the segment rule."""
    return (
        _SEGMENT.fullmatch(value) is not None
        and value not in (".", "..")
        and len(value) <= MAX_SEGMENT_BYTES
    )


def check_segment(value: str, what: str) -> str:
    """Return ``value`` if it is a valid segment, else raise :class:`InvalidPathError`.

    ``what`` names the value in the message, e.g. ``package name`` or ``contract id``.
    """
    if not isinstance(value, str) or value == "":
        raise InvalidPathError(f"{what} must not be empty")
    if value in (".", ".."):
        raise InvalidPathError(f"{what} {quote_input(value)} must not be '.' or '..'")
    if len(value) > MAX_SEGMENT_BYTES:
        raise InvalidPathError(
            f"{what} {quote_input(value)} is longer than {MAX_SEGMENT_BYTES} characters"
        )
    if _SEGMENT.fullmatch(value) is None:
        raise InvalidPathError(f"{what} {quote_input(value)} {_segment_problem(value)}")
    return value


def _segment_problem(value: str) -> str:
    """What is wrong with a name that fails the segment pattern, and what is allowed."""
    allowed = "use only ASCII letters, digits, '.', '_' and '-'"
    separator = "/" if "/" in value else "\\" if "\\" in value else None
    if separator is not None:
        return (
            f"must be one name, not a path: it contains {separator!r} (path separators and "
            f"'..' traversal are not allowed); {allowed}"
        )
    bad = sorted({char for char in value if _SEGMENT.fullmatch(char) is None})
    listed = ", ".join(repr(char) for char in bad[:5]) + (", ..." if len(bad) > 5 else "")
    return f"contains {listed}, which {'is' if len(bad) == 1 else 'are'} not allowed; {allowed}"


def is_reserved_name(value: str) -> bool:
    """Whether ``value`` is reserved for the store's own files and folders."""
    return value.startswith(RESERVED_PREFIX)


def check_package_name(value: str) -> str:
    """The segment rule plus the reserved ``.templiqx-`` prefix."""
    check_segment(value, "package name")
    if is_reserved_name(value):
        raise InvalidPathError(
            f"package name {quote_input(value)} is reserved: names starting with "
            f"'{RESERVED_PREFIX}' belong to the store"
        )
    return value


def _relative_path_problem(value: str) -> str | None:
    if not isinstance(value, str) or value == "":
        return "must not be empty"
    if "\x00" in value:
        return "must not contain NUL"
    if "\\" in value:
        return "must not contain a backslash; use '/' as the separator"
    if value.startswith("/"):
        return "must be relative, not absolute"
    try:
        encoded = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode text"
    if encoded > MAX_PATH_BYTES:
        return f"is longer than {MAX_PATH_BYTES} bytes"
    for segment in value.split("/"):
        if segment == "":
            return "must not have empty segments (leading, trailing or doubled '/')"
        if segment in (".", ".."):
            return "must not contain '.' or '..' segments"
        if len(segment.encode("utf-8")) > MAX_COMPONENT_BYTES:
            return f"has a segment longer than {MAX_COMPONENT_BYTES} bytes"
    return None


def is_relative_path(value: str) -> bool:
    """Whether ``value`` passes the relative-path rule."""
    return _relative_path_problem(value) is None


def check_relative_path(value: str, what: str = "path") -> tuple[str, ...]:
    """Split a valid relative path into its segments, else raise :class:`InvalidPathError`."""
    problem = _relative_path_problem(value)
    if problem is not None:
        shown = quote_input(value) if isinstance(value, str) else repr(value)
        raise InvalidPathError(f"{what} {shown} {problem}")
    return tuple(value.split("/"))
