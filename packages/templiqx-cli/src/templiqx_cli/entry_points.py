"""The names in an entry-point group, read without ``importlib.metadata``.

``templiqx --help`` lists the installed runtimes and plugins by name. ``importlib.metadata``
answers that, but importing it (``email``, ``zipfile``, ``csv``, ``tempfile`` ...) and building a
``Distribution`` per installed package took a third of ``--help``'s start-up above its floor
(issue #33). This module reads the same files the same way for the one question ``--help`` asks
— which names does a group hold — and nothing else: every ``*.dist-info`` / ``*.egg-info``
folder on ``sys.path`` (the first distribution of each name wins, as in ``importlib.metadata``),
its ``entry_points.txt``, the ``[group]`` section's ``name = value`` lines.

When a ``sys.path`` entry is not a plain folder (a zip or an egg file) it answers ``None`` and the
caller asks ``importlib.metadata``, which reads those too. Loading an entry point still goes
through ``importlib.metadata`` (``templiqx_local.compose.load_runtime``, the plugin commands).
A test holds the names equal to ``importlib.metadata``'s for every group in the environment.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: this module is imported by `--help`
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Found", "group_entries", "group_names"]

_SUFFIXES = (".dist-info", ".egg-info")


def _normalized(folder: str) -> str:
    """The distribution name of a metadata folder, normalised as ``importlib.metadata`` does."""
    stem = folder[: folder.rfind(".")]
    name = stem.partition("-")[0]
    out = []
    previous_separator = False
    for char in name.lower():
        if char in "-_.":
            if not previous_separator:
                out.append("_")
            previous_separator = True
        else:
            out.append(char)
            previous_separator = False
    return "".join(out)


def _metadata_folders() -> list[str] | None:
    """Every distribution's metadata folder, first of each name; ``None`` if one is zipped."""
    seen: set[str] = set()
    folders: list[str] = []
    for entry in sys.path:
        base = entry or "."
        try:
            names = os.listdir(base)
        except NotADirectoryError:
            return None  # a zip or egg file: importlib.metadata reads those
        except OSError:
            continue
        for name in names:
            if not name.lower().endswith(_SUFFIXES):
                continue
            path = os.path.join(base, name)
            if not os.path.isdir(path):
                return None  # an .egg-info file: leave it to importlib.metadata
            key = _normalized(name)
            if key not in seen:
                seen.add(key)
                folders.append(path)
    return folders


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """The ``(name, value)`` lines of ``[group]`` in an ``entry_points.txt``."""
    found: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip()))
    return found


class Found:
    """One entry point of a group: its name and value, and where its distribution is."""

    __slots__ = ("_summary", "folder", "group", "name", "value")

    def __init__(
        self, name: str, value: str, group: str, folder: str | None, summary: str | None = None
    ) -> None:
        self.name = name
        self.value = value
        self.group = group
        self.folder = folder
        self._summary = summary

    def load(self) -> Any:
        """The object the entry point names (imported through ``importlib.metadata``)."""
        from importlib.metadata import EntryPoint

        return EntryPoint(self.name, self.value, self.group).load()

    def summary(self) -> str | None:
        """The distribution's one-line ``Summary`` (from its ``METADATA`` headers)."""
        if self._summary is not None or self.folder is None:
            return self._summary
        for file in ("METADATA", "PKG-INFO"):
            try:
                with open(os.path.join(self.folder, file), encoding="utf-8") as handle:
                    for line in handle:
                        if not line.strip():
                            break  # the headers end at the first blank line
                        if line.lower().startswith("summary:"):
                            return line.partition(":")[2].strip() or None
                return None
            except (OSError, UnicodeDecodeError):
                continue
        return None


def group_entries(group: str) -> list[Found] | None:
    """The entry points of ``group``, in distribution order; ``None`` when this reader cannot
    see every distribution (ask ``importlib.metadata`` then)."""
    folders = _metadata_folders()
    if folders is None:
        return None
    found: list[Found] = []
    for folder in folders:
        try:
            with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as file:
                text = file.read()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, UnicodeDecodeError):
            return None
        if group in text:
            found.extend(Found(name, value, group, folder) for name, value in _section(text, group))
    return found


def group_names(group: str) -> list[str] | None:
    """The sorted, distinct entry-point names of ``group`` (``None``: see :func:`group_entries`)."""
    entries = group_entries(group)
    return None if entries is None else sorted({entry.name for entry in entries})
