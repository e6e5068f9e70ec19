"""The rows a batch runs: one contract execution each.

A :class:`BatchRow` is what a dataset reader produces (``templiqx_local.batch``) and what
``service.batch(...)`` accepts; a plain mapping with the same keys works too
(:func:`as_row`). ``index`` is the row's position in its dataset (0-based, counting data rows
only) and is what resuming and results are keyed by; ``id`` is the caller's own name for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from templiqx_contracts import Diagnostic, quote_input

__all__ = ["ROW_FIELDS", "BatchRow", "RowError", "as_row"]

ROW_FIELDS = ("inputs", "context", "id", "contract", "output", "expected")
"""The keys a mapping given as a row may have (besides ``index``)."""


class BatchRow(msgspec.Struct, kw_only=True, frozen=True):
    """One execution of a batch.

    * ``inputs`` / ``context`` — the render request's values;
    * ``id`` — the caller's name for the row, copied into its result;
    * ``contract`` — the contract to run when the batch names none (dataset evals over a
      whole package); otherwise it must be absent or equal to the batch's;
    * ``output`` — the output the deterministic fake answers with (the fixture output): what
      an eval scores, or a recorded answer replayed offline. Other runtimes ignore it;
    * ``expected`` — for evals, what the output should be (see
      :func:`templiqx_application.batch.scoring.compare`);
    * ``problem`` — set by a reader for a row it could not decode: the row is recorded as
      failed with this diagnostic and never run.
    """

    index: int
    inputs: dict[str, Any] = msgspec.field(default_factory=dict)
    context: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None
    contract: str | None = None
    output: Any = None
    expected: Any | UnsetType = UNSET
    problem: Diagnostic | None = None


class RowError(ValueError):
    """A value given as a row is not one (names the row and the problem)."""


def as_row(value: BatchRow | Mapping[str, Any], index: int) -> BatchRow:
    """``value`` as a :class:`BatchRow` at ``index`` (a row keeps its own index).

    A mapping may have the keys of :data:`ROW_FIELDS`; ``inputs`` and ``context`` must be
    objects, ``id`` and ``contract`` strings. Raises :class:`RowError` otherwise.
    """
    if isinstance(value, BatchRow):
        return value
    if not isinstance(value, Mapping):
        raise RowError(f"row {index}: a row is a BatchRow or a mapping, not {type(value).__name__}")
    unknown = [key for key in value if key not in ROW_FIELDS]
    if unknown:
        names = ", ".join(quote_input(str(key)) for key in unknown[:5])
        raise RowError(
            f"row {index}: unknown key(s) {names}; a row has {', '.join(ROW_FIELDS)} "
            "(put the contract's values under 'inputs')"
        )
    inputs = value.get("inputs", {})
    context = value.get("context", {})
    for name, given in (("inputs", inputs), ("context", context)):
        if not isinstance(given, Mapping):
            raise RowError(f"row {index}: '{name}' must be an object, not {type(given).__name__}")
    row_id = value.get("id")
    contract = value.get("contract")
    for name, given in (("id", row_id), ("contract", contract)):
        if given is not None and not isinstance(given, str):
            raise RowError(f"row {index}: '{name}' must be a string, not {type(given).__name__}")
    return BatchRow(
        index=index,
        inputs=dict(inputs),
        context=dict(context),
        id=row_id,
        contract=contract,
        output=value.get("output"),
        expected=value.get("expected", UNSET),
    )
