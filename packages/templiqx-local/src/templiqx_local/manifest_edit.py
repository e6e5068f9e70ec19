"""Round-trip editing of ``templiqx.yaml``: change the lines a write changes, keep every other.

A manifest in a package under version control is often written by hand: comments, key order,
list order, quoting and blank lines are the author's. A write (``put_contract`` adding an id,
``update_package`` changing the version, ``sign_package`` attaching a signature) should show up
in a diff as the lines it changed, not as a rewritten file. :func:`edit_manifest` therefore
edits the text in place, from the positions of the top-level entries in the YAML event stream:

* a changed scalar (``version``, ``description``) replaces the scalar's text only, keeping its
  quoting style where the new value allows it; a key that is not there yet is appended;
* a list that gained one item gets one new line (``- item``, indented as its neighbours, placed
  where the list's order puts it) or one new flow item; a list that lost one item loses that
  item's line; an empty flow list ``[]`` that gains an item becomes a block list, and a block
  list that loses its last item becomes ``[]``;
* any other change rewrites that one entry (key and value), in the layout of
  :func:`~templiqx_local.manifest_yaml.dump_manifest`.

The reader stays the project's strict core reader: the edited text is parsed back with it and
must read as exactly the intended manifest (canonical JSON), otherwise :func:`edit_manifest`
returns ``None`` and the caller writes the whole manifest with ``dump_manifest`` instead, as
before. Anchors, aliases, tags, a flow-style top-level mapping, several documents or a byte-order
mark also make it return ``None``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml
from yaml._yaml import CParser

from templiqx_contracts import PackageManifest, canonical_json
from templiqx_core.parse import parse_manifest
from templiqx_local.manifest_yaml import render_field, yaml_string

__all__ = ["edit_manifest"]

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_TYPED_PLAIN = re.compile(
    r"(?:[-+]?(?:\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN|null|Null|NULL|~|true|True|TRUE|false|"
    r"False|FALSE|[yY]|[yY]es|YES|[nN]|[nN]o|NO|[oO]n|ON|[oO]ff|OFF|"
    r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|"
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)"
)


@dataclass
class _Scalar:
    start: int
    end: int
    value: str
    style: str


@dataclass
class _Entry:
    """One top-level ``key: value`` of the manifest, with the positions of its parts."""

    key: str
    key_start: int
    key_end: int
    kind: str  # "scalar", "sequence" or "mapping"
    start: int
    end: int  # where the value's own text ends (its last scalar or closing bracket)
    flow: bool = False
    scalar: _Scalar | None = None
    items: list[_Scalar] | None = None  # a sequence's items, when all are plain scalars


@dataclass
class _Edit:
    start: int
    end: int
    text: str


@dataclass
class _Document:
    text: str
    newline: str
    entries: dict[str, _Entry] = field(default_factory=dict)
    end: int = 0


class _NotEditableError(Exception):
    """The text uses YAML this editor does not edit in place."""


def edit_manifest(text: str, before: PackageManifest, after: PackageManifest) -> str | None:
    """``text`` (which reads as ``before``) edited to read as ``after``, or ``None``.

    Only the top-level entries whose values differ are touched. ``None`` means the text cannot
    be edited in place faithfully; the caller then writes the whole manifest.
    """
    try:
        document = _read(text)
        old = msgspec.to_builtins(before)
        new = msgspec.to_builtins(after)
        edits: list[_Edit] = []
        appended: list[str] = []
        for name, value in new.items():
            if old.get(name) == value:
                continue
            entry = document.entries.get(name)
            if entry is None:
                appended.append(name)
            else:
                edits.extend(_change(document, entry, old.get(name), value))
        for name in old:
            if name not in new and name in document.entries:
                edits.append(_remove_entry(document, document.entries[name]))
        edited = _apply(document, edits, [render_field(name, new[name]) for name in appended])
    except (_NotEditableError, yaml.YAMLError, ValueError, TypeError):
        return None
    return edited if _reads_as(edited, after) else None


def _reads_as(text: str, manifest: PackageManifest) -> bool:
    parsed, _ = parse_manifest(text)
    if parsed is None:
        return False
    try:
        return canonical_json(parsed) == canonical_json(manifest)
    except ValueError:
        return False


# --- reading the positions --------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    """One YAML event, reduced to what the editor needs."""

    kind: str  # "scalar", "alias", "start", "end" or another event's class name
    start: int
    end: int
    value: str = ""
    style: str = ""
    flow: bool = False
    marked: bool = False  # carries an anchor or a tag
    sequence: bool = False


def _events(text: str) -> list[_Event]:
    parser = CParser(text)
    events: list[_Event] = []
    try:
        while True:
            event: Any = parser.get_event()
            start, end = event.start_mark.index, event.end_mark.index
            marked = (
                getattr(event, "anchor", None) is not None
                or getattr(event, "tag", None) is not None
            )
            if isinstance(event, yaml.ScalarEvent):
                events.append(
                    _Event("scalar", start, end, event.value, event.style or "", marked=marked)
                )
            elif isinstance(event, yaml.AliasEvent):
                events.append(_Event("alias", start, end))
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                sequence = isinstance(event, yaml.SequenceStartEvent)
                flow = bool(event.flow_style)
                events.append(
                    _Event("start", start, end, flow=flow, marked=marked, sequence=sequence)
                )
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                events.append(_Event("end", start, end))
            else:
                events.append(_Event(type(event).__name__, start, end))
            if isinstance(event, yaml.StreamEndEvent):
                return events
    finally:
        parser.dispose()


def _read(text: str) -> _Document:
    if text.startswith("\ufeff"):
        raise _NotEditableError("byte-order mark")
    document = _Document(text=text, newline="\r\n" if "\r\n" in text else "\n")
    events = _events(text)
    kinds = [event.kind for event in events[:3]]
    top = events[2] if len(events) > 2 else None
    if kinds != ["StreamStartEvent", "DocumentStartEvent", "start"] or top is None:
        raise _NotEditableError("not one mapping")
    if top.sequence or top.flow or top.marked:
        raise _NotEditableError("flow or tagged top-level mapping")
    at = 3
    while events[at].kind != "end":
        key = events[at]
        if key.kind != "scalar" or key.marked:
            raise _NotEditableError("complex key")
        at, entry = _entry(events, at + 1, key)
        document.entries[entry.key] = entry
    document.end = events[at].start
    if [event.kind for event in events[at + 1 :]] != ["DocumentEndEvent", "StreamEndEvent"]:
        raise _NotEditableError("more than one document")
    return document


def _scalar(event: _Event) -> _Scalar:
    if event.marked:
        raise _NotEditableError("anchor or tag")
    return _Scalar(event.start, event.end, event.value, event.style)


def _entry(events: list[_Event], at: int, key: _Event) -> tuple[int, _Entry]:
    """The entry whose value starts at ``events[at]``; returns the index after it.

    A value's text ends at its last scalar or closing bracket: the end event of a block
    collection marks where the next token starts (after any comments), not its own end.
    """
    value = events[at]
    if value.kind == "scalar":
        scalar = _scalar(value)
        entry = _Entry(
            key.value, key.start, key.end, "scalar", scalar.start, scalar.end, scalar=scalar
        )
        return at + 1, entry
    if value.kind != "start":
        raise _NotEditableError("alias")
    items: list[_Scalar] | None = [] if value.sequence else None
    flows: list[bool] = []
    end = value.start
    index = at
    while True:
        event = events[index]
        if event.kind == "alias" or event.marked:
            raise _NotEditableError("alias, anchor or tag")
        if event.kind == "start":
            flows.append(event.flow)
            if len(flows) > 1:
                items = None
        elif event.kind == "end":
            if flows.pop():
                end = max(end, event.end)
            if not flows:
                break
        elif event.kind == "scalar":
            end = max(end, event.end)
            if items is not None:
                items.append(_scalar(event))
        index += 1
    kind = "sequence" if value.sequence else "mapping"
    entry = _Entry(
        key.value, key.start, key.end, kind, value.start, end, flow=value.flow, items=items
    )
    return index + 1, entry


# --- working out the edits --------------------------------------------------------------------


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """The index just after the newline that ends the line holding ``index``."""
    found = text.find("\n", index)
    return len(text) if found < 0 else found + 1


def _change(document: _Document, entry: _Entry, old: Any, new: Any) -> list[_Edit]:
    if entry.kind == "scalar" and isinstance(new, str) and entry.scalar is not None:
        return [_replace_scalar(document, entry.scalar, new)]
    if (
        entry.kind == "sequence"
        and entry.items is not None
        and isinstance(old, list)
        and isinstance(new, list)
        and all(isinstance(item, str) for item in [*old, *new])
        and [item.value for item in entry.items] == old
    ):
        edits = _list_edit(document, entry, old, new)
        if edits is not None:
            return edits
    return [_replace_entry(document, entry, new)]


def _scalar_text(value: str, style: str) -> str:
    """``value`` as a scalar, in the original ``style`` when that style can carry it."""
    if style == "" and _PLAIN_WORD.fullmatch(value) and not _TYPED_PLAIN.fullmatch(value):
        return value
    if style == "'" and value.isprintable() and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    return yaml_string(value)


def _replace_scalar(document: _Document, scalar: _Scalar, value: str) -> _Edit:
    original = document.text[scalar.start : scalar.end]
    kept = original[len(original.rstrip()) :]  # a block scalar ends with its line breaks
    style = scalar.style if scalar.style in ("", "'", '"') else '"'
    return _Edit(scalar.start, scalar.end, _scalar_text(value, style) + kept)


def _item_line(document: _Document, item: _Scalar) -> tuple[int, int, str] | None:
    """(line start, line end, indent) of a block item alone on its line, else ``None``."""
    text = document.text
    start = _line_start(text, item.start)
    end = _line_end(text, item.end)
    line = text[start:end]
    match = re.fullmatch(r"([ ]*)-[ ]+", text[start : item.start])
    rest = text[item.end : end].strip()
    if match is None or (rest and not rest.startswith("#")) or "\n" in line.rstrip("\r\n"):
        return None
    return start, end, match.group(1)


def _list_edit(
    document: _Document, entry: _Entry, old: list[str], new: list[str]
) -> list[_Edit] | None:
    items = entry.items
    assert items is not None
    if len(new) == len(old) + 1:
        at = next((i for i in range(len(old)) if old[i] != new[i]), len(old))
        if new[:at] + new[at + 1 :] == old:
            return _insert_item(document, entry, at, new[at])
    if len(new) == len(old) - 1:
        at = next((i for i in range(len(new)) if old[i] != new[i]), len(new))
        if old[:at] + old[at + 1 :] == new:
            return _remove_item(document, entry, at)
    return None


def _insert_item(document: _Document, entry: _Entry, at: int, value: str) -> list[_Edit] | None:
    items = entry.items
    assert items is not None
    shown = _scalar_text(value, items[0].style if items else '"')
    if entry.flow:
        if not items:  # `key: []` grows into a block list, as dump_manifest writes it
            indent = " " * (entry.key_start - _line_start(document.text, entry.key_start) + 2)
            colon = document.text.index(":", entry.key_end) + 1
            return [_Edit(colon, entry.end, f"{document.newline}{indent}- {shown}")]
        if at < len(items):
            return [_Edit(items[at].start, items[at].start, f"{shown}, ")]
        return [_Edit(items[-1].end, items[-1].end, f", {shown}")]
    lines = [_item_line(document, item) for item in items]
    if not lines or any(line is None for line in lines):
        return None
    if at < len(items):
        start, _, indent = lines[at]  # type: ignore[misc]
        return [_Edit(start, start, f"{indent}- {shown}{document.newline}")]
    _, end, indent = lines[-1]  # type: ignore[misc]
    prefix = "" if document.text[:end].endswith("\n") else document.newline
    return [_Edit(end, end, f"{prefix}{indent}- {shown}{document.newline}")]


def _remove_item(document: _Document, entry: _Entry, at: int) -> list[_Edit] | None:
    items = entry.items
    assert items is not None
    if len(items) == 1:  # the list becomes empty: `key: []`
        colon = document.text.index(":", entry.key_end) + 1
        end = entry.end if entry.flow else _line_end(document.text, entry.end)
        tail = "" if entry.flow else document.newline
        return [_Edit(colon, end, f" []{tail}")]
    if entry.flow:
        if at + 1 < len(items):
            return [_Edit(items[at].start, items[at + 1].start, "")]
        return [_Edit(items[at - 1].end, items[at].end, "")]
    line = _item_line(document, items[at])
    if line is None:
        return None
    start, end, _ = line
    return [_Edit(start, end, "")]


def _replace_entry(document: _Document, entry: _Entry, value: Any) -> _Edit:
    """The whole entry (key, value, through the end of its last line) written anew."""
    text = document.text
    start = entry.key_start
    if text[_line_start(text, start) : start].strip():
        raise _NotEditableError("key not at the start of its line")
    end = _line_end(text, entry.end)
    rendered = render_field(entry.key, value).replace("\n", document.newline)
    return _Edit(start, end, rendered + document.newline)


def _remove_entry(document: _Document, entry: _Entry) -> _Edit:
    text = document.text
    start = _line_start(text, entry.key_start)
    if text[start : entry.key_start].strip():
        raise _NotEditableError("key not at the start of its line")
    return _Edit(start, _line_end(text, entry.end), "")


def _apply(document: _Document, edits: list[_Edit], appended: list[str]) -> str:
    text = document.text
    ordered = sorted(edits, key=lambda edit: (edit.start, edit.end))
    for earlier, later in itertools.pairwise(ordered):
        if later.start < earlier.end:
            raise _NotEditableError("overlapping edits")
    for edit in reversed(ordered):
        text = text[: edit.start] + edit.text + text[edit.end :]
    if appended:
        if text and not text.endswith("\n"):
            text += document.newline
        text += "".join(
            block.replace("\n", document.newline) + document.newline for block in appended
        )
    return text
