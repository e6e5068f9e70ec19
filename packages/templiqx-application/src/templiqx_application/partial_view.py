"""The structured answer of a streamed execution as it arrives: :class:`PartialView`.

A structured-output contract streams its answer as JSON text in ``Delta`` fragments. A stream
(:class:`~templiqx_application.ContractStream`, :class:`~templiqx_application.AsyncContractStream`)
of such a contract keeps a :class:`PartialView`: every ``Delta`` it hands its consumer is fed,
once, to a :class:`~templiqx_core.PartialOutput` built from the contract's output schema, so
after each event the view holds the value so far (unfinished strings shown as they grow), which
of its parts are complete, and the problems the schema can already see.

Cost. Feeding the view costs time proportional to the event, never to the answer so far: the
stream never reads the value for you. Each :class:`PartialUpdate` says what its event changed
as :data:`~templiqx_contracts.PartialChange` steps (``update.changes``), whose encoded size over
a whole stream is at most :data:`CHANGE_BYTES_PER_ANSWER_BYTE` times the answer's length plus
:data:`CHANGE_BYTES_ALLOWANCE` (DECISIONS 27): a host relays them instead of the whole value.
Reading :attr:`PartialView.value` costs, for the one string still being written, joining its
pieces (so reading it after every delta of one long string is quadratic; read it when you draw).

After ``Complete`` the view holds the receipt's output, exactly: for a runtime that streams its
answer this is what the deltas spelled; a runtime that streams no deltas (the deterministic
fake) or whose deltas spell something else has its answer read at once, from the receipt. A
tool-call answer is not a structured answer: the view then stays as the deltas left it.

It is a view only (DECISIONS 22): the stream's events, the envelope and the receipt are the same
with or without it. A text contract (one that does not require ``structured_output``) has no
view: its deltas are the answer.
"""

from __future__ import annotations

import copy
from collections.abc import Set
from typing import Any, Final

import msgspec

from templiqx_contracts import (
    MISSING,
    CompiledInteraction,
    Complete,
    Delta,
    Diagnostic,
    Failed,
    PartialAppend,
    PartialChange,
    PartialSet,
    PartialValue,
    StreamEvent,
    ValuePath,
    encode_partial_changes,
    is_tool_answer,
)
from templiqx_core import PartialOutput

__all__ = [
    "CHANGE_BYTES_ALLOWANCE",
    "CHANGE_BYTES_PER_ANSWER_BYTE",
    "STRUCTURED_OUTPUT",
    "PartialUpdate",
    "PartialView",
    "partial_view_for",
]

STRUCTURED_OUTPUT = "structured_output"
"""The capability a contract whose answer is JSON requires."""

CHANGE_BYTES_PER_ANSWER_BYTE: Final = 64
"""The changes of one stream encode to at most this many bytes per UTF-8 byte of the answer
(plus :data:`CHANGE_BYTES_ALLOWANCE`); an answer whose fine-grained changes would cost more is
shown in coarser steps (see :class:`PartialView`)."""
CHANGE_BYTES_ALLOWANCE: Final = 65_536
"""Encoded bytes of changes every stream may spend beyond its per-byte share."""

# An upper bound on the encoded size of a value per byte of the JSON text it was read from
# (the worst case is a number: ``1e15`` is encoded ``1000000000000000.0``), and of the
# ``[{"op":"set","path":[],"value":...}]`` around it: room kept for one snapshot.
_SNAPSHOT_BYTES_PER_BYTE: Final = 5
_SNAPSHOT_OVERHEAD: Final = 64
_SET_ROOT_WRAPPER: Final = len(b'[{"op":"set","path":[],"value":}]')
# Copies are made each time the answer has grown by at least an eighth since the last one.
_COPY_GROWTH: Final = 8


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class PartialUpdate:
    """What one event changed in a :class:`PartialView` (see ``run.partials()``).

    Only a ``Delta`` and the ``Complete`` change the answer; any other event (``ToolCallDelta``,
    ``Failed``) has an update too, usually without changes, so a host that iterates the updates
    sees every event. Applying every update's :attr:`changes` so far, in order, to ``MISSING``
    (:func:`~templiqx_contracts.apply_partial_changes`) gives the view's value after it.

    ``copy.deepcopy(update)`` keeps a snapshot: the copy's :attr:`value` is the value as it was.
    """

    __slots__ = ("_snapshot", "_view", "changes", "completed", "done", "event", "problems")

    def __init__(
        self,
        view: PartialView | None,
        event: StreamEvent,
        completed: tuple[ValuePath, ...] = (),
        problems: tuple[Diagnostic, ...] = (),
        done: bool = False,
        changes: tuple[PartialChange, ...] = (),
        snapshot: Any = MISSING,
    ) -> None:
        self._view = view
        self._snapshot = snapshot
        self.event = event
        """The event read."""
        self.completed = completed
        """The paths of the values this event completed, innermost first."""
        self.problems = problems
        """The problems first seen with this event (``TQX_OUTPUT_SCHEMA`` early signals, or one
        ``TQX_RUNTIME_INVALID_RESPONSE`` when the text stops being JSON)."""
        self.done = done
        """Whether the answer is complete."""
        self.changes = changes
        """What this event changed in the value, as :data:`~templiqx_contracts.PartialChange`
        steps; only what is new, so a stream's changes add up to a size linear in the answer.
        Their wire form is :func:`~templiqx_contracts.encode_partial_changes`."""

    @property
    def value(self) -> Any:
        """The answer so far: the view's value when read (``MISSING`` before anything shows).

        It is live: it grows in place with later events, and reading it joins the string still
        being written (time proportional to that string). Nothing reads it unless you do;
        ``copy.deepcopy`` the update (or the value) to keep a snapshot.
        """
        return self._view.value if self._view is not None else self._snapshot

    def __deepcopy__(self, memo: dict[int, Any]) -> PartialUpdate:
        return PartialUpdate(
            None,
            copy.deepcopy(self.event, memo),
            self.completed,
            self.problems,
            self.done,
            self.changes,
            copy.deepcopy(self.value, memo),
        )

    def __repr__(self) -> str:
        return (
            f"PartialUpdate(event={type(self.event).__name__}, changes={len(self.changes)}, "
            f"completed={self.completed!r}, problems={len(self.problems)}, done={self.done})"
        )


class PartialView:
    """The structured answer of one stream so far, read from its ``Delta`` texts.

    A stream of a structured-output contract owns one and feeds it every event it hands out;
    a host reads it (``run.partial``). It belongs to the stream's thread or task, like the
    stream. A host that receives events some other way (an ``execute_contract`` sink) can
    build its own, ``PartialView(output_schema)``, and :meth:`read` each event.

    The changes of a stream encode to at most ``change_rate`` bytes per byte of the answer
    plus ``change_allowance``. A well-formed answer stays far inside that; one whose updates
    would not (one-character deltas deep under very long member names) is shown from then on
    in coarser steps: a copy of the whole value each time the answer has grown by an eighth
    and enough of it has arrived to pay for the copy, and once more when the stream ends.
    :attr:`value` is then that copy, so it always equals the changes applied;
    :attr:`complete_paths`, :attr:`problems` and :attr:`growing` follow the text read.
    """

    __slots__ = (
        "_append_cost",
        "_append_path",
        "_behind",
        "_copied_at",
        "_output",
        "_rate_left",
        "_read_bytes",
        "_reading",
        "_room",
        "_schema",
        "_shown",
    )

    def __init__(
        self,
        schema: Any,
        *,
        change_rate: int = CHANGE_BYTES_PER_ANSWER_BYTE,
        change_allowance: int = CHANGE_BYTES_ALLOWANCE,
    ) -> None:
        self._schema = schema
        self._output = PartialOutput(schema, partial_strings=True, changes=True)
        self._reading: PartialValue | None = None  # the reader's view, after the last feed
        if change_rate <= _SNAPSHOT_BYTES_PER_BYTE:
            raise ValueError(
                f"change_rate must be more than {_SNAPSHOT_BYTES_PER_BYTE} bytes per answer byte, "
                "the most a copy of the value can cost"
            )
        # What is left of the budget (change_rate bytes per answer byte plus change_allowance)
        # once the changes handed out and room for one copy of the value are taken off.
        self._rate_left = change_rate - _SNAPSHOT_BYTES_PER_BYTE
        self._room = change_allowance - _SNAPSHOT_OVERHEAD
        self._read_bytes = 0  # UTF-8 bytes of the Delta texts read
        self._shown: Any = MISSING  # a copy shown while in coarser steps (MISSING: the value)
        self._behind = False  # a copy is shown and the text has changed the value since
        self._copied_at = 0  # bytes read when the last copy was made
        self._append_path: ValuePath | None = None  # the path the last append's cost is for
        self._append_cost = 0  # the encoded size of an empty append to it

    @property
    def value(self) -> Any:
        """The answer so far, a live object that grows in place (``MISSING`` before anything
        shows). Unfinished strings show as they grow; :attr:`growing` says which one is.
        Reading it joins the string still being written."""
        return self._output.value if self._shown is MISSING else self._shown

    @property
    def done(self) -> bool:
        """Whether the answer is complete."""
        return self._output.done

    @property
    def complete_paths(self) -> Set[ValuePath]:
        """Every path whose value is complete (a live, read-only set)."""
        return self._output.complete_paths

    @property
    def growing(self) -> ValuePath | None:
        """The path of the string still being written, ``None`` between values."""
        return self._reading.growing if self._reading is not None else None

    @property
    def problems(self) -> tuple[Diagnostic, ...]:
        """Every problem seen so far, in the order seen (see :class:`PartialUpdate`)."""
        return self._output.problems

    @property
    def final_problems(self) -> tuple[Diagnostic, ...] | None:
        """Once the answer is complete, what the envelope's output-schema check reports for it
        (``None`` before, or when the answer was not JSON)."""
        return self._output.final_problems

    @property
    def checking(self) -> bool:
        """Whether the schema is checked as the answer arrives (a schema inside the bounded
        subset); otherwise the answer is judged only when complete."""
        return self._output.checking

    def __repr__(self) -> str:
        return f"PartialView(done={self.done}, growing={self.growing!r})"

    # -- fed the events ----------------------------------------------------------------------

    def read(self, event: StreamEvent) -> PartialUpdate:
        """Read the stream's next event; the update it makes."""
        if isinstance(event, Delta):
            text = event.text
            update = self._output.feed(text)
            partial = self._reading = update.partial
            size = len(text) if text.isascii() else _utf8_length(text)
            self._read_bytes += size
            self._room += self._rate_left * size
            changes = update.changes
            if changes and self._shown is MISSING and (cost := self._cost(changes)) <= self._room:
                self._room -= cost  # the common case, inline: the changes fit the budget
            else:
                changes = self._paid(changes)
            if partial is None:
                return PartialUpdate(self, event, (), update.problems, self.done, changes)
            return PartialUpdate(
                self, event, partial.completed, update.problems, partial.done, changes
            )
        if isinstance(event, Complete):
            return self._complete(event)
        if isinstance(event, Failed):  # the end: show the value as the deltas left it
            return self._update(event, changes=self._caught_up())
        return self._update(event)  # a tool-call delta changes nothing

    def _update(
        self,
        event: StreamEvent,
        completed: tuple[ValuePath, ...] = (),
        problems: tuple[Diagnostic, ...] = (),
        changes: tuple[PartialChange, ...] = (),
    ) -> PartialUpdate:
        return PartialUpdate(self, event, completed, problems, self._output.done, changes)

    # -- what the changes cost ---------------------------------------------------------------

    def _paid(self, changes: tuple[PartialChange, ...]) -> tuple[PartialChange, ...]:
        """The changes handed out for a Delta: its own while they fit the budget (keeping
        room for one copy of the value), else a copy of the whole value when affordable."""
        if self._shown is MISSING:
            if not changes:
                return ()
            cost = self._cost(changes)
            if cost <= self._room:
                self._room -= cost
                return changes
            return self._copy_shown()  # from now on in coarser steps
        if changes:
            self._behind = True
        if (
            self._behind
            and self._read_bytes >= self._copied_at + self._copied_at // _COPY_GROWTH
            and self._room >= 0
        ):
            return self._copy_shown()
        return ()

    def _cost(self, changes: tuple[PartialChange, ...]) -> int:
        """The encoded size of ``changes``, or an upper bound of it: one append to the string
        the last one grew (the common case, a string written in many deltas) costs its path's
        share, known, plus at most 6 bytes a character (``\\u001f``), without encoding it."""
        if len(changes) == 1:
            change = changes[0]
            if isinstance(change, PartialAppend):
                if change.path is not self._append_path:
                    empty = PartialAppend(change.path, "")
                    self._append_cost = len(encode_partial_changes((empty,)))
                    self._append_path = change.path
                return self._append_cost + 6 * len(change.text)
        return len(encode_partial_changes(changes))

    def _copy_shown(self) -> tuple[PartialChange, ...]:
        """Show a copy of the whole value, as one change replacing the root."""
        live = self._output.value
        if live is MISSING:
            return ()
        encoded = msgspec.json.encode(live)
        self._shown = msgspec.json.decode(encoded)
        self._behind = False
        self._copied_at = self._read_bytes
        self._room -= len(encoded) + _SET_ROOT_WRAPPER
        return (PartialSet((), self._shown),)

    def _caught_up(self) -> tuple[PartialChange, ...]:
        """At the end of the stream, show the value itself again (a last copy when behind)."""
        if self._shown is MISSING:
            return ()
        changes = self._copy_shown() if self._behind else ()
        self._shown = MISSING
        return changes

    # -- the end -----------------------------------------------------------------------------

    def _complete(self, event: Complete) -> PartialUpdate:
        output = event.output
        try:
            if not (self.done and _same(self._output.value, output)) and not is_tool_answer(output):
                return self._reread(event)
        except RecursionError:  # an answer nested deeper than Python compares: keep the view
            pass
        return self._update(event, changes=self._caught_up())

    def _reread(self, event: Complete) -> PartialUpdate:
        """Take the answer from the receipt, reading its JSON text at once.

        The deltas spelled no answer (none came: the runtime does not stream them), an
        unfinished one (a top-level number completes only at the end) or another one. The
        update replaces the whole value with the receipt's output.
        """
        fresh = PartialOutput(self._schema, partial_strings=True, max_bytes=None)
        try:
            text = msgspec.json.encode(event.output).decode("utf-8")
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
            text = None  # not JSON data: a runtime bug the envelope reports
        if text is not None:
            read = fresh.feed(text)
            ended = fresh.finish()
            if _same(fresh.value, event.output):
                self._output = fresh
                self._reading = None
                self._shown = MISSING
                self._behind = False
                completed = (read.partial.completed if read.partial else ()) + (
                    ended.partial.completed if ended.partial else ()
                )
                changes = (PartialSet((), event.output),)
                return self._update(event, completed, fresh.problems, changes)
        return self._update(event, changes=self._caught_up())


def _same(left: Any, right: Any) -> bool:
    """Equal as JSON values, type for type (``1`` is not ``1.0``, ``True`` is not ``1``)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return bool(left == right)


def partial_view_for(interaction: CompiledInteraction) -> PartialView | None:
    """A view for an interaction whose answer is JSON (it requires ``structured_output``)."""
    if STRUCTURED_OUTPUT not in interaction.required_capabilities:
        return None
    return PartialView(interaction.output_schema)
