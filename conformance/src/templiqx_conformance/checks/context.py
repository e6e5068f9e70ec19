"""The shared machinery of every check: making adapters, calling them, and saying what broke."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from templiqx_conformance.errors import BrokenInvariantError, NotApplicableError
from templiqx_conformance.probes import Probe, applicable_probes
from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute, run_streaming
from templiqx_conformance.rig.rig import Rig
from templiqx_conformance.schema import satisfies
from templiqx_contracts import (
    AdapterDescriptor,
    CompiledInteraction,
    Complete,
    ExecutionReceipt,
    ExecutionRequest,
    canonical_json,
    declared_tools,
    interaction_output_valid,
    is_tool_answer,
)
from templiqx_ports import RuntimeAdapter

__all__ = [
    "HEX64",
    "BrokenInvariantError",
    "Check",
    "CheckContext",
    "NotApplicableError",
    "completes_of",
    "fail_if",
    "output_problem",
    "receipt_diff",
    "roundtrips",
    "show",
    "streams_by_default",
    "validity_problem",
]

HEX64 = re.compile(r"[0-9a-f]{64}")


def fail_if(summary: str, problems: list[str]) -> None:
    """Fail the check with ``summary`` and one line per problem, if there are any."""
    if problems:
        raise BrokenInvariantError(summary + ":\n  " + "\n  ".join(problems))


@dataclass(frozen=True)
class Check:
    """One named check: what it proves, the function that proves it, and what it builds on.

    ``depends`` names the checks whose invariants this one takes for granted: when one of them
    failed (or did not run), this check is not run, so one bug gives one message.
    """

    name: str
    invariant: str
    run: Callable[[CheckContext], None]
    depends: tuple[str, ...] = ()


def streams_by_default(adapter: RuntimeAdapter) -> bool:
    """Whether ``adapter`` keeps the port's default ``execute_streaming`` (emits no deltas)."""
    return type(adapter).execute_streaming is RuntimeAdapter.execute_streaming


def show(value: Any, limit: int = 160) -> str:
    """A value as compact JSON, shortened for a failure message."""
    try:
        text = canonical_json(value).decode("utf-8")
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


RECEIPT_FIELDS = (
    "adapter",
    "request_fingerprint",
    "output_fingerprint",
    "output",
    "output_schema_valid",
)


def receipt_diff(left: ExecutionReceipt, right: ExecutionReceipt, names: tuple[str, str]) -> str:
    """The differing receipt fields, one line each (empty when the receipts are equal)."""
    lines = []
    for field in RECEIPT_FIELDS:
        a, b = getattr(left, field), getattr(right, field)
        same = canonical_json(a) == canonical_json(b) if field != "output_schema_valid" else a is b
        if not same:
            lines.append(f"    {field}: {names[0]} {show(a)} != {names[1]} {show(b)}")
    return "\n".join(lines)


def validity_problem(interaction: CompiledInteraction, receipt: ExecutionReceipt) -> str | None:
    """Why ``receipt.output_schema_valid`` is wrong for ``interaction`` (``None`` if it is right).

    The truth is the application's (DECISIONS 8): a tool-call answer to an interaction that
    declares tools is judged by those tools, anything else by the output schema.
    """
    truth = interaction_output_valid(interaction, receipt.output, satisfies)
    if receipt.output_schema_valid is truth:
        return None
    claim = f"the adapter claims output_schema_valid={receipt.output_schema_valid} but"
    if declared_tools(interaction) and is_tool_answer(receipt.output):
        names = ", ".join(tool.name for tool in declared_tools(interaction))
        verdict = "satisfy" if truth else "do not satisfy"
        return (
            f"{claim} the tool calls {show(receipt.output)} {verdict} the declared tools "
            f"({names}: their names, arguments schemas, tool_choice and parallel_tool_calls); "
            "compute the flag with templiqx_contracts.interaction_output_valid"
        )
    verdict = "satisfies" if truth else "violates"
    return (
        f"{claim} output {show(receipt.output)} {verdict} schema "
        f"{show(interaction.output_schema)}; compute the flag by validating the output "
        "against interaction.output_schema, never assume it"
    )


def _without_ids(output: Any) -> tuple[Any, list[Any]]:
    calls = output.get("tool_calls") if isinstance(output, dict) else None
    if not isinstance(calls, list):
        return output, []
    ids = [call.get("id") if isinstance(call, dict) else None for call in calls]
    stripped = [
        {k: v for k, v in call.items() if k != "id"} if isinstance(call, dict) else call
        for call in calls
    ]
    return {**output, "tool_calls": stripped}, ids


def output_problem(got: Any, expected: Any, *, tool_call_ids: bool = True) -> str | None:
    """Why output ``got`` is not ``expected`` (``None`` when it is).

    ``tool_call_ids=False`` (a provider that gives calls no id): tool-call ids are the adapter's
    own, so they only have to be distinct non-empty strings.
    """
    if tool_call_ids:
        return None if show(got, 10**9) == show(expected, 10**9) else "differs"
    got_bare, ids = _without_ids(got)
    expected_bare, _ = _without_ids(expected)
    if show(got_bare, 10**9) != show(expected_bare, 10**9):
        return "differs"
    if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
        return (
            f"its tool-call ids {show(ids)} must be distinct non-empty strings (the provider "
            "gives none: make one per call, the same on both paths)"
        )
    return None


class CheckContext:
    """What a check works with: the rig, the call deadline, and helpers that fail clearly."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.timeout = rig.target.call_timeout
        self._descriptor: AdapterDescriptor | None = None

    # --- adapters -------------------------------------------------------------------------

    def new_adapter(self) -> RuntimeAdapter:
        """A fresh adapter from the author's factory; fails the check if the factory does."""
        try:
            adapter = self.rig.make_adapter()
        except Exception as exc:
            raise BrokenInvariantError(
                f"the adapter factory must return a ready adapter: it raised {describe_error(exc)}"
            ) from exc
        return self.require_adapter(adapter, "the adapter factory")

    @staticmethod
    def require_adapter(adapter: Any, source: str) -> RuntimeAdapter:
        """``adapter`` if it is a :class:`RuntimeAdapter`, else a failure naming ``source``."""
        if not isinstance(adapter, RuntimeAdapter):
            raise BrokenInvariantError(
                f"{source} must return a templiqx_ports.RuntimeAdapter, "
                f"got {type(adapter).__name__}"
            )
        return adapter

    def descriptor(self) -> AdapterDescriptor:
        """The adapter's descriptor (cached); fails the check when ``descriptor()`` is broken."""
        if self._descriptor is None:
            adapter = self.new_adapter()
            try:
                value = adapter.descriptor()
            except Exception as exc:
                raise BrokenInvariantError(
                    f"descriptor() must return the adapter's identity: it raised "
                    f"{describe_error(exc)}"
                ) from exc
            if not isinstance(value, AdapterDescriptor):
                raise BrokenInvariantError(
                    "descriptor() must return a templiqx_contracts.AdapterDescriptor, "
                    f"got {type(value).__name__}"
                )
            self._descriptor = value
        return self._descriptor

    def probes(self) -> list[Probe]:
        """The kit probes within the adapter's declared capabilities (at least one)."""
        descriptor = self.descriptor()
        probes = [
            p for p in applicable_probes(list(descriptor.capabilities)) if self.rig.accepts(p)
        ]
        if not probes:
            raise BrokenInvariantError(
                "the adapter must declare a capability the kit can exercise "
                f"('structured_output', 'text' or 'tool_calling'); it declares "
                f"{show(descriptor.capabilities)}"
            )
        return probes

    @staticmethod
    def streams_by_default(adapter: RuntimeAdapter) -> bool:
        """Whether ``adapter`` keeps the port's default ``execute_streaming``."""
        return streams_by_default(adapter)

    # --- calls ----------------------------------------------------------------------------

    def request(self, probe: Probe) -> ExecutionRequest:
        """The request for ``probe`` in this rig (fixture output or not)."""
        return probe.request(with_fixture=self.rig.with_fixture)

    def execute(self, probe: Probe, adapter: RuntimeAdapter | None = None) -> ExecutionReceipt:
        """Execute ``probe``; any error, hang or non-receipt result fails the check."""
        self.rig.serve(probe)
        adapter = adapter if adapter is not None else self.new_adapter()
        outcome = run_execute(adapter, self.request(probe), self.timeout)
        return self.receipt_of(outcome, f"execute({probe.name})")

    def stream(
        self,
        probe: Probe,
        *,
        adapter: RuntimeAdapter | None = None,
        request: ExecutionRequest | None = None,
        cancel: Any = None,
        on_event: Callable[[Any], None] | None = None,
        grace: float = 0.0,
        hold: threading.Event | None = None,
        cutoff: Callable[[], float | None] | None = None,
    ) -> Outcome:
        """Stream ``probe`` and return what happened (a hang fails the check).

        ``hold`` is passed to :meth:`Rig.serve` (the rest of the answer waits for it).
        """
        self.rig.serve(probe, hold=hold)
        adapter = adapter if adapter is not None else self.new_adapter()
        outcome = run_streaming(
            adapter,
            request if request is not None else self.request(probe),
            self.timeout,
            cancel=cancel,
            on_event=on_event,
            grace=grace,
            cutoff=cutoff,
        )
        if outcome.timed_out and cutoff is None:
            raise BrokenInvariantError(
                f"execute_streaming({probe.name}) must return or raise: it was still running "
                f"after {self.timeout:g} s"
            )
        return outcome

    def receipt_of(self, outcome: Outcome, call: str) -> ExecutionReceipt:
        """The receipt an outcome returned; anything else fails the check."""
        if outcome.timed_out:
            raise BrokenInvariantError(
                f"{call} must return: it was still running after {self.timeout:g} s"
            )
        if outcome.error is not None:
            raise BrokenInvariantError(
                f"{call} must succeed for a request within the adapter's capabilities: it raised "
                f"{describe_error(outcome.error)}"
            )
        if not isinstance(outcome.result, ExecutionReceipt):
            raise BrokenInvariantError(
                f"{call} must return a templiqx_contracts.ExecutionReceipt, "
                f"got {type(outcome.result).__name__}"
            )
        return outcome.result


def completes_of(events: list[Any]) -> list[ExecutionReceipt]:
    """The receipts carried by every ``Complete`` event of a stream."""
    return [event.receipt for event in events if isinstance(event, Complete)]


def roundtrips(receipt: ExecutionReceipt) -> bool:
    """Whether the receipt survives JSON encoding and strict decoding unchanged."""
    data = msgspec.json.encode(receipt)
    try:
        again = msgspec.json.decode(data, type=ExecutionReceipt)
    except msgspec.ValidationError:
        return False
    return canonical_json(again) == canonical_json(receipt)
