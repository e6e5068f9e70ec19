"""A structured answer read as it streams, checked against the output schema as a prefix.

:class:`PartialOutput` feeds the ``Delta`` texts of a structured-output stream to a
:class:`~templiqx_contracts.PartialJSON` reader and checks what has arrived against the
contract's output schema *as a prefix*: a required member may still be missing, a string may
still grow, but some problems can already be seen and can no longer be repaired by anything the
model sends later. Each is reported once, as a ``TQX_OUTPUT_SCHEMA`` diagnostic at the JSON
pointer of the value (under ``/output``), as soon as it shows:

* a value of the wrong JSON type, from its first character (``"`` where the schema wants a
  number; ``integer`` against a fractional number is decided when the number is complete);
* a member the schema does not declare, when ``additionalProperties`` is ``false``, as soon as
  its name has been read;
* a string longer than ``maxLength``, or one no ``enum`` or ``const`` string begins with, while
  it is still arriving;
* more items than ``maxItems``, when the first one too many is complete;
* any other failure of a complete value (bounds, formats, patterns of the subset: whatever the
  engine reports for it on its own), and of a complete object or array against its own keywords
  (``required``, ``minItems``, ``uniqueItems``, ``enum``, ``const``).

Every signal is sound: the complete answer will fail the schema at that pointer, so a host may
act on the first one (cancel the call, say). The checks run only for a schema inside the
bounded subset (:mod:`templiqx_core.bounded`), where each keyword's meaning is local; any other
schema is still read, and judged only when complete. :attr:`PartialOutput.final_problems` is
then exactly what :func:`~templiqx_core.validate_output` reports for the receipt.

Each step of the reader is checked once, so checking adds time linear in the stream, like the
reading itself. Malformed JSON is reported as one ``TQX_RUNTIME_INVALID_RESPONSE`` diagnostic
(the code a runtime gives a structured answer that is not JSON), never raised.
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from templiqx_contracts import (
    PARTIAL_JSON_MAX_BYTES,
    PARTIAL_JSON_MAX_DEPTH,
    Diagnostic,
    PartialChange,
    PartialEvent,
    PartialJSON,
    PartialJSONError,
    PartialValue,
    ValuePath,
)
from templiqx_core import codes
from templiqx_core.bounded import validate_bounded_schema
from templiqx_core.schema import compile_schema, validate_instance
from templiqx_core.values import validate_output

__all__ = ["OutputUpdate", "PartialOutput", "output_pointer"]

# Keywords a complete object or array is checked against on its own (its members and items
# have been checked as they completed; maxItems and additionalProperties as they arrived).
_CONTAINER_KEYWORDS = ("type", "required", "minItems", "uniqueItems", "enum", "const")
_INVALID_RESPONSE_HELP = (
    "The model's structured answer is not JSON; check the contract asks for JSON output and "
    "that the runtime supports structured output."
)


def output_pointer(path: ValuePath) -> str:
    """The JSON pointer of ``path`` under ``/output`` (``~`` and ``/`` escaped)."""
    parts = ["/output"]
    for step in path:
        parts.append("/" + str(step).replace("~", "~0").replace("/", "~1"))
    return "".join(parts)


def _article(type_name: str) -> str:
    return f"an {type_name}" if type_name[0] in "aeiou" else f"a {type_name}"


class OutputUpdate:
    """What one :meth:`PartialOutput.feed` produced.

    ``problems`` are the schema (or JSON) problems first seen in this feed; ``partial`` is the
    reader's :class:`~templiqx_contracts.PartialValue` (``None`` once the stream is malformed);
    ``changes`` is what this feed changed in the value, when the output records changes (a feed
    that turned out malformed has those of the text before the malformed byte).
    """

    __slots__ = ("_output", "changes", "partial", "problems")

    def __init__(
        self,
        output: PartialOutput,
        partial: PartialValue | None,
        problems: tuple[Diagnostic, ...],
        changes: tuple[PartialChange, ...] = (),
    ) -> None:
        self._output = output
        self.partial = partial
        self.problems = problems
        self.changes = changes

    @property
    def value(self) -> Any:
        """The answer so far (see :attr:`PartialOutput.value`)."""
        return self._output.value

    @property
    def done(self) -> bool:
        """Whether the answer is complete."""
        return self._output.done

    def __repr__(self) -> str:
        return f"OutputUpdate(value={self.value!r}, problems={len(self.problems)})"


class PartialOutput:
    """Read a structured answer from its ``Delta`` texts and check it against ``schema``.

    Parameters
    ----------
    schema:
        The contract's ``output_schema`` (``None``: read only).
    partial_strings:
        Show unfinished strings as their prefix (see :class:`~templiqx_contracts.PartialJSON`).
    changes:
        Record what each feed changed in the value (:attr:`OutputUpdate.changes`, see
        :class:`~templiqx_contracts.PartialJSON`).
    max_bytes, max_depth:
        The reader's bounds.

    Examples
    --------
    >>> schema = {"type": "object", "additionalProperties": False,
    ...           "properties": {"status": {"type": "string", "enum": ["open", "closed"]}}}
    >>> output = PartialOutput(schema)
    >>> [d.message for d in output.feed('{"status": "op').problems]
    []
    >>> [d.message for d in output.feed('x').problems]
    ["no value allowed here begins with 'opx'"]
    """

    def __init__(
        self,
        schema: Any | None = None,
        *,
        partial_strings: bool = False,
        changes: bool = False,
        max_bytes: int | None = PARTIAL_JSON_MAX_BYTES,
        max_depth: int = PARTIAL_JSON_MAX_DEPTH,
    ) -> None:
        self._schema = schema
        self._reader = PartialJSON(
            partial_strings=partial_strings,
            events=True,
            changes=changes,
            max_bytes=max_bytes,
            max_depth=max_depth,
        )
        self._checking = schema is not None and _checkable(schema)
        # The schema of each open object or array (None: unconstrained or already wrong).
        self._open: dict[ValuePath, dict[str, Any] | None] = {}
        self._reported: set[tuple[str, ValuePath]] = set()
        self._flagged: set[ValuePath] = set()  # values already signalled: not judged again
        self._problems: list[Diagnostic] = []
        self._new: list[Diagnostic] = []
        self._failed = False
        self._final: list[Diagnostic] | None = None
        # The string being read (the reader's path object, the same for its whole length) and
        # what its schema limits: maxLength and the strings enum/const allow.
        self._growing_path: ValuePath | None = None
        self._growing_rules: tuple[int | None, list[str] | None] | None = None

    @property
    def value(self) -> Any:
        """The answer so far: the reader's live value (``MISSING`` before anything shows)."""
        return self._reader.value

    @property
    def done(self) -> bool:
        """Whether the answer is complete."""
        return self._reader.done

    @property
    def complete_paths(self) -> Set[ValuePath]:
        """Every path whose value is complete (a live, read-only set)."""
        return self._reader.complete_paths

    @property
    def checking(self) -> bool:
        """Whether the answer is checked as it arrives (a schema inside the bounded subset)."""
        return self._checking

    @property
    def problems(self) -> tuple[Diagnostic, ...]:
        """Every problem seen so far, in the order seen."""
        return tuple(self._problems)

    @property
    def final_problems(self) -> tuple[Diagnostic, ...] | None:
        """What :func:`~templiqx_core.validate_output` reports for the complete answer.

        ``None`` until the answer is complete (or when there is no schema, or the stream was
        malformed).
        """
        if self._final is None and self.done and self._schema is not None and not self._failed:
            self._final = validate_output(self._schema, self._reader.value)
        return None if self._final is None else tuple(self._final)

    def feed(self, text: str) -> OutputUpdate:
        """Read the next ``Delta`` text; never raises for what the text holds."""
        if self._failed:
            return OutputUpdate(self, None, ())
        try:
            partial = self._reader.feed(text)
        except PartialJSONError as error:
            return self._malformed(error)
        return self._after(partial)

    def finish(self) -> OutputUpdate:
        """The stream has ended: complete a top-level number, or report a truncated answer."""
        if self._failed:
            return OutputUpdate(self, None, ())
        try:
            partial = self._reader.finish()
        except PartialJSONError as error:
            return self._malformed(error)
        return self._after(partial)

    # -- checking ---------------------------------------------------------------------------

    def _after(self, partial: PartialValue) -> OutputUpdate:
        self._new = []
        if self._checking:
            for event in partial.events:
                self._check(event)
            growing = self._reader.growing
            if growing is not None:
                self._check_growing(growing)
        if not self._new:
            return OutputUpdate(self, partial, (), partial.changes)
        problems = tuple(self._new)
        self._problems.extend(problems)
        return OutputUpdate(self, partial, problems, partial.changes)

    def _malformed(self, error: PartialJSONError) -> OutputUpdate:
        self._failed = True
        problem = Diagnostic.error(
            error.code,  # the runtime's code for a structured answer that is not JSON
            f"the streamed answer is not JSON: {error.reason} (at byte {error.offset})",
            "/output",
            help=_INVALID_RESPONSE_HELP,
        )
        self._problems.append(problem)
        return OutputUpdate(self, None, (problem,), self._reader.changes)

    def _report(self, rule: str, path: ValuePath, message: str) -> None:
        if (rule, path) in self._reported:
            return
        self._reported.add((rule, path))
        self._flagged.add(path)
        self._new.append(codes.problem(codes.OUTPUT_SCHEMA, message, output_pointer(path)))

    def _schema_at(self, path: ValuePath) -> dict[str, Any] | None:
        """The schema that governs the value at ``path`` (``None``: unconstrained)."""
        if not path:
            return self._schema if isinstance(self._schema, dict) else None
        parent = self._open.get(path[:-1])
        if parent is None:
            return None
        step = path[-1]
        if isinstance(step, int):
            items = parent.get("items")
            return items if isinstance(items, dict) else None
        properties = parent.get("properties")
        if isinstance(properties, dict):
            child = properties.get(step)
            if isinstance(child, dict):
                return child
        return None

    def _check(self, event: PartialEvent) -> None:
        kind, path, value = event
        if kind == "key":
            self._check_member(path, value)
            return
        if kind == "start":
            schema = self._schema_at(path)
            wrong = schema is not None and not _type_allows(schema.get("type"), value)
            if wrong and schema is not None:
                self._report(
                    "type",
                    path,
                    f"expected {_article(schema['type'])}, the answer has {_article(value)}",
                )
            if value in ("object", "array"):
                self._open[path] = None if wrong else schema
            return
        if isinstance(value, (dict, list)):
            schema = self._open.pop(path, None)
            if schema is not None:
                self._check_container(path, value, schema)
            if path and isinstance(path[-1], int):
                self._check_item_count(path)
            return
        if path and isinstance(path[-1], int):
            self._check_item_count(path)
        schema = self._schema_at(path)
        if schema is not None and path not in self._flagged:
            self._check_complete(path, value, schema)

    def _check_member(self, path: ValuePath, name: str) -> None:
        parent = self._open.get(path[:-1])
        if parent is None or parent.get("additionalProperties") is not False:
            return
        properties = parent.get("properties")
        if not isinstance(properties, dict) or name not in properties:
            self._report(
                "member",
                path,
                f"member {name!r} is not allowed here: the schema declares no such member and "
                "sets additionalProperties to false",
            )

    def _check_item_count(self, path: ValuePath) -> None:
        parent = self._open.get(path[:-1])
        if parent is None:
            return
        limit = parent.get("maxItems")
        index = path[-1]
        if isinstance(limit, int) and isinstance(index, int) and index >= limit:
            self._report("maxItems", path[:-1], f"the array has more than {limit} items")

    def _check_complete(self, path: ValuePath, value: Any, schema: dict[str, Any]) -> None:
        found: list[Diagnostic] = []
        validate_instance(schema, value, output_pointer(path), codes.OUTPUT_SCHEMA, found)
        if found and ("complete", path) not in self._reported:
            self._reported.add(("complete", path))
            self._new.extend(found)

    def _check_container(self, path: ValuePath, value: Any, schema: dict[str, Any]) -> None:
        own = {key: schema[key] for key in _CONTAINER_KEYWORDS if key in schema}
        if len(own) > 1:  # more than "type", which was checked when it opened
            self._check_complete(path, value, own)

    def _check_growing(self, path: ValuePath) -> None:
        if path is not self._growing_path:  # a new string: find its rules once
            self._growing_path = path
            schema = self._schema_at(path)
            self._growing_rules = None if schema is None else _string_rules(schema)
        rules = self._growing_rules
        if rules is None or path in self._flagged:
            return
        limit, candidates = rules
        length = self._reader.growing_length()
        if limit is not None and length > limit:
            self._report("maxLength", path, f"the string is longer than {limit} characters")
        if candidates is None or path in self._flagged:
            return
        longest = max((len(candidate) for candidate in candidates), default=-1)
        if length > longest:
            message = "the string is already longer than every value allowed here"
        else:
            prefix = self._reader.growing_text() or ""
            if any(candidate.startswith(prefix) for candidate in candidates):
                return
            message = f"no value allowed here begins with {prefix!r}"
        self._report("prefix", path, message)


def _checkable(schema: Any) -> bool:
    """Whether ``schema`` compiles and stays inside the bounded subset (so checks are local)."""
    if compile_schema(schema).error is not None:
        return False
    found: list[Diagnostic] = []
    validate_bounded_schema(schema, "", found)
    return not found


def _type_allows(type_name: Any, kind: str) -> bool:
    if not isinstance(type_name, str):
        return True
    if kind == "number":
        return type_name in ("number", "integer")
    return type_name == kind


def _string_rules(schema: dict[str, Any]) -> tuple[int | None, list[str] | None] | None:
    """What ``schema`` limits while a string grows: ``maxLength`` and the strings ``enum`` or
    ``const`` allow (``None`` when it limits neither)."""
    limit = schema.get("maxLength")
    if not isinstance(limit, int) or isinstance(limit, bool):
        limit = None
    candidates = _string_candidates(schema)
    if limit is None and candidates is None:
        return None
    return limit, candidates


def _string_candidates(schema: dict[str, Any]) -> list[str] | None:
    """The strings a value may be by ``enum``/``const`` (``None``: no such constraint)."""
    candidates: list[str] | None = None
    if "enum" in schema and isinstance(schema["enum"], list):
        candidates = [value for value in schema["enum"] if isinstance(value, str)]
    if "const" in schema:
        const = schema["const"]
        allowed = [const] if isinstance(const, str) else []
        candidates = allowed if candidates is None else [c for c in candidates if c in allowed]
    return candidates
