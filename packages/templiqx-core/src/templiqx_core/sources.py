"""Where a diagnostic's JSON pointer sits in the YAML text it came from.

Static validation reports problems by JSON pointer (``/messages/0/content/2/expression``),
which says *what* is wrong but not *where* a person should look. :class:`SourceMap` walks a
pointer through the raw node tree the strict reader built from the text and gives the
diagnostic the ``span`` of the node it names: the value itself when it is a scalar
(``strng`` in ``type: strng``), else the key that introduces it, so a block mapping is
pointed at by its name rather than at its first child.

The walk follows the pointer conventions of the core: keys are matched verbatim (pointers are
not RFC 6901-escaped, so a key may contain ``/``), a list of scalars is addressed by the
scalar (``/contracts/<id>`` in a manifest), and a typed component's body is addressed without
its ``content`` key (``/components/<name>/<i>``). It stops — and the diagnostic points at the
deepest node it reached — where the pointer leaves the text: a key that is not there, or a
content list whose ``include`` nodes were spliced before the index (the expanded contract's
indices no longer match the file's).

:class:`ContractSource` reads a contract once in collecting mode: every independent parse
problem, the partial contract read on past them, and the static problems of that partial
contract that are not consequences of a parse problem, all located in the text.
"""

from __future__ import annotations

from typing import Any

import msgspec

from templiqx_contracts import Contract, Diagnostic, SourceSpan, ToolContractRef
from templiqx_core import codes
from templiqx_core._recovery import Collector
from templiqx_core._tokens import token_end
from templiqx_core._yaml_tree import Mapping, Node, Scalar, Sequence, YamlError, read_document
from templiqx_core.limits import MAX_DOCUMENT_BYTES
from templiqx_core.parse import CONTRACT_READER, diagnostics_of, read_collected
from templiqx_core.tool_refs import resolve_tool_contract_refs
from templiqx_core.validate import validate_contract

__all__ = ["ContractSource", "SourceMap"]


def _written_plainly(scalar: Scalar, line: str) -> bool:
    """Whether ``scalar`` stands on ``line`` exactly as its value (a plain one-line scalar)."""
    start = scalar.column - 1
    value = scalar.value
    return not scalar.style and "\n" not in value and line[start : start + len(value)] == value


def _kind(node: Mapping) -> str | None:
    """The ``kind`` of a content node or expression written as ``node``."""
    found = _entry(node, "kind")
    return found[1].value if found is not None and isinstance(found[1], Scalar) else None


def _is_include(node: Node) -> bool:
    return isinstance(node, Mapping) and _kind(node) == "include"


def _entry(mapping: Mapping, name: str) -> tuple[Node, Node] | None:
    for key, value in mapping.pairs:
        if isinstance(key, Scalar) and key.value == name:
            return key, value
    return None


class _Walk:
    """Where a pointer led: the deepest node reached, its key, and how the walk ended."""

    __slots__ = ("complete", "consequential", "depth", "key", "node")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.key: Node | None = None
        self.depth = 0
        self.complete = False
        self.consequential = False


class SourceMap:
    """Locates JSON pointers in one YAML (or JSON) text; never raises on bad text.

    ``collector``: the problems the reader recorded while reading this very tree (see
    :mod:`templiqx_core._recovery`), so a walk can tell that a pointer lands in a value that
    failed to parse, in a missing field, or in a misspelt key read as the field it meant.
    """

    def __init__(
        self,
        text: str | bytes,
        root: Node | None = None,
        collector: Collector | None = None,
        *,
        unreadable: bool = False,
    ) -> None:
        if isinstance(text, bytes):
            text = text[:MAX_DOCUMENT_BYTES].decode("utf-8", errors="replace")
        self._text = text
        self._lines: list[str] | None = None
        if root is None and not unreadable:  # a text known not to read is not read again
            try:
                root = read_document(text)
            except (YamlError, RecursionError):
                root = None
        self._root = root
        self._collector = collector if collector is not None else Collector()

    def line(self, number: int) -> str:
        """Line ``number`` (1-based) of the text, without its line break; ``""`` beyond it."""
        if self._lines is None:
            self._lines = self._text.splitlines()
        return self._lines[number - 1] if 0 < number <= len(self._lines) else ""

    def walk(self, pointer: str) -> _Walk | None:
        """Follow ``pointer`` as far as the text goes; ``None`` for ``""`` or unread text."""
        if self._root is None or not pointer.startswith("/"):
            return None
        segments = pointer.split("/")[1:]
        walk = _Walk(self._root)
        failed, missing, renamed = (
            self._collector.failed,
            self._collector.missing,
            self._collector.renamed,
        )
        index = 0
        while index < len(segments):
            node = walk.node
            if id(node) in failed:
                walk.consequential = True
                return walk
            step: tuple[Node | None, Node, int] | None = None
            if isinstance(node, Mapping):
                step = self._in_mapping(node, segments, index)
                if step is None and (id(node), segments[index]) in missing:
                    walk.consequential = True
                    return walk
                if step is None and (id(node), segments[index]) in renamed:
                    key, value = renamed[(id(node), segments[index])]
                    step = (key, value, index + 1)
            elif isinstance(node, Sequence):
                step = self._in_sequence(node, segments, index)
            if step is None:
                return walk
            walk.key, walk.node, index = step
            walk.depth += 1
        walk.complete = True
        walk.consequential = id(walk.node) in failed
        node = walk.node
        if isinstance(node, Mapping) and _kind(node) == "ref":
            path = _entry(node, "path")  # a reference is shown by its path, what was mistyped
            if path is not None:
                walk.key, walk.node = path
        return walk

    def _in_mapping(
        self, node: Mapping, segments: list[str], index: int
    ) -> tuple[Node | None, Node, int] | None:
        for end in range(index + 1, len(segments) + 1):
            found = _entry(node, "/".join(segments[index:end]))
            if found is not None:
                return found[0], found[1], end
        # a typed component's body: /components/<name>/<i> means .../content/<i>
        content = _entry(node, "content")
        if segments[index].isdigit() and content is not None:
            body = content[1]
            if isinstance(body, Sequence):
                return self._in_sequence(body, segments, index)
        return None

    def _in_sequence(
        self, node: Sequence, segments: list[str], index: int
    ) -> tuple[Node | None, Node, int] | None:
        segment = segments[index]
        if segment.isdigit():
            position = int(segment)
            if position >= len(node.items):
                return None
            if any(_is_include(item) for item in node.items[: position + 1]):
                return None  # spliced partials shift the expanded indices
            return None, node.items[position], index + 1
        for end in range(index + 1, len(segments) + 1):
            wanted = "/".join(segments[index:end])
            for item in node.items:
                if isinstance(item, Scalar) and item.value == wanted:
                    return None, item, end
        return None

    def span(self, pointer: str) -> SourceSpan | None:
        """The span of what ``pointer`` names (or of the deepest node on its way)."""
        walk = self.walk(pointer)
        if walk is None or walk.depth == 0:
            return None
        return self._span_of(walk)

    def _span_of(self, walk: _Walk) -> SourceSpan:
        node = walk.node
        target: Node = node
        if walk.key is not None and (not walk.complete or not isinstance(node, Scalar)):
            target = walk.key
        line, column = target.line, target.column
        text = self.line(line)
        if isinstance(target, Scalar) and _written_plainly(target, text):
            end = column + max(len(target.value), 1)
            return SourceSpan(line=line, column=column, end_line=line, end_column=end)
        if isinstance(target, Mapping | Sequence) and text[column - 1 : column] not in ("[", "{"):
            end = len(text.rstrip()) + 1  # a block collection item: the rest of its first line
            return SourceSpan(line=line, column=column, end_line=line, end_column=max(end, column))
        end = token_end(text, column)
        return SourceSpan(line=line, column=column, end_line=line, end_column=end)

    def consequential(self, diagnostic: Diagnostic) -> bool:
        """Whether ``diagnostic`` is about a value that already failed to parse."""
        walk = self.walk(diagnostic.json_pointer or "")
        return walk is not None and walk.consequential

    def locate(self, diagnostics: list[Diagnostic], file: str | None = None) -> list[Diagnostic]:
        """The diagnostics, each without a span given one where its pointer is in the text.

        ``file`` is set on those that have no file (whether or not a span was found).
        """
        located: list[Diagnostic] = []
        for diagnostic in diagnostics:
            changes: dict[str, Any] = {}
            if diagnostic.file is None and file is not None:
                changes["file"] = file
            if diagnostic.span is None and diagnostic.json_pointer:
                span = self.span(diagnostic.json_pointer)
                if span is not None:
                    changes["span"] = span
            located.append(
                msgspec.structs.replace(diagnostic, **changes) if changes else diagnostic
            )
        return located


class ContractSource:
    """A contract's text read for diagnostics: every problem at once, each in its place.

    ``contract`` is the parsed contract, or ``None`` when the text has parse problems;
    ``diagnostics`` are those problems (every independent one, ``TQX_PARSE_YAML``, with
    spans over the offending token). :meth:`locate` gives other diagnostics about this
    contract their place in the text, and :meth:`problems_beyond_parsing` reports what the
    static checks find in the part of a broken contract that did parse.
    """

    def __init__(self, text: str | bytes, file: str | None = None) -> None:
        self.file = file
        reading = read_collected(text, CONTRACT_READER)
        self._map = SourceMap(
            text, reading.root, reading.collector, unreadable=reading.root is None
        )
        errors = reading.errors()
        self.diagnostics = diagnostics_of(errors, text, file, reading.collector.whole)
        built = reading.value if isinstance(reading.value, Contract) else None
        self.contract: Contract | None = None if errors else built
        self._partial: Contract | None = built if errors else None

    def locate(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """``diagnostics`` with spans where their pointers are in this text, and the file."""
        return self._map.locate(diagnostics, self.file)

    def problems_beyond_parsing(
        self, tool_contracts: dict[str, ToolContractRef] | None = None
    ) -> list[Diagnostic]:
        """The static problems of what parsed in a contract that did not parse as a whole.

        Problems that follow from a parse problem (a check of a value that failed to parse or
        of a missing field) and unexpanded ``include`` nodes are left out; ``tool_contracts``
        resolves tool-contract references first, as a load would. Empty when the contract
        parsed (validate it instead) or when nothing of it could be read.
        """
        partial = self._partial
        if partial is None:
            return []
        found: list[Diagnostic] = []
        if tool_contracts:  # resolved in a copy: the partial itself stays as read
            extensions = {
                key: msgspec.structs.replace(spec) for key, spec in partial.extensions.items()
            }
            partial = msgspec.structs.replace(partial, extensions=extensions)
            found = resolve_tool_contract_refs(partial, tool_contracts)
        unresolved = bool(found)
        for diagnostic in validate_contract(partial):
            pointer = diagnostic.json_pointer or ""
            if diagnostic.code == codes.INCLUDE_UNEXPANDED or self._map.consequential(diagnostic):
                continue
            if unresolved and pointer.startswith("/extensions/"):
                continue  # the unresolved reference is reported, not the stub's schema
            found.append(diagnostic)
        return self.locate(found)
