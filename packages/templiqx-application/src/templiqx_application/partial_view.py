"""The structured answer of a streamed execution as it arrives: :class:`PartialView`.

A structured-output contract streams its answer as JSON text in ``Delta`` fragments. A stream
(:class:`~templiqx_application.ContractStream`, :class:`~templiqx_application.AsyncContractStream`)
of such a contract keeps a :class:`PartialView`: every ``Delta`` it hands its consumer is fed,
once, to a :class:`~templiqx_core.PartialOutput` built from the contract's output schema, so
after each event the view holds the value so far (unfinished strings shown as they grow), which
of its parts are complete, and the problems the schema can already see. Reading costs nothing
beyond, for the one string still being written, joining its pieces.

After ``Complete`` the view holds the receipt's output, exactly: for a runtime that streams its
answer this is what the deltas spelled; a runtime that streams no deltas (the deterministic
fake) or whose deltas spell something else has its answer read at once, from the receipt. A
tool-call answer is not a structured answer: the view then stays as the deltas left it.

It is a view only (DECISIONS 22): the stream's events, the envelope and the receipt are the same
with or without it. A text contract (one that does not require ``structured_output``) has no
view: its deltas are the answer.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from typing import Any

import msgspec

from templiqx_contracts import (
    CompiledInteraction,
    Complete,
    Delta,
    Diagnostic,
    PartialValue,
    StreamEvent,
    ValuePath,
    is_tool_answer,
)
from templiqx_core import PartialOutput

__all__ = ["STRUCTURED_OUTPUT", "PartialUpdate", "PartialView", "partial_view_for"]

STRUCTURED_OUTPUT = "structured_output"
"""The capability a contract whose answer is JSON requires."""


@dataclass(frozen=True)
class PartialUpdate:
    """What one event changed in a :class:`PartialView` (see ``run.partials()``).

    Only a ``Delta`` and the ``Complete`` change the answer; any other event (``ToolCallDelta``,
    ``Failed``) has an update too, with the value as it was, so a host that iterates the
    updates sees every event.
    """

    event: StreamEvent
    """The event read."""
    value: Any
    """The answer so far: the view's live value (``MISSING`` before anything shows). It grows
    in place with later events; ``copy.deepcopy`` it to keep a snapshot."""
    completed: tuple[ValuePath, ...]
    """The paths of the values this event completed, innermost first."""
    problems: tuple[Diagnostic, ...]
    """The problems first seen with this event (``TQX_OUTPUT_SCHEMA`` early signals, or one
    ``TQX_RUNTIME_INVALID_RESPONSE`` when the text stops being JSON)."""
    done: bool
    """Whether the answer is complete."""


class PartialView:
    """The structured answer of one stream so far, read from its ``Delta`` texts.

    A stream of a structured-output contract owns one and feeds it every event it hands out;
    a host reads it (``run.partial``). It belongs to the stream's thread or task, like the
    stream. A host that receives events some other way (an ``execute_contract`` sink) can
    build its own, ``PartialView(output_schema)``, and :meth:`read` each event.
    """

    __slots__ = ("_output", "_reading", "_schema")

    def __init__(self, schema: Any) -> None:
        self._schema = schema
        self._output = PartialOutput(schema, partial_strings=True)
        self._reading: PartialValue | None = None  # the reader's view, after the last feed

    @property
    def value(self) -> Any:
        """The answer so far, a live object that grows in place (``MISSING`` before anything
        shows). Unfinished strings show as they grow; :attr:`growing` says which one is."""
        return self._output.value

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
        return f"PartialView(value={self.value!r}, done={self.done})"

    # -- fed the events ----------------------------------------------------------------------

    def read(self, event: StreamEvent) -> PartialUpdate:
        """Read the stream's next event; the update it makes."""
        if isinstance(event, Delta):
            update = self._output.feed(event.text)
            self._reading = update.partial
            completed = update.partial.completed if update.partial is not None else ()
            return PartialUpdate(event, self.value, completed, update.problems, self.done)
        if isinstance(event, Complete):
            return self._complete(event)
        return PartialUpdate(event, self.value, (), (), self.done)

    def _complete(self, event: Complete) -> PartialUpdate:
        output = event.output
        try:
            if not (self.done and _same(self.value, output)) and not is_tool_answer(output):
                return self._reread(event)
        except RecursionError:  # an answer nested deeper than Python compares: keep the view
            pass
        return PartialUpdate(event, self.value, (), (), self.done)

    def _reread(self, event: Complete) -> PartialUpdate:
        """Take the answer from the receipt, reading its JSON text at once.

        The deltas spelled no answer (none came: the runtime does not stream them), an
        unfinished one (a top-level number completes only at the end) or another one.
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
                completed = (read.partial.completed if read.partial else ()) + (
                    ended.partial.completed if ended.partial else ()
                )
                return PartialUpdate(event, self.value, completed, fresh.problems, self.done)
        return PartialUpdate(event, self.value, (), (), self.done)


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
