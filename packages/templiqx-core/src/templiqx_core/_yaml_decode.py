"""Schema-directed reading of raw YAML nodes: strings, booleans, lists, maps, structs, JSON.

Every reader takes ``(node, path, buffered)``. ``buffered`` is true inside content nodes,
expressions and component definitions — the places the reference reads through serde's
buffered (internally tagged / untagged) enums. There a string field or key accepts only a scalar
that *resolves* to a string, an empty scalar is ``null`` (never an empty collection) and keys
of JSON objects must resolve to strings. In "direct" positions any scalar's raw text is a
string, an empty plain scalar is an empty list or map, and JSON object keys are raw text.

Everywhere: unknown struct fields and duplicate keys are errors, complex keys are errors and
structs must be mappings. Struct fields, list items and map entries are recovery points: while
:func:`templiqx_core._recovery.collecting`, a problem there is recorded and reading goes on
with a placeholder (see that module), so one run finds every independent problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final, NoReturn, TypeAlias

from templiqx_contracts import quote_input
from templiqx_core._recovery import placeholder, register_placeholder, rename, report
from templiqx_core._yaml_scalars import (
    CORE_TAGS,
    TAG_MAP,
    TAG_SEQ,
    describe,
    resolve_scalar,
    short_tag,
)
from templiqx_core._yaml_tree import (
    DUPLICATE_KEY,
    MERGE_KEY,
    MISSING_FIELD,
    SCHEMA,
    TAG,
    UNKNOWN_FIELD,
    Mapping,
    Node,
    Scalar,
    Sequence,
    YamlError,
)
from templiqx_core.suggest import closest

__all__ = [
    "Field",
    "Reader",
    "StructSpec",
    "boolean",
    "fail",
    "json_value",
    "key_text",
    "check_collection_tag",
    "child",
    "found",
    "item",
    "list_of",
    "located",
    "map_of",
    "optional_string",
    "read_struct",
    "resolve",
    "string",
    "struct",
]

Reader: TypeAlias = Callable[[Node, str, bool], Any]


def located(node: Node, path: str, problem: str, kind: str = SCHEMA) -> YamlError:
    """The reader's error for ``node``: ``path: problem at line L column C``."""
    where = f"{path}: " if path else ""
    return YamlError(
        f"{where}{problem} at line {node.line} column {node.column}",
        node.line,
        node.column,
        kind=kind,
    )


def fail(node: Node, path: str, problem: str, kind: str = SCHEMA) -> NoReturn:
    """Raise the reader's error for ``node`` (see :func:`located`)."""
    raise located(node, path, problem, kind)


def guarded(read: Callable[[Node, str, bool], Any], node: Node, path: str, buffered: bool) -> Any:
    """``read(node, ...)``; while collecting, a problem is recorded and a placeholder returned.

    A node with a tag the reader does not accept (``!!python/object:...``) is that one
    problem, whatever its place expected: it is never read as if the tag were not there.
    """
    try:
        check_foreign_tag(node, path)
        return read(node, path, buffered)
    except YamlError as error:
        report(error, node)
        return placeholder(read)


def check_foreign_tag(node: Node, path: str) -> None:
    """Refuse a tag outside YAML's core schema (``!!python/object``, ``!custom``)."""
    tag = node.tag
    if tag is not None and tag not in CORE_TAGS:
        fail(
            node,
            path,
            f"unsupported tag `{short_tag(tag)}` on {found(node, tagged=False)}; remove the "
            "tag (templiqx reads YAML's core tags only and never builds objects from tags)",
            TAG,
        )


def child(path: str, key: str) -> str:
    """The path of field or map key ``key`` below ``path``."""
    return f"{path}.{key}" if path else key


def item(path: str, index: int) -> str:
    """The path of list item ``index`` below ``path``."""
    return f"{path}[{index}]"


def found(node: Node, *, tagged: bool = True) -> str:
    """Name what a node is, for "expected X, found Y" messages."""
    if isinstance(node, Mapping):
        return "a mapping"
    if isinstance(node, Sequence):
        return "a sequence"
    if node.style:
        return f"the string {quote_input(node.value)}"
    if not tagged or (node.tag is not None and node.tag not in CORE_TAGS):
        return f"the scalar {quote_input(node.value)}"
    try:
        return describe(resolve_scalar(node))
    except YamlError:
        return quote_input(node.value)


def resolve(node: Scalar, path: str) -> Any:
    """The JSON value of a scalar; typing errors name ``path``."""
    try:
        return resolve_scalar(node)
    except YamlError as error:
        if not path:
            raise
        raise YamlError(
            f"{path}: {error.message}", error.line, error.column, kind=error.kind
        ) from None


def _is_empty_plain(node: Node) -> bool:
    return isinstance(node, Scalar) and not node.style and node.tag is None and not node.value


def check_collection_tag(node: Sequence | Mapping, path: str) -> None:
    tag = node.tag
    if tag is None:
        return
    expected = TAG_MAP if isinstance(node, Mapping) else TAG_SEQ
    if tag != expected:
        fail(
            node,
            path,
            f"unsupported tag `{short_tag(tag)}` on {found(node)}; remove the tag",
            TAG,
        )


# --- scalars --------------------------------------------------------------------------------


def string(node: Node, path: str, buffered: bool) -> str:
    """A string field or key.

    Direct: any scalar's raw text (``1.0`` gives ``"1.0"``, ``~`` gives ``"~"``).
    Buffered: the scalar must resolve to a string (``123`` and ``true`` are errors).
    """
    if not isinstance(node, Scalar):
        fail(node, path, f"expected a string, found {found(node)}")
    if not buffered:
        return node.value
    value = resolve(node, path)
    if not isinstance(value, str):
        fail(
            node,
            path,
            f"expected a string, found {describe(value)}; quote it "
            '(for example "123") to use it as text',
        )
    return value


def boolean(node: Node, path: str, buffered: bool) -> bool:
    """A boolean field: only the plain words ``true``/``True``/``TRUE``/``false``/… ."""
    if isinstance(node, Scalar):
        value = resolve(node, path)
        if (value is True or value is False) and (buffered or not node.style):
            return bool(value)
    fail(node, path, f"expected a boolean (`true` or `false`), found {found(node)}")


def optional_string(node: Node, path: str, buffered: bool) -> str | None:
    """An optional string: null (``~``, ``null`` or empty) means absent."""
    if isinstance(node, Scalar) and resolve(node, path) is None:
        return None
    return string(node, path, buffered)


# --- JSON values ----------------------------------------------------------------------------


def json_value(node: Node, path: str, buffered: bool) -> Any:
    """A free JSON value (schemas, literals, policy values, eval data)."""
    if isinstance(node, Scalar):
        tag = node.tag
        if tag is not None and tag not in CORE_TAGS:
            fail(
                node,
                path,
                f"custom tag `{short_tag(tag)}` is not allowed in a JSON value; remove the tag",
                TAG,
            )
        return resolve(node, path)
    check_collection_tag(node, path)
    if isinstance(node, Sequence):
        values: list[Any] = []
        for index, entry in enumerate(node.items):
            try:  # inlined `guarded`: this loop runs for every node of every schema and value
                values.append(json_value(entry, item(path, index), buffered))
            except YamlError as error:
                report(error, entry)
                values.append(None)
        return values
    result: dict[str, Any] = {}
    for key_node, value_node in node.pairs:
        key = _new_key(key_node, path, buffered, result)
        if key is None:
            continue
        try:
            result[key] = json_value(value_node, child(path, key), buffered)
        except YamlError as error:
            report(error, value_node)
            result[key] = None
    return result


def key_text(node: Node, path: str, buffered: bool) -> str:
    """The text of a mapping key (raw in direct positions, resolved in buffered ones)."""
    if not isinstance(node, Scalar):
        fail(
            node,
            path,
            f"a mapping key must be a scalar, found {found(node)} (complex keys are not "
            "supported); use a plain string key",
        )
    if not buffered:
        return node.value
    value = resolve(node, path)
    if not isinstance(value, str):
        fail(
            node,
            path,
            f"a key here must be a string, found {describe(value)}; quote it "
            '(for example "1": ...)',
        )
    return value


def _duplicate(node: Node, path: str, key: str) -> NoReturn:
    fail(
        node,
        path,
        f"duplicate key `{key}`; every key may appear only once, remove one",
        DUPLICATE_KEY,
    )


MERGE: Final = "<<"
"""YAML 1.1's merge key: an ordinary key in YAML 1.2 core, which templiqx reads; in a struct
(which declares no such field) it is reported as the merge it was meant to be."""


def merge_key_error(node: Node, path: str) -> YamlError:
    """The problem of a ``<<: *anchor`` entry: there is no merging, so nothing is taken."""
    return located(
        node,
        path,
        "the merge key `<<` is not supported: YAML 1.2 has no merge, so this mapping takes "
        "no fields from the alias; write the fields out (an alias of a whole value, "
        "`key: *anchor`, still works)",
        MERGE_KEY,
    )


def _new_key(node: Node, path: str, buffered: bool, taken: dict[str, Any]) -> str | None:
    """A map key's text, or ``None`` (reported while collecting) when it is no usable key or
    repeats one of ``taken``. (In a free map ``<<`` is an ordinary key, as YAML 1.2 reads it;
    only a struct, which has no such field, refuses it as a merge key.)"""
    try:
        key = key_text(node, path, buffered)
        if key in taken:
            _duplicate(node, path, key)
    except YamlError as error:
        report(error, node)
        return None
    return key


register_placeholder(string, str)
register_placeholder(boolean, lambda: False)
register_placeholder(optional_string, lambda: None)
register_placeholder(json_value, lambda: None)


# --- collections ----------------------------------------------------------------------------


def _sequence(node: Node, path: str, buffered: bool, what: str) -> list[Node]:
    if isinstance(node, Sequence):
        check_collection_tag(node, path)
        return node.items
    if not buffered and _is_empty_plain(node):
        return []
    fail(node, path, f"expected a list of {what}, found {found(node)}")


def _mapping(node: Node, path: str, buffered: bool, what: str) -> list[tuple[Node, Node]]:
    if isinstance(node, Mapping):
        check_collection_tag(node, path)
        return node.pairs
    if not buffered and _is_empty_plain(node):
        return []
    fail(node, path, f"expected {what}, found {found(node)}")


def list_of(read: Reader, what: str) -> Reader:
    """A reader for a list whose items ``read`` decodes."""

    def read_list(node: Node, path: str, buffered: bool) -> list[Any]:
        items = _sequence(node, path, buffered, what)
        return [
            guarded(read, entry, item(path, index), buffered) for index, entry in enumerate(items)
        ]

    return register_placeholder(read_list, list)


def map_of(read: Reader, what: str) -> Reader:
    """A reader for a string-keyed map whose values ``read`` decodes."""

    def read_map(node: Node, path: str, buffered: bool) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in _mapping(node, path, buffered, f"a mapping of {what}"):
            key = _new_key(key_node, path, buffered, result)
            if key is not None:
                result[key] = guarded(read, value_node, child(path, key), buffered)
        return result

    return register_placeholder(read_map, dict)


# --- structs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """One struct field: its YAML key, Python attribute, reader and default factory."""

    key: str
    read: Reader
    default: Callable[[], Any] | None = None
    attr: str = ""

    @property
    def name(self) -> str:
        """The keyword the Struct constructor takes."""
        return self.attr or self.key


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A struct: what it is called in messages, its class and its fields."""

    what: str
    build: Callable[..., Any]
    fields: tuple[Field, ...]
    tag_key: str | None = None
    index: dict[str, Field] = dataclass_field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {field.key: field for field in self.fields})

    def expected(self) -> str:
        """The accepted keys, for messages."""
        keys = ([self.tag_key] if self.tag_key else []) + [field.key for field in self.fields]
        return ", ".join(f"`{key}`" for key in keys)


def read_struct(node: Node, path: str, buffered: bool, spec: StructSpec) -> Any:
    """Decode a mapping into ``spec.build(**fields)``: strict keys, defaults, no duplicates."""
    pairs = _mapping(node, path, buffered, spec.what)
    fields = spec.index
    values: dict[str, Any] = {}
    seen: set[str] = set()
    merged = False  # a `<<` entry: missing fields are its consequence, not new problems
    for key_node, value_node in pairs:
        try:
            key = key_text(key_node, path, buffered)
            if key == MERGE and isinstance(key_node, Scalar) and not key_node.style:
                merged = True
                raise merge_key_error(key_node, path)
            if key in seen:
                fail(
                    key_node,
                    path,
                    f"duplicate field `{key}` in {spec.what}; remove one of them",
                    DUPLICATE_KEY,
                )
        except YamlError as error:
            report(error, key_node)
            continue
        seen.add(key)
        if key == spec.tag_key:
            continue
        field = fields.get(key)
        if field is None:
            field = _unknown_field(node, key_node, value_node, key, path, spec)
            if field is None:
                continue
            seen.add(field.key)
        values[field.name] = guarded(field.read, value_node, child(path, field.key), buffered)
    for field in spec.fields:
        if field.key not in seen:
            if field.default is None:
                problem = located(
                    node, path, f"missing field `{field.key}` in {spec.what}; add it", MISSING_FIELD
                )
                if merged:  # the merge key was meant to bring it: reported with the `<<`
                    problem.follows = True
                report(problem, node, missing=field.key)
                values[field.name] = placeholder(field.read)
                continue
            values[field.name] = field.default()
    return spec.build(**values)


def _unknown_field(
    node: Node, key_node: Node, value_node: Node, key: str, path: str, spec: StructSpec
) -> Field | None:
    """Report an unknown key; the field it is read as when it is a likely misspelling.

    A key one or two keystrokes from a field the mapping lacks (``mesages``) is suggested, and
    while collecting its value is read as that field, so the problems inside it are found in
    the same run and the field is not also reported missing.
    """
    present: set[str] = set()
    if isinstance(node, Mapping):
        present = {k.value for k, _ in node.pairs if isinstance(k, Scalar)}
    candidates = [f.key for f in spec.fields if f.key not in present]
    if spec.tag_key and spec.tag_key not in present:
        candidates.insert(0, spec.tag_key)
    suggestion = closest(key, candidates)
    hint = f" (did you mean `{suggestion}`?)" if suggestion else ""
    report(
        located(
            key_node,
            path,
            f"unknown field `{key}` in {spec.what}{hint}; expected one of {spec.expected()}",
            UNKNOWN_FIELD,
        ),
        key_node,
    )
    field = spec.index.get(suggestion) if suggestion is not None else None
    if field is None or not rename(node, field.key, key_node, value_node):
        return None
    return field


def _placeholder_struct(spec: StructSpec) -> Any:
    return spec.build(
        **{
            field.name: field.default() if field.default is not None else placeholder(field.read)
            for field in spec.fields
        }
    )


def struct(spec: StructSpec) -> Reader:
    """A reader for ``spec``."""

    def read(node: Node, path: str, buffered: bool) -> Any:
        return read_struct(node, path, buffered, spec)

    return register_placeholder(read, lambda: _placeholder_struct(spec))
