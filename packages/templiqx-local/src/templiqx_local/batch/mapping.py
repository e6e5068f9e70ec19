"""How a dataset's columns become a row's inputs, context, id, contract, output and expected.

Without a mapping, a record that has an ``inputs`` object is taken as a row as it stands (its
``inputs``, ``context``, ``id``, ``contract``, ``output`` and ``expected``); any other record
is flat: the columns named ``id``, ``contract``, ``output`` and ``expected`` fill those roles
and every other column becomes an input of the same name.

A mapping (``--map COLUMN=TARGET[:TYPE]``, repeatable) says otherwise for the columns it names:

* ``TARGET`` is ``inputs.NAME`` or ``context.NAME`` (dots nest: ``context.user.tier``), ``id``,
  ``contract``, ``output``, ``expected``, or ``-`` to drop the column;
* ``TYPE`` converts the value: ``str``, ``int``, ``float``, ``bool`` (``true/false/1/0/yes/no``)
  or ``json`` (a JSON text, parsed). CSV cells are text, so a contract that wants an integer
  needs ``:int`` (or ``:json``); JSON and Parquet values keep their own type unless a ``TYPE``
  is given.

An empty CSV cell is left out (an absent value), unless its column is mapped with ``:str``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from msgspec import UNSET

from templiqx_application.batch import BatchRow
from templiqx_contracts import Diagnostic, quote_input
from templiqx_local.batch.errors import BatchFileError

__all__ = ["ROLES", "TYPES", "ColumnMapping", "ColumnTarget"]

ROLES: Final = ("id", "contract", "output", "expected")
"""Targets that are not inputs or context."""

TYPES: Final = ("str", "int", "float", "bool", "json")

_TRUE = {"true", "1", "yes", "y"}
_FALSE = {"false", "0", "no", "n"}


class _Absent:
    """An empty CSV cell: the value is left out."""


_ABSENT = _Absent()


@dataclass(frozen=True)
class ColumnTarget:
    """Where one column goes: a path (``("inputs", "name")``, ``("id",)``; empty: dropped)
    and the conversion of its value (``None``: as it is)."""

    path: tuple[str, ...]
    type: str | None = None


def _row_problem(index: int, message: str, pointer: str = "") -> Diagnostic:
    return Diagnostic.error("TQX_BATCH_ROW_INVALID", f"row {index}: {message}", pointer)


class ColumnMapping:
    """Parsed ``COLUMN=TARGET[:TYPE]`` specs (see the module docstring)."""

    def __init__(self, targets: Mapping[str, ColumnTarget] | None = None) -> None:
        self.targets: dict[str, ColumnTarget] = dict(targets or {})

    @classmethod
    def parse(cls, specs: Iterable[str]) -> ColumnMapping:
        """Raises :class:`BatchFileError` (``TQX_BATCH_MAPPING_INVALID``) naming a bad spec."""
        targets: dict[str, ColumnTarget] = {}
        for spec in specs:
            column, sep, target = spec.partition("=")
            if not sep or not column:
                raise BatchFileError(
                    "TQX_BATCH_MAPPING_INVALID",
                    f"mapping {quote_input(spec)} is not COLUMN=TARGET[:TYPE]",
                )
            if column in targets:
                raise BatchFileError(
                    "TQX_BATCH_MAPPING_INVALID", f"column {quote_input(column)} is mapped twice"
                )
            target, colon, kind = target.partition(":")
            if colon and kind not in TYPES:
                raise BatchFileError(
                    "TQX_BATCH_MAPPING_INVALID",
                    f"mapping {quote_input(spec)}: type {quote_input(kind)} is not one of "
                    f"{', '.join(TYPES)}",
                )
            targets[column] = ColumnTarget(cls._path(spec, target), kind if colon else None)
        return cls(targets)

    @staticmethod
    def _path(spec: str, target: str) -> tuple[str, ...]:
        if target == "-":
            return ()
        if target in ROLES:
            return (target,)
        head, _, rest = target.partition(".")
        parts = tuple(rest.split(".")) if rest else ()
        if head in ("inputs", "context") and parts and all(parts):
            return (head, *parts)
        raise BatchFileError(
            "TQX_BATCH_MAPPING_INVALID",
            f"mapping {quote_input(spec)}: target {quote_input(target)} is not inputs.NAME, "
            f"context.NAME, {', '.join(ROLES)} or -",
        )

    def specs(self) -> list[str]:
        """The mapping written back as specs (sorted; what a run's state records)."""
        written = []
        for column, target in sorted(self.targets.items()):
            path = ".".join(target.path) if target.path else "-"
            written.append(f"{column}={path}" + (f":{target.type}" if target.type else ""))
        return written

    # --- records to rows ----------------------------------------------------------------------

    def row(self, record: Mapping[str, Any], index: int, *, text_cells: bool = False) -> BatchRow:
        """The row of one record (a problem row when a value does not convert)."""
        if "inputs" in record and isinstance(record.get("inputs"), Mapping):
            shaped = {k: v for k, v in record.items() if k not in self.targets}
            base: dict[str, Any] = {
                "inputs": dict(shaped.get("inputs") or {}),
                "context": dict(shaped.get("context") or {}),
            }
            for role in ROLES:
                if role in shaped:
                    base[role] = shaped[role]
            flat: Mapping[str, Any] = {k: v for k, v in record.items() if k in self.targets}
        else:
            base = {"inputs": {}, "context": {}}
            flat = record
        try:
            for column, value in flat.items():
                self._place(base, str(column), value, index, text_cells=text_cells)
        except _ProblemError as problem:
            return BatchRow(index=index, problem=problem.diagnostic)
        return self._build(base, index)

    def _place(
        self, base: dict[str, Any], column: str, value: Any, index: int, *, text_cells: bool
    ) -> None:
        target = self.targets.get(column)
        if target is None:
            path: tuple[str, ...] = (column,) if column in ROLES else ("inputs", column)
            kind = None
        else:
            path, kind = target.path, target.type
        if not path:
            return
        converted = self._convert(value, kind, column, index, text_cells=text_cells)
        if converted is _ABSENT:
            return
        if len(path) == 1:
            base[path[0]] = converted
            return
        node = base[path[0]]
        for part in path[1:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise _ProblemError(
                    _row_problem(index, f"column {quote_input(column)} nests under a value")
                )
            node = child
        node[path[-1]] = converted

    @staticmethod
    def _convert(value: Any, kind: str | None, column: str, index: int, *, text_cells: bool) -> Any:
        if text_cells and value == "" and kind != "str":
            return _ABSENT
        if kind is None or value is None:
            return value
        try:
            if kind == "str":
                return value if isinstance(value, str) else str(value)
            if kind == "json":
                return msgspec.json.decode(value) if isinstance(value, (str, bytes)) else value
            if kind == "int":
                if isinstance(value, bool):
                    raise ValueError("a boolean is not an integer")
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError("not a whole number")
                return int(value.strip() if isinstance(value, str) else value)
            if kind == "float":
                if isinstance(value, bool):
                    raise ValueError("a boolean is not a number")
                number = float(value.strip() if isinstance(value, str) else value)
                if number != number or number in (float("inf"), float("-inf")):
                    raise ValueError("NaN and infinity are not JSON numbers")
                return number
            if isinstance(value, bool):
                return value
            word = str(value).strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
            raise ValueError("not a boolean")
        except (ValueError, TypeError, msgspec.DecodeError) as exc:
            raise _ProblemError(
                _row_problem(
                    index,
                    f"column {quote_input(column)}: {quote_input(str(value))} is not {kind} "
                    f"({exc})",
                )
            ) from None

    @staticmethod
    def _build(base: dict[str, Any], index: int) -> BatchRow:
        for name in ("id", "contract"):
            value = base.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and name == "id":
                base[name] = str(value)
            elif value is not None and not isinstance(value, str):
                return BatchRow(
                    index=index,
                    problem=_row_problem(index, f"'{name}' must be a string", f"/{name}"),
                )
        for name in ("inputs", "context"):
            if not isinstance(base[name], dict):
                return BatchRow(
                    index=index,
                    problem=_row_problem(index, f"'{name}' must be an object", f"/{name}"),
                )
        return BatchRow(
            index=index,
            inputs=base["inputs"],
            context=base["context"],
            id=base.get("id"),
            contract=base.get("contract"),
            output=base.get("output"),
            expected=base.get("expected", UNSET),
        )


class _ProblemError(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic
