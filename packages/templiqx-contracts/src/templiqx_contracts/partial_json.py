"""An incremental JSON reader: the value so far of a JSON document arriving in fragments.

A structured-output stream is JSON text in pieces (the ``Delta`` texts). :class:`PartialJSON`
reads each piece once, where it left off, and after every :meth:`~PartialJSON.feed` offers the
best value so far:

* an object holds the members that have a value to show, in arrival order; an object or array
  under a member shows (and fills in) as soon as it opens;
* an array holds its complete items only: an item appears when it is complete;
* numbers, ``true``, ``false`` and ``null`` appear only when complete (``12`` may become
  ``123``);
* a string appears when complete, or — with ``partial_strings=True`` — as its prefix from the
  opening quote on, wherever its container is shown (as an array's last item too).

Each value shown is a prefix-extension of the one before: members and items are only added, a
partial string only grows, and nothing shown ever changes otherwise (except that a repeated
member name replaces the earlier value, as :func:`~templiqx_contracts.decode_json` does). When
the document is complete the value equals :func:`~templiqx_contracts.decode_json` of the whole
text, with its number rules (``-0`` is the float ``-0.0``, integers beyond 64 bits become
floats, ``1e400`` is refused) and its refusal of unpaired surrogate escapes.

Cost. Every character is examined once, mostly by compiled regular expressions over whole runs
(a string's characters, a number, whitespace); nothing before the current token is read again,
so a stream costs time linear in its length. Memory is the value itself plus the unfinished
token. The value is the reader's *live* object: it grows in place with each feed, and reading
:attr:`PartialJSON.value` costs nothing beyond, with partial strings, joining the one
unfinished string. Copy it (``copy.deepcopy``) to keep a snapshot.

Malformed input raises :class:`PartialJSONError` at the first byte at which the text stops
being the beginning of any JSON document, as a UTF-8 byte offset in the whole stream (and the
reader stays failed); a document that ends early is reported by :meth:`~PartialJSON.finish` at
the end of the input.

>>> reader = PartialJSON()
>>> reader.feed('{"title": "Q3 plan", "items": [1, 2').value
{'title': 'Q3 plan', 'items': [1]}
>>> update = reader.feed('3], "owner": "Ann')
>>> update.value, ("items",) in update.complete_paths
({'title': 'Q3 plan', 'items': [1, 23]}, True)
>>> reader.feed('"}').done
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Set
from typing import Any, Final, Literal, NamedTuple, NoReturn

from templiqx_contracts.json_value import JSONDecodeError
from templiqx_contracts.partial_changes import PartialAppend, PartialChange, PartialSet, ValuePath

__all__ = [
    "MISSING",
    "PARTIAL_JSON_MAX_BYTES",
    "PARTIAL_JSON_MAX_DEPTH",
    "PartialEvent",
    "PartialJSON",
    "PartialJSONError",
    "PartialValue",
    "ValuePath",
]

PARTIAL_JSON_MAX_BYTES: Final = 2_097_152
"""The default bound on a stream's UTF-8 bytes: the runtime's cap on an assembled answer."""
PARTIAL_JSON_MAX_DEPTH: Final = 512
"""The default bound on nesting."""

_U64_MAX: Final = (1 << 64) - 1
_I64_MIN: Final = -(1 << 63)

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER_RUN = re.compile(r"[0-9eE.+\-]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_CHARS = frozenset("0123456789eE.+-")
_SPACE = frozenset(" \t\n\r")
_HEX = frozenset("0123456789abcdefABCDEF")
_LOW_SECOND_DIGIT = frozenset("cdefCDEF")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_LITERALS: dict[str, tuple[str, Any, str]] = {
    "t": ("true", True, "boolean"),
    "f": ("false", False, "boolean"),
    "n": ("null", None, "null"),
}


def _number_machine() -> tuple[dict[str, int], ...]:
    """The JSON number grammar as a table: state -> character -> next state."""
    digits = "0123456789"
    nonzero = "123456789"

    def row(**moves: str) -> dict[str, int]:
        table: dict[str, int] = {}
        for target, chars in moves.items():
            for char in chars:
                table[char] = int(target[1:])
        return table

    return (
        row(s1="-", s2="0", s3=nonzero),  # 0: start
        row(s2="0", s3=nonzero),  # 1: after "-"
        row(s4=".", s6="eE"),  # 2: "0"
        row(s3=digits, s4=".", s6="eE"),  # 3: integer digits
        row(s5=digits),  # 4: after "."
        row(s5=digits, s6="eE"),  # 5: fraction digits
        row(s7="+-", s8=digits),  # 6: after "e"
        row(s8=digits),  # 7: after the exponent's sign
        row(s8=digits),  # 8: exponent digits
    )


_NUMBER_MACHINE: Final = _number_machine()
_NUMBER_ACCEPTS: Final = frozenset({2, 3, 5, 8})

# What the reader expects next.
_VALUE, _FIRST_ITEM, _AFTER_ITEM, _FIRST_KEY, _KEY, _COLON, _AFTER_MEMBER = range(7)
_STRING, _NUMBER_TOKEN, _LITERAL, _END = range(7, 11)

_EXPECTED = {
    _VALUE: "a JSON value",
    _FIRST_ITEM: "a JSON value or ']'",
    _AFTER_ITEM: "',' or ']' after an array item",
    _FIRST_KEY: "a member name (a string) or '}'",
    _KEY: "a member name (a string)",
    _COLON: "':' after a member name",
    _AFTER_MEMBER: "',' or '}' after an object member",
}


class _Missing:
    """The value of a document of which nothing is shown yet."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
""":attr:`PartialJSON.value` before any of the document can be shown (``null`` is ``None``)."""


class PartialJSONError(JSONDecodeError):
    """The streamed text is not (the beginning of) a JSON document.

    ``offset`` is the UTF-8 byte offset, in the whole stream, of the first byte that no JSON
    document can continue with (the end of the input when it stops early); ``reason`` says what
    was wrong there. ``code`` is the stable code a host reports for it, the one a runtime uses
    for a structured answer that is not JSON.
    """

    code: Final = "TQX_RUNTIME_INVALID_RESPONSE"

    def __init__(self, reason: str, offset: int) -> None:
        self.reason = reason
        self.offset = offset
        super().__init__(f"the streamed JSON is malformed at byte {offset}: {reason}")


class PartialEvent(NamedTuple):
    """One step of the reading, for consumers that check the value as it grows.

    ``kind`` is ``"start"`` when a value begins (``value`` is its JSON type: ``"object"``,
    ``"array"``, ``"string"``, ``"number"``, ``"boolean"`` or ``"null"``), ``"key"`` when a
    member name has been read (``path`` is the member's; ``value`` is the name) and
    ``"complete"`` when a value is complete (``value`` is it). Events cover every value,
    including those inside an array item that is not shown yet.
    """

    kind: Literal["start", "key", "complete"]
    path: ValuePath
    value: Any


class _PathSet(Set[ValuePath]):
    """A read-only, live view of the complete paths (no copy per feed)."""

    __slots__ = ("_paths",)

    def __init__(self, paths: set[ValuePath]) -> None:
        self._paths = paths

    def __contains__(self, item: object) -> bool:
        return item in self._paths

    def __iter__(self) -> Iterator[ValuePath]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"{{{', '.join(sorted(map(repr, self._paths)))}}}"


class PartialValue:
    """What one :meth:`PartialJSON.feed` produced, with a view of the reader's state.

    ``value``, ``complete_paths`` and ``growing`` read the reader's current state (the same as
    after this feed until the next one); ``completed`` and ``events`` belong to this feed.
    """

    __slots__ = ("_reader", "changes", "completed", "done", "events")

    def __init__(
        self,
        reader: PartialJSON,
        completed: tuple[ValuePath, ...],
        events: tuple[PartialEvent, ...],
        done: bool,
        changes: tuple[PartialChange, ...] = (),
    ) -> None:
        self._reader = reader
        self.completed = completed
        """The paths of the values this feed completed, innermost first."""
        self.events = events
        """This feed's events (empty unless the reader was made with ``events=True``)."""
        self.changes = changes
        """What this feed changed in the value shown, as :data:`~templiqx_contracts.
        PartialChange` steps (empty unless the reader was made with ``changes=True``)."""
        self.done = done
        """Whether the document is complete."""

    @property
    def value(self) -> Any:
        """The value so far (:data:`MISSING` before any of it can be shown)."""
        return self._reader.value

    @property
    def complete_paths(self) -> Set[ValuePath]:
        """Every path whose value is complete (a live, read-only set)."""
        return self._reader.complete_paths

    @property
    def growing(self) -> ValuePath | None:
        """The path of the unfinished string, if one is being read (see :meth:`growing_text`)."""
        return self._reader.growing

    def growing_text(self) -> str | None:
        """The unfinished string read so far, whether or not partial strings are shown."""
        return self._reader.growing_text()

    def __repr__(self) -> str:
        return f"PartialValue(value={self.value!r}, done={self.done})"


class _Frame:
    """An open object or array."""

    __slots__ = ("container", "is_object", "slot", "visible")

    def __init__(self, container: Any, is_object: bool, visible: bool) -> None:
        self.container = container
        self.is_object = is_object
        self.visible = visible
        """Whether the container is part of the value shown (an array item shows complete)."""
        self.slot: str | int = 0
        """The member name being read (objects) or the next item's index (arrays)."""


_NO_EVENTS: Final[tuple[PartialEvent, ...]] = ()
_LOOSE_PIECES: Final = 512
"""Pieces of an unfinished token kept apart before they are joined into one chunk."""


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _show(char: str) -> str:
    return "the end of the input" if not char else repr(char)


class PartialJSON:
    """Read one JSON document from its fragments, offering the value so far after each.

    Parameters
    ----------
    partial_strings:
        Show an unfinished string as its prefix (from ``""`` on). Off by default: a string then
        appears when complete.
    events:
        Record :class:`PartialEvent` steps in each :class:`PartialValue` (for checkers such as
        the core's output-schema prefix check). Off by default.
    changes:
        Record what each feed changed in the value shown, as
        :data:`~templiqx_contracts.PartialChange` steps (:attr:`PartialValue.changes`):
        applying them all, in order, to ``MISSING`` gives :attr:`value`. Each costs time and
        size proportional to what is new, never to the value so far. Off by default.
    max_bytes:
        Refuse a stream longer than this many UTF-8 bytes (``None``: no bound). The default is
        the runtime's cap on an assembled answer, 2 MiB.
    max_depth:
        Refuse objects and arrays nested deeper than this.

    See Also
    --------
    templiqx_contracts.decode_json : what the complete text decodes to (the same value).
    """

    def __init__(
        self,
        *,
        partial_strings: bool = False,
        events: bool = False,
        changes: bool = False,
        max_bytes: int | None = PARTIAL_JSON_MAX_BYTES,
        max_depth: int = PARTIAL_JSON_MAX_DEPTH,
    ) -> None:
        self._partial_strings = partial_strings
        self._record = events
        self._record_changes = changes
        self._changes: list[PartialChange] = []
        self._last_changes: tuple[PartialChange, ...] = ()
        self._max_bytes = max_bytes
        self._max_depth = max_depth
        self._root: Any = MISSING
        self._done = False
        self._error: PartialJSONError | None = None
        self._bytes = 0  # UTF-8 bytes of the previous feeds
        self._mode = _VALUE
        self._stack: list[_Frame] = []
        self._path: list[str | int] = []
        self._complete: set[ValuePath] = set()
        self._completed: list[ValuePath] = []
        self._events: list[PartialEvent] = []
        # The token being read: string pieces, escape so far, a high surrogate awaiting its
        # low half; number pieces and machine state; literal word and letters matched.
        self._pieces: list[str] = []
        self._chunks = 0  # leading pieces that are already chunks of joined pieces
        self._length = 0  # characters of the string being read
        self._announced = -1  # its characters the changes have shown (-1: none, not even "")
        self._string_path: ValuePath | None = None  # its path, once asked for
        self._is_key = False
        self._escape = ""
        self._high = 0
        self._shown_in_array = False
        self._number_state = 0
        # Where the number being read began: a character index in the current fragment, or
        # (-1 and) a byte offset once it continues into a later fragment.
        self._token_index = -1
        self._token_start = 0
        self._word = ""
        self._word_value: Any = None
        self._matched = 0

    # -- the public view --------------------------------------------------------------------

    @property
    def value(self) -> Any:
        """The value so far: the reader's live object (:data:`MISSING` before anything shows)."""
        if self._mode == _STRING and self._partial_strings and not self._is_key:
            self._show_growing_string()
        return self._root

    @property
    def done(self) -> bool:
        """Whether the document is complete (a top-level number completes at :meth:`finish`)."""
        return self._done

    @property
    def complete_paths(self) -> Set[ValuePath]:
        """Every path whose value is complete, as a live, read-only set."""
        return _PathSet(self._complete)

    @property
    def growing(self) -> ValuePath | None:
        """The path of the string value being read, ``None`` between values."""
        if self._mode == _STRING and not self._is_key:
            if self._string_path is None:
                self._string_path = tuple(self._path)
            return self._string_path
        return None

    def growing_text(self) -> str | None:
        """The string value being read, as far as it has arrived (``None`` between values)."""
        if self._mode != _STRING or self._is_key:
            return None
        return self._joined()

    @property
    def changes(self) -> tuple[PartialChange, ...]:
        """What the last :meth:`feed` or :meth:`finish` changed in the value shown (also one
        that raised: what it read before the malformed byte), when the reader records changes."""
        return self._last_changes

    def growing_length(self) -> int:
        """How many characters of the string value being read have arrived (0 between values).

        Costs nothing, unlike :meth:`growing_text`, which joins the pieces.
        """
        return self._length if self._mode == _STRING and not self._is_key else 0

    def feed(self, text: str) -> PartialValue:
        """Read the next fragment; return what it completed and a view of the value so far.

        Raises :class:`PartialJSONError` when the text can no longer be a JSON document (and on
        every later call).
        """
        if self._error is not None:
            self._last_changes = ()
            raise self._error
        completed = self._completed
        completed.clear()
        if self._record:
            self._events.clear()
        size = len(text) if text.isascii() else _utf8_length(text)
        if self._max_bytes is not None and self._bytes + size > self._max_bytes:
            self._last_changes = ()
            self._fail_at(
                f"the stream is longer than the {self._max_bytes}-byte limit", self._max_bytes
            )
        if (
            self._mode == _STRING
            and not self._escape
            and not self._high
            and _STRING_RUN.fullmatch(text) is not None
        ):  # the fragment only continues the string being read: the common case, made short
            if text:
                pieces = self._pieces
                pieces.append(text)
                self._length += len(text)
                if len(pieces) > self._chunks + _LOOSE_PIECES:
                    self._compact()
                self._bytes += size
            if not self._record_changes:
                return PartialValue(self, (), _NO_EVENTS, False)
            self._changes.clear()
            self._announce_growing()
            self._last_changes = tuple(self._changes)
            return PartialValue(self, (), _NO_EVENTS, False, self._last_changes)
        if not self._record_changes:
            self._consume(text)
            self._bytes += size
            events = tuple(self._events) if self._record else _NO_EVENTS
            return PartialValue(self, tuple(completed), events, self._done)
        self._changes.clear()
        try:
            self._consume(text)
        finally:  # what was read before a malformed byte is shown too
            self._announce_growing()
            self._last_changes = tuple(self._changes)
        self._bytes += size
        events = tuple(self._events) if self._record else _NO_EVENTS
        return PartialValue(self, tuple(completed), events, self._done, self._last_changes)

    def finish(self) -> PartialValue:
        """Declare the input ended: complete a top-level number, or report a truncated document."""
        self._last_changes = ()
        if self._error is not None:
            raise self._error
        self._completed.clear()
        self._events.clear()
        self._changes.clear()
        if self._mode == _NUMBER_TOKEN and not self._stack:
            if self._number_state not in _NUMBER_ACCEPTS:
                self._fail_at("the number is unfinished", self._bytes)
            self._finish_number("")
            self._last_changes = tuple(self._changes)
        if not self._done:
            self._fail_at(self._where_it_ended(), self._bytes)
        return PartialValue(
            self, tuple(self._completed), tuple(self._events), self._done, self._last_changes
        )

    # -- errors -----------------------------------------------------------------------------

    def _fail_at(self, reason: str, offset: int) -> NoReturn:
        self._error = PartialJSONError(reason, offset)
        raise self._error

    def _fail(self, reason: str, text: str, index: int) -> NoReturn:
        self._fail_at(reason, self._bytes + _utf8_length(text[:index]))

    def _where_it_ended(self) -> str:
        if self._mode == _STRING:
            inside = "a member name" if self._is_key else "a string"
        elif self._mode == _NUMBER_TOKEN:
            inside = "a number"
        elif self._mode == _LITERAL:
            inside = repr(self._word)
        elif self._stack:
            inside = "an object" if self._stack[-1].is_object else "an array"
        else:
            return "the stream ended before any JSON value"
        return f"the document ends early, inside {inside}"

    # -- building the value -----------------------------------------------------------------

    def _event(self, kind: Literal["start", "key", "complete"], value: Any) -> None:
        self._events.append(PartialEvent(kind, tuple(self._path), value))

    def _complete_value(self, value: Any, tail: str | None = None) -> None:
        """Place the complete ``value``; ``tail``: what a string shown while growing still
        lacked (``None`` for any other value)."""
        path = tuple(self._path)
        self._complete.add(path)
        self._completed.append(path)
        if self._record:
            self._events.append(PartialEvent("complete", path, value))
        stack = self._stack
        if self._record_changes and (not stack or stack[-1].visible):
            if tail is not None:
                if tail:
                    self._changes.append(PartialAppend(path, tail))
            elif (stack and not stack[-1].is_object) or not isinstance(value, (dict, list)):
                # An array's item shows once complete; an object opened under a visible
                # object (or as the root) showed, empty, when it opened.
                self._changes.append(PartialSet(path, value))
        if not stack:
            self._root = value
            self._mode = _END
            self._done = True
            return
        top = stack[-1]
        if top.is_object:
            top.container[top.slot] = value
            self._mode = _AFTER_MEMBER
        else:
            top.container.append(value)
            top.slot = self._path[-1] = len(top.container)
            self._mode = _AFTER_ITEM

    def _open(self, is_object: bool, text: str, index: int) -> None:
        stack = self._stack
        if len(stack) >= self._max_depth:
            self._fail(f"objects and arrays nest deeper than {self._max_depth} levels", text, index)
        container: Any = {} if is_object else []
        if self._record:
            self._event("start", "object" if is_object else "array")
        if not stack:
            self._root = container
            visible = True
        else:
            parent = stack[-1]
            visible = parent.is_object and parent.visible
            if parent.is_object:
                parent.container[parent.slot] = container
        if visible and self._record_changes:
            self._changes.append(PartialSet(tuple(self._path), {} if is_object else []))
        stack.append(_Frame(container, is_object, visible))
        self._path.append(0)
        self._mode = _FIRST_KEY if is_object else _FIRST_ITEM

    def _close(self) -> None:
        frame = self._stack.pop()
        self._path.pop()
        self._complete_value(frame.container)

    def _begin_string(self, is_key: bool) -> None:
        self._pieces = []
        self._chunks = 0
        self._length = 0
        self._announced = -1
        self._is_key = is_key
        self._string_path = tuple(self._path) if self._record_changes and not is_key else None
        self._shown_in_array = False
        self._mode = _STRING
        if not is_key and self._record:
            self._event("start", "string")

    def _joined(self) -> str:
        pieces = self._pieces
        if len(pieces) == 1:
            self._chunks = 1
            return pieces[0]
        joined = "".join(pieces)
        pieces[:] = [joined]  # keep the next join proportional to what arrives later
        self._chunks = 1
        return joined

    def _tail(self, count: int) -> str:
        """The last ``count`` characters of the string being read (``count`` > 0), joined
        from the pieces that hold them only."""
        pieces = self._pieces
        if len(pieces[-1]) == count:  # what arrived since the last feed is one piece
            return pieces[-1]
        parts: list[str] = []
        index = len(pieces)
        while count > 0:
            index -= 1
            piece = pieces[index]
            if len(piece) <= count:
                parts.append(piece)
                count -= len(piece)
            else:
                parts.append(piece[len(piece) - count :])
                count = 0
        parts.reverse()
        return "".join(parts)

    def _announce_growing(self) -> None:
        """Record what the unfinished string shown gained since the last feed."""
        if self._mode != _STRING or self._is_key or not self._partial_strings:
            return
        stack = self._stack
        if stack and not stack[-1].visible:
            return
        announced = self._announced
        path = self._string_path
        assert path is not None  # set when the string began, as changes are recorded
        if announced < 0:  # it began in this feed: all of it is new
            self._changes.append(PartialSet(path, self._joined()))
        elif self._length > announced:
            self._changes.append(PartialAppend(path, self._tail(self._length - announced)))
        self._announced = self._length

    def _show_growing_string(self) -> None:
        stack = self._stack
        if not stack:
            self._root = self._joined()
            return
        top = stack[-1]
        if not top.visible:
            return
        if top.is_object:
            top.container[top.slot] = self._joined()
        elif self._shown_in_array:
            top.container[-1] = self._joined()
        else:
            top.container.append(self._joined())
            self._shown_in_array = True

    def _end_string(self) -> None:
        value = self._joined()
        self._pieces = []
        self._chunks = 0
        if self._is_key:
            top = self._stack[-1]
            top.slot = self._path[-1] = value
            if self._record:
                self._event("key", value)
            self._mode = _COLON
            return
        if self._shown_in_array:
            self._stack[-1].container.pop()  # the prefix shown; the complete string replaces it
            self._shown_in_array = False
        announced = self._announced
        self._complete_value(value, value[announced:] if announced >= 0 else None)

    def _finish_number(self, fragment: str) -> None:
        number = "".join(self._pieces)
        self._pieces = []
        self._chunks = 0
        self._complete_value(self._convert_number(number, fragment, self._token_index))

    def _convert_number(self, number: str, fragment: str, index: int) -> int | float:
        """The value of a complete number token (``index``: where it began in ``fragment``)."""
        try:
            if "." in number or "e" in number or "E" in number:
                value = float(number)
                if value in (float("inf"), float("-inf")):
                    raise OverflowError
                return value
            if number == "-0":
                return -0.0
            integer = int(number)
            if integer > _U64_MAX or integer < _I64_MIN:
                return float(integer)
            return integer
        except (OverflowError, ValueError):
            # Out of float range, or more digits than int() reads.
            offset = (
                self._bytes + _utf8_length(fragment[:index]) if index >= 0 else self._token_start
            )
            shown = number if len(number) <= 40 else number[:40] + "..."
            self._fail_at(f"the number {shown} is out of range", offset)

    # -- the scanner ------------------------------------------------------------------------

    def _consume(self, text: str) -> None:
        n = len(text)
        i = 0
        while i < n:
            mode = self._mode
            if mode == _STRING:
                if self._escape or self._high:
                    i = self._escape_step(text, i)
                    continue
                j = _STRING_RUN.match(text, i).end()  # type: ignore[union-attr]
                if j > i:
                    self._pieces.append(text[i:j])
                    self._length += j - i
                if j == n:  # (within a fragment, escapes check for compaction)
                    if len(self._pieces) > self._chunks + _LOOSE_PIECES:
                        self._compact()
                    return
                char = text[j]
                if char == '"':
                    self._end_string()
                elif char == "\\":
                    self._escape = "\\"
                else:
                    self._fail(
                        f"control character U+{ord(char):04X} must be escaped in a string", text, j
                    )
                i = j + 1
                continue
            if mode == _NUMBER_TOKEN:
                j = _NUMBER_RUN.match(text, i).end()  # type: ignore[union-attr]
                state = self._number_state
                for k in range(i, j):
                    following = _NUMBER_MACHINE[state].get(text[k])
                    if following is None:
                        self._fail(f"{_show(text[k])} cannot continue the number", text, k)
                    state = following
                self._number_state = state
                self._pieces.append(text[i:j])
                if len(self._pieces) > self._chunks + _LOOSE_PIECES:
                    self._compact()
                if j == n:
                    if self._token_index >= 0:  # continues in a later fragment
                        self._token_start = self._bytes + _utf8_length(text[: self._token_index])
                        self._token_index = -1
                    return
                if state not in _NUMBER_ACCEPTS:
                    self._fail(f"{_show(text[j])} cannot continue the number", text, j)
                self._finish_number(text)
                i = j
                continue
            if mode == _LITERAL:
                word = self._word
                matched = self._matched
                while i < n and matched < len(word):
                    if text[i] != word[matched]:
                        self._fail(f"{_show(text[i])} cannot continue {word!r}", text, i)
                    i += 1
                    matched += 1
                self._matched = matched
                if matched == len(word):
                    self._complete_value(self._word_value)
                continue
            char = text[i]
            if char in _SPACE:
                i = _WHITESPACE.match(text, i).end()  # type: ignore[union-attr]
                continue
            if mode == _AFTER_MEMBER:
                if char == ",":
                    self._mode = _KEY
                elif char == "}":
                    self._close()
                else:
                    self._fail(f"expected {_EXPECTED[mode]}, found {_show(char)}", text, i)
                i += 1
            elif mode == _AFTER_ITEM:
                if char == ",":
                    self._mode = _VALUE
                elif char == "]":
                    self._close()
                else:
                    self._fail(f"expected {_EXPECTED[mode]}, found {_show(char)}", text, i)
                i += 1
            elif mode in (_KEY, _FIRST_KEY):
                if char == '"':
                    self._begin_string(is_key=True)
                elif char == "}" and mode == _FIRST_KEY:
                    self._close()
                else:
                    self._fail(f"expected {_EXPECTED[mode]}, found {_show(char)}", text, i)
                i += 1
            elif mode == _COLON:
                if char != ":":
                    self._fail(f"expected {_EXPECTED[mode]}, found {_show(char)}", text, i)
                self._mode = _VALUE
                i += 1
            elif mode == _END:
                self._fail(f"{_show(char)} follows the complete document", text, i)
            elif char == "]" and mode == _FIRST_ITEM:
                self._close()
                i += 1
            else:
                i = self._start_value(text, i, char)

    def _start_value(self, text: str, i: int, char: str) -> int:
        """Begin the value at ``text[i]`` (``char``); return where reading continues."""
        if char == '"':
            self._begin_string(is_key=False)
            return i + 1
        if char == "{" or char == "[":
            self._open(char == "{", text, i)
            return i + 1
        if char in _NUMBER_CHARS and char not in "eE.+":
            if self._record:
                self._event("start", "number")
            match = _NUMBER.match(text, i)
            if match is not None:
                j = match.end()
                if j < len(text) and text[j] not in _NUMBER_CHARS:
                    self._complete_value(self._convert_number(text[i:j], text, i))
                    return j
            # Unfinished here (or malformed): read it character by character.
            self._token_index = i
            self._pieces = []
            self._chunks = 0
            self._number_state = 0
            self._mode = _NUMBER_TOKEN
            return i
        literal = _LITERALS.get(char)
        if literal is None:
            self._fail(f"expected {_EXPECTED[self._mode]}, found {_show(char)}", text, i)
        word, value, kind = literal
        if self._record:
            self._event("start", kind)
        if text.startswith(word, i):
            self._complete_value(value)
            return i + len(word)
        self._word, self._word_value, self._matched = word, value, 0
        self._mode = _LITERAL
        return i

    def _escape_step(self, text: str, i: int) -> int:
        """Read one character of an escape (or of the low half a high surrogate awaits)."""
        char = text[i]
        escape = self._escape
        if not escape:  # a high surrogate was read: its low half must follow at once
            if char != "\\":
                self._fail("a high surrogate escape must be followed by its low half", text, i)
            self._escape = "\\"
            return i + 1
        if len(escape) == 1:
            if self._high:
                if char != "u":
                    self._fail("a high surrogate escape must be followed by its low half", text, i)
            elif char in _SIMPLE_ESCAPES:
                self._add_char(_SIMPLE_ESCAPES[char])
                self._escape = ""
                return i + 1
            elif char != "u":
                self._fail(f"\\{char} is not a JSON escape", text, i)
            self._escape = "\\u"
            return i + 1
        if char not in _HEX:
            self._fail(f"{_show(char)} is not a hexadecimal digit of a \\u escape", text, i)
        digits = escape[2:] + char
        if len(digits) == 1 and self._high and char not in "dD":
            self._fail("a high surrogate escape must be followed by its low half", text, i)
        if len(digits) == 2 and digits[0] in "dD":
            low = char in _LOW_SECOND_DIGIT
            if self._high and not low:
                self._fail("a high surrogate escape must be followed by its low half", text, i)
            if low and not self._high:
                self._fail("a low surrogate escape has no high half before it", text, i)
        if len(digits) < 4:
            self._escape = escape + char
            return i + 1
        code = int(digits, 16)
        self._escape = ""
        if self._high:
            self._add_char(chr(0x10000 + ((self._high - 0xD800) << 10) + (code - 0xDC00)))
            self._high = 0
        elif 0xD800 <= code <= 0xDBFF:
            self._high = code
        else:
            self._add_char(chr(code))
        return i + 1

    def _add_char(self, char: str) -> None:
        """Add one character (an escape read) to the string being read."""
        pieces = self._pieces
        pieces.append(char)
        self._length += 1
        if len(pieces) > self._chunks + _LOOSE_PIECES:
            self._compact()

    def _compact(self) -> None:
        """Join the loose pieces of the unfinished token into one chunk: a token that arrives
        in many small fragments is held in few pieces, and each piece is joined once."""
        pieces = self._pieces
        chunks = self._chunks
        joined = "".join(pieces[chunks:])
        del pieces[chunks:]
        pieces.append(joined)
        self._chunks = chunks + 1
