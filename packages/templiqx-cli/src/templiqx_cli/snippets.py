"""Diagnostics for people: the offending source line, underlined, the way rustc and ruff show it.

A diagnostic with a ``file`` and a ``span`` is shown with its one location (the file as it
opens from the working directory, as rustc and ruff print it), the line it points at and a
caret underline beneath the offending token::

    TQX_REF_UNKNOWN error /messages/0/content/1/expression: unknown or schema-incompatible ...
      --> packages/welcome/contracts/bad.yaml:14:39
         |
      14 |         expression: {kind: ref, path: inputs.nickname}
         |                                       ^^^^^^^^^^^^^^^
      help: Reference a declared field ...

The text comes from the file the user gave for that label (``put``'s SOURCE), else from the
file under the packages root (:class:`SourceFiles`). Files are read with a bound, never through
a symbolic link and only when they are regular files; a file that vanished or changed so that
the span no longer fits it simply has no snippet. Control characters in the line are replaced,
so a source cannot drive the terminal, and a long line is shown as a window around the span.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Final

from templiqx_contracts import Diagnostic

__all__ = [
    "MAX_SOURCE_BYTES",
    "SourceFiles",
    "from_cwd",
    "location",
    "snippet_lines",
    "source_text",
]

MAX_SOURCE_BYTES: Final = 8 * 1024 * 1024
"""The largest file read for a snippet (the reader's own document limit)."""

_WINDOW: Final = 100
"""Characters of a long line shown around the span."""
_LEAD: Final = 30
"""Characters kept before the span's start when a long line is cut."""


class SourceFiles(Mapping[str, str]):
    """Where the text of a diagnostic's file is, for snippets.

    As a mapping it holds the files the command was given for a label (``put``'s SOURCE for
    ``pkg/contracts/x.yaml``): a diagnostic about such a label is shown at that file. Any other
    label is read under ``root``, the packages root. Texts are read once and cached.
    """

    def __init__(self, root: str | None = None, given: Mapping[str, str] | None = None) -> None:
        self.root = root
        self._given = dict(given or {})
        self._texts: dict[str, str | None] = {}

    def __getitem__(self, label: str) -> str:
        return self._given[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)

    def __bool__(self) -> bool:
        """Always true, even with no given file: it still reads labels under the root (so
        ``files or {}`` keeps it)."""
        return True

    def display(self, label: str) -> str:
        """Where ``label``'s file is, as a path that opens from the working directory: the file
        the command was given for it, as given; else the file under the packages root (made
        relative to the working directory when it lies inside it); else the label itself."""
        given = self._given.get(label)
        if given is not None:
            return given
        if self.root is None or not _is_label(label):
            return label
        return from_cwd(os.path.normpath(os.path.join(self.root, *PurePosixPath(label).parts)))

    def text(self, label: str) -> str | None:
        """The text of ``label``, or ``None`` when it cannot be read (or is not a label)."""
        if label not in self._texts:
            path = self._given.get(label)
            if path is None and self.root is not None and _is_label(label):
                path = os.path.join(self.root, *PurePosixPath(label).parts)
            self._texts[label] = _read(path) if path is not None else None
        return self._texts[label]


def from_cwd(path: str) -> str:
    """``path`` as short as it opens from the working directory: a relative path as it is (it
    was given relative to the working directory), an absolute one relative when inside it."""
    if not os.path.isabs(path):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative == ".." or relative.startswith(".." + os.sep) else relative


def _is_label(label: str) -> bool:
    """A portable package-relative label: ``/`` separated, no ``..``, not absolute."""
    parts = PurePosixPath(label).parts
    return (
        bool(parts)
        and not label.startswith("/")
        and "\\" not in label
        and all(part not in ("", ".", "..") for part in parts)
    )


def _read(path: str) -> str | None:
    """A regular file's text, at most :data:`MAX_SOURCE_BYTES`, not through a symlink."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        data = os.read(handle, MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(handle)
    if len(data) > MAX_SOURCE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def location(files: Mapping[str, str] | None, label: str) -> str:
    """Where ``label``'s file is, for people (see :meth:`SourceFiles.display`)."""
    if isinstance(files, SourceFiles):
        return files.display(label)
    if files is not None and label in files:
        return files[label]
    return label


def source_text(files: Mapping[str, str] | None, label: str) -> str | None:
    """The text of ``label`` for a snippet: from :class:`SourceFiles`, or the file a plain
    mapping gives for it."""
    if isinstance(files, SourceFiles):
        return files.text(label)
    if files is not None and label in files:
        return _read(files[label])
    return None


def _shown(char: str) -> str:
    """A character as the terminal may show it: controls and format characters replaced."""
    if char == "\t":
        return " "
    return "\ufffd" if unicodedata.category(char) in ("Cc", "Cf") else char


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def snippet_lines(diagnostic: Diagnostic, text: str) -> list[str]:
    """The gutter, source line and caret underline for ``diagnostic`` in ``text``; ``[]`` when
    it has no span or the span does not fit the text (the file changed)."""
    span = diagnostic.span
    if span is None:
        return []
    lines = text.splitlines()
    if span.line == len(lines) + 1 and span.column == 1:
        lines.append("")  # the end of the input (an unclosed bracket, an empty document)
    if not 0 < span.line <= len(lines):
        return []
    line = lines[span.line - 1]
    start = span.column - 1
    if start < 0 or start > len(line):
        return []
    end = span.end_column - 1 if span.end_line == span.line else len(line.rstrip())
    end = min(max(end, start + 1), max(len(line), start + 1))
    prefix, suffix, offset = "", "", 0
    if len(line) > _WINDOW + _LEAD:
        offset = max(0, start - _LEAD)
        prefix = "…" if offset else ""
        suffix = "…" if offset + _WINDOW < len(line) else ""
        line = line[offset : offset + _WINDOW]
        start, end = start - offset, min(end - offset, len(line) + 1)
    shown = prefix + "".join(_shown(char) for char in line) + suffix
    lead = _width(prefix + "".join(_shown(char) for char in line[:start]))
    carets = "^" * max(1, _width("".join(_shown(char) for char in line[start:end])))
    number = str(span.line)
    gutter = " " * len(number)
    return [
        f"  {gutter} |",
        f"  {number} | {shown}".rstrip(),
        f"  {gutter} | {' ' * lead}{carets}",
    ]
