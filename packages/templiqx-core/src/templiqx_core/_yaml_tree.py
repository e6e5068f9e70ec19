"""One YAML document as a tree of raw nodes, read from libyaml's event stream.

No YAML 1.1 resolver runs here: a scalar keeps its exact text, its style (plain, quoted, block)
and its explicit tag, so the typing rules of the strict reader can be applied later, position by
position. Aliases are expanded by reference (the aliased node object is reused), while the
size, depth and alias budgets in :mod:`templiqx_core.limits` are checked on the expanded
document as the events arrive: an alias counts as the nodes, aliases, height and scalar bytes of
the node it repeats.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import yaml
from yaml import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml._yaml import CParser

from templiqx_core.fuel import check_cancelled
from templiqx_core.limits import (
    ALIAS_EXPANSION_FACTOR,
    MAX_DOCUMENT_BYTES,
    MAX_EXPANDED_BYTES,
    MAX_EXPANDED_NODES,
    MAX_NESTING_DEPTH,
)

__all__ = ["Mapping", "Node", "Scalar", "Sequence", "YamlError", "read_document"]


SYNTAX: Final = "syntax"
"""The text is not one well-formed YAML document (or not valid UTF-8)."""
UNKNOWN_FIELD: Final = "unknown_field"
"""A mapping has a key its struct does not declare."""
SCHEMA: Final = "schema"
"""Well-formed YAML that does not fit the schema: a wrong type, a missing or repeated field."""
LIMIT: Final = "limit"
"""The document exceeds one of the reader's limits (size, nesting, alias expansion)."""


class YamlError(Exception):
    """A document that the strict reader refuses; ``line``/``column`` are 1-based when known.

    ``kind`` says what sort of problem it is (:data:`SYNTAX`, :data:`UNKNOWN_FIELD`,
    :data:`SCHEMA` or :data:`LIMIT`), so the diagnostic can suggest a fix that fits.
    """

    def __init__(
        self,
        message: str,
        line: int | None = None,
        column: int | None = None,
        *,
        kind: str = SCHEMA,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.kind = kind


class Scalar:
    """A scalar: raw text, style (``""`` plain, ``'`` ``"`` quoted, ``|`` ``>`` block), tag."""

    __slots__ = ("column", "line", "style", "tag", "value")

    def __init__(self, value: str, style: str, tag: str | None, line: int, column: int) -> None:
        self.value = value
        self.style = style
        self.tag = tag
        self.line = line
        self.column = column


class Sequence:
    """A sequence of nodes."""

    __slots__ = ("column", "items", "line", "tag")

    def __init__(self, tag: str | None, line: int, column: int) -> None:
        self.items: list[Node] = []
        self.tag = tag
        self.line = line
        self.column = column


class Mapping:
    """A mapping, as its key/value pairs in source order (duplicates are kept for the reader)."""

    __slots__ = ("column", "line", "pairs", "tag")

    def __init__(self, tag: str | None, line: int, column: int) -> None:
        self.pairs: list[tuple[Node, Node]] = []
        self.tag = tag
        self.line = line
        self.column = column


Node: TypeAlias = Scalar | Sequence | Mapping


class _Open:
    """A collection whose end event has not arrived yet."""

    __slots__ = ("anchor", "bytes_before", "height", "jumps_before", "key", "node", "total_before")

    def __init__(
        self, node: Sequence | Mapping, anchor: str | None, total: int, jumps: int, size: int
    ) -> None:
        self.node = node
        self.anchor = anchor
        self.total_before = total
        self.jumps_before = jumps
        self.bytes_before = size
        self.height = 1
        self.key: Node | None = None  # a mapping's pending key


class _Anchored:
    """A finished anchored node: its expanded node count, alias count, height and scalar bytes."""

    __slots__ = ("height", "jumps", "node", "size", "weight")

    def __init__(self, node: Node, weight: int, jumps: int, height: int, size: int) -> None:
        self.node = node
        self.weight = weight
        self.jumps = jumps
        self.height = height
        self.size = size


_HINT_SIZE: Final = "split the file or shrink the values it carries"
_CANCEL_EVERY: Final = (1 << 13) - 1


def read_document(source: str | bytes) -> Node:
    """Parse exactly one YAML document into raw nodes, enforcing the reader's limits.

    Inside a metered call (:mod:`templiqx_core.fuel`) a set cancel token stops the reading with
    :class:`~templiqx_core.fuel.CallCancelledError` (looked at every 8,192 events)."""
    data = _utf8(source)
    try:
        parser = CParser(data)
    except yaml.YAMLError as exc:  # pragma: no cover - libyaml reports errors lazily
        raise _convert(exc, data) from None
    return _Builder(parser, data).run()


def _utf8(source: str | bytes) -> bytes:
    if isinstance(source, str):
        if len(source) > MAX_DOCUMENT_BYTES:
            line, column = _position_in_text(source, MAX_DOCUMENT_BYTES)
            raise _too_large(len(source), "characters", line, column)
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as exc:
            line, column = _position_in_text(source, exc.start)
            raise YamlError(
                "the text contains an unpaired surrogate code point "
                f"(U+{ord(source[exc.start]):04X}), which is not valid Unicode; "
                "pass well-formed text",
                line,
                column,
                kind=SYNTAX,
            ) from None
        if len(data) > MAX_DOCUMENT_BYTES:
            raise _too_large(len(data), "bytes", *_position_in_bytes(data, MAX_DOCUMENT_BYTES))
        return data  # encoding succeeded, so it is valid UTF-8
    if len(source) > MAX_DOCUMENT_BYTES:
        data = bytes(source)
        raise _too_large(len(data), "bytes", *_position_in_bytes(data, MAX_DOCUMENT_BYTES))
    data = bytes(source)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position_in_bytes(data, exc.start)
        raise YamlError(
            f"the file is not valid UTF-8 (invalid byte 0x{data[exc.start]:02x}) "
            f"at line {line} column {column}; save it as UTF-8",
            line,
            column,
            kind=SYNTAX,
        ) from None
    return data


_SYNTAX_HINT: Final = "check the indentation, quoting and brackets there"


def _located(problem: str, mark: object | None, hint: str = "", kind: str = SYNTAX) -> YamlError:
    suffix = f"; {hint}" if hint else ""
    line = getattr(mark, "line", None)
    column = getattr(mark, "column", None)
    if not isinstance(line, int) or not isinstance(column, int):
        return YamlError(problem + suffix, kind=kind)
    return YamlError(
        f"{problem} at line {line + 1} column {column + 1}{suffix}",
        line + 1,
        column + 1,
        kind=kind,
    )


def _syntax_hint(data: bytes, line: int, column: int) -> str:
    """A fix for the common syntax errors: tabs used for indentation, else a generic hint."""
    lines = data.split(b"\n", line + 1)
    if line < len(lines):
        text = lines[line].decode("utf-8", errors="replace")
        if 0 <= column < len(text) and text[column] == "\t":
            return "YAML cannot indent with tabs; use spaces"
    return _SYNTAX_HINT


def _too_large(size: int, unit: str, line: int, column: int) -> YamlError:
    """The size limit, located where the document crosses it."""
    return YamlError(
        f"the document is {size} {unit}, more than the {MAX_DOCUMENT_BYTES}-byte limit "
        f"(MAX_DOCUMENT_BYTES), which it reaches at line {line} column {column}; {_HINT_SIZE}",
        line,
        column,
        kind=LIMIT,
    )


def _position_in_text(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _position_in_bytes(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def _convert(exc: yaml.YAMLError, data: bytes) -> YamlError:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or "invalid YAML"
        if exc.context:
            problem = f"{problem} {exc.context}"
        mark = exc.problem_mark or exc.context_mark
        if "maximum nesting depth" in problem:  # libyaml's own flow-level guard (1000)
            return _located(_DEPTH_PROBLEM, mark, kind=LIMIT)
        hint = _syntax_hint(data, mark.line, mark.column) if mark is not None else _SYNTAX_HINT
        return _located(f"invalid YAML: {problem}", mark, hint)
    if isinstance(exc, yaml.reader.ReaderError):
        offset = min(max(int(exc.position), 0), len(data))
        line, column = _position_in_bytes(data, offset)
        char = exc.character
        code = ord(char) if isinstance(char, str) else int(char)
        return YamlError(
            f"{exc.reason} (character U+{code:04X}) at line {line} column {column}; "
            "remove it or write it as an escape inside a double-quoted string",
            line,
            column,
            kind=SYNTAX,
        )
    return YamlError(str(exc), kind=SYNTAX)


class _Builder:
    """Turns the event stream of one document into raw nodes."""

    def __init__(self, parser: CParser, data: bytes) -> None:
        self._parser = parser
        self._data = data
        self._stack: list[_Open] = []
        self._anchors: dict[str, _Anchored | _Open] = {}
        self._events = 0  # node events, as the reference counts them for its alias budget
        self._total = 0  # nodes of the expanded document so far
        self._jumps = 0  # alias expansions in the expanded document so far
        self._bytes = 0  # UTF-8 bytes of scalar text in the expanded document so far
        self._root: Node | None = None

    def _next(self) -> object:
        try:
            return self._parser.get_event()
        except yaml.YAMLError as exc:
            raise _convert(exc, self._data) from None

    def run(self) -> Node:
        self._next()  # StreamStartEvent
        event = self._next()
        if type(event) is StreamEndEvent:
            line, column = _position(event)  # where the input ends
            raise YamlError(
                "the source contains no YAML document (it is empty or only comments; input "
                f"ends at line {line} column {column}); write the document's mapping",
                line,
                column,
                kind=SYNTAX,
            )
        if type(event) is not DocumentStartEvent:  # pragma: no cover - libyaml guarantees it
            raise _at(event, "expected the start of a YAML document")
        start = event
        while self._root is None:
            self._step(self._next())
            if not self._events & _CANCEL_EVERY:  # every 8,192 events, a few milliseconds
                check_cancelled()
        end = self._next()
        if type(end) is not DocumentEndEvent:  # pragma: no cover - libyaml guarantees it
            raise _at(end, "expected the end of the YAML document")
        if self._jumps > ALIAS_EXPANSION_FACTOR * self._events:
            line, column = _position(start)  # a property of the whole document
            raise YamlError(
                f"the document starting at line {line} column {column} expands "
                f"{self._jumps} aliases, more than "
                f"{ALIAS_EXPANSION_FACTOR} per YAML event (ALIAS_EXPANSION_FACTOR, "
                f"{ALIAS_EXPANSION_FACTOR * self._events} here); repeat the content "
                "instead of aliasing it",
                line,
                column,
                kind=LIMIT,
            )
        after = self._next()
        if type(after) is not StreamEndEvent:
            raise _at(
                after,
                "the source contains more than one YAML document; "
                "keep a single document (remove the extra `---`)",
                kind=SYNTAX,
            )
        return self._root

    def _step(self, event: object) -> None:
        kind = type(event)
        if kind is ScalarEvent:
            assert isinstance(event, ScalarEvent)
            self._events += 1
            self._count(1, event)
            text = event.value
            size = len(text) if text.isascii() else len(text.encode("utf-8"))
            self._weigh(size, event)
            line, column = _position(event)
            scalar = Scalar(text, event.style or "", event.tag, line, column)
            if event.anchor is not None:
                self._anchors[event.anchor] = _Anchored(scalar, 1, 0, 0, size)
            self._add(scalar, 0)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            assert isinstance(event, MappingStartEvent | SequenceStartEvent)
            self._events += 1
            if len(self._stack) >= MAX_NESTING_DEPTH:
                raise _depth_error(event)
            self._count(1, event)
            line, column = _position(event)
            node: Sequence | Mapping = (
                Mapping(event.tag, line, column)
                if kind is MappingStartEvent
                else Sequence(event.tag, line, column)
            )
            frame = _Open(node, event.anchor, self._total - 1, self._jumps, self._bytes)
            if event.anchor is not None:
                self._anchors[event.anchor] = frame
            self._stack.append(frame)
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            self._events += 1
            frame = self._stack.pop()
            if frame.anchor is not None and self._anchors.get(frame.anchor) is frame:
                self._anchors[frame.anchor] = _Anchored(
                    frame.node,
                    self._total - frame.total_before,
                    self._jumps - frame.jumps_before,
                    frame.height,
                    self._bytes - frame.bytes_before,
                )
            self._add(frame.node, frame.height)
        elif kind is AliasEvent:
            assert isinstance(event, AliasEvent)
            self._alias(event)
        else:  # pragma: no cover - libyaml guarantees the event order
            raise _at(event, f"unexpected YAML event {kind.__name__}")

    def _alias(self, event: AliasEvent) -> None:
        self._events += 1
        name = event.anchor or ""
        target = self._anchors.get(name)
        if target is None:
            raise _at(
                event, f"unknown anchor `{name}` (alias `*{name}`); define `&{name}` first", SYNTAX
            )
        if isinstance(target, _Open):
            raise _at(
                event,
                f"alias `*{name}` refers to the node that contains it (a recursive alias); "
                "YAML aliases must not form cycles",
                SYNTAX,
            )
        if len(self._stack) + target.height > MAX_NESTING_DEPTH:
            raise _depth_error(event)
        self._jumps += 1 + target.jumps
        self._count(target.weight, event)
        self._weigh(target.size, event)
        self._add(target.node, target.height)

    def _count(self, nodes: int, event: object) -> None:
        self._total += nodes
        if self._total > MAX_EXPANDED_NODES:
            raise _at(
                event,
                f"the document holds more than {MAX_EXPANDED_NODES} nodes once its aliases "
                f"are expanded (MAX_EXPANDED_NODES); {_HINT_SIZE}",
                LIMIT,
            )

    def _weigh(self, size: int, event: object) -> None:
        self._bytes += size
        if self._bytes > MAX_EXPANDED_BYTES:
            raise _at(
                event,
                f"the document holds more than {MAX_EXPANDED_BYTES} bytes of scalar text once "
                f"its aliases are expanded (MAX_EXPANDED_BYTES); repeat less text through "
                "aliases, or split the file",
                LIMIT,
            )

    def _add(self, node: Node, height: int) -> None:
        if not self._stack:
            self._root = node
            return
        parent = self._stack[-1]
        if height + 1 > parent.height:
            parent.height = height + 1
        container = parent.node
        if isinstance(container, Sequence):
            container.items.append(node)
        elif parent.key is None:
            parent.key = node
        else:
            container.pairs.append((parent.key, node))
            parent.key = None


def _position(event: yaml.Event) -> tuple[int, int]:
    mark = event.start_mark
    if mark is None:  # pragma: no cover - libyaml marks every event
        return 0, 0
    return mark.line + 1, mark.column + 1


def _at(event: object, message: str, kind: str = SCHEMA) -> YamlError:
    mark = getattr(event, "start_mark", None)
    if mark is None:  # pragma: no cover - every libyaml event has a mark
        return YamlError(message, kind=kind)
    line, column = mark.line + 1, mark.column + 1
    return YamlError(f"{message} at line {line} column {column}", line, column, kind=kind)


_DEPTH_PROBLEM: Final = (
    f"the document nests sequences and mappings more than {MAX_NESTING_DEPTH} levels deep "
    "(MAX_NESTING_DEPTH, recursion limit exceeded); flatten it"
)


def _depth_error(event: object) -> YamlError:
    return _at(event, _DEPTH_PROBLEM, LIMIT)
