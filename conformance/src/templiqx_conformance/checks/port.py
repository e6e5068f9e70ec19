"""The port checks of identity and receipts: the descriptor, the receipt's fields and
fingerprints (on ``execute`` and on the streamed receipt), ``output_schema_valid`` judged on a
valid and an invalid output, and concurrent use."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec

from templiqx_conformance.checks.context import (
    HEX64,
    CheckContext,
    NotApplicableError,
    completes_of,
    fail_if,
    receipt_diff,
    roundtrips,
    show,
    validity_problem,
)
from templiqx_conformance.probes import NEGATIVE_PROBES, Probe
from templiqx_conformance.rig.calls import Outcome, describe_error, run_execute
from templiqx_conformance.schema import satisfies as _accepts
from templiqx_contracts import (
    AdapterDescriptor,
    CanonicalJSONError,
    ExecutionReceipt,
    canonical_json,
    fingerprint,
    interaction_output_valid,
)

__all__ = [
    "capabilities_honest",
    "descriptor_well_formed",
    "output_fingerprint",
    "output_schema_valid",
    "parallel_execute",
    "receipt_well_formed",
    "request_fingerprint",
    "streamed_receipts",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]*")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]*")
_CAPABILITY = re.compile(r"[A-Za-z0-9._:-]+")


# --- descriptor ---------------------------------------------------------------------------


def descriptor_well_formed(ctx: CheckContext) -> None:
    adapter = ctx.new_adapter()
    descriptor = ctx.descriptor()
    # msgspec does not check types on construction: look at the raw values.
    ident: Any = descriptor.id
    version: Any = descriptor.version
    capabilities: Any = descriptor.capabilities
    problems = []
    if not isinstance(ident, str) or not _ID.fullmatch(ident):
        problems.append(
            f"id {ident!r} must be a non-empty string of letters, digits and . _ : / + -"
        )
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        problems.append(f"version {version!r} must be a non-empty string without spaces")
    if not isinstance(capabilities, list):
        problems.append(f"capabilities must be a list of strings, got {capabilities!r}")
    else:
        for capability in capabilities:
            if not isinstance(capability, str) or not _CAPABILITY.fullmatch(capability):
                problems.append(
                    f"capability {capability!r} must be a non-empty string of letters, digits "
                    "and . _ : -"
                )
        duplicates = sorted(
            {c for c in capabilities if isinstance(c, str) and capabilities.count(c) > 1}
        )
        if duplicates:
            problems.append(f"capabilities list {show(duplicates)} more than once")
    try:
        again = msgspec.json.decode(msgspec.json.encode(descriptor), type=AdapterDescriptor)
        if again != descriptor:
            problems.append("the descriptor does not survive a JSON round trip unchanged")
    except (msgspec.ValidationError, TypeError) as exc:
        problems.append(f"the descriptor does not survive a JSON round trip: {exc}")
    second = adapter.descriptor()
    if second != descriptor:
        problems.append(
            f"descriptor() must be static: two calls gave {show(descriptor)} and {show(second)}"
        )
    fail_if("the descriptor must be a well-formed, static identity", problems)


def capabilities_honest(ctx: CheckContext) -> None:
    descriptor = ctx.descriptor()
    refusals = []
    for probe in ctx.probes():
        ctx.rig.serve(probe)
        outcome = run_execute(ctx.new_adapter(), ctx.request(probe), ctx.timeout)
        if outcome.timed_out:
            refusals.append(f"{probe.name}: still running after {ctx.timeout:g} s")
        elif outcome.error is not None:
            refusals.append(f"{probe.name}: raised {describe_error(outcome.error)}")
    fail_if(
        "a declared capability must be honoured (the application, not the adapter, refuses "
        "interactions needing a capability the adapter lacks); the adapter declares "
        f"{show(descriptor.capabilities)} but failed the kit's request for it",
        refusals,
    )


# --- receipts -----------------------------------------------------------------------------


def receipt_well_formed(ctx: CheckContext) -> None:
    descriptor = ctx.descriptor()
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        if receipt.adapter != descriptor:
            problems.append(
                f"{probe.name}: receipt.adapter {show(receipt.adapter)} must equal "
                f"descriptor() {show(descriptor)}"
            )
        for field in ("request_fingerprint", "output_fingerprint"):
            value = getattr(receipt, field)
            if not isinstance(value, str) or not HEX64.fullmatch(value):
                problems.append(
                    f"{probe.name}: {field} {value!r} must be 64 lowercase hex digits (SHA-256)"
                )
        flag: Any = receipt.output_schema_valid
        if not isinstance(flag, bool):
            problems.append(f"{probe.name}: output_schema_valid must be a bool")
        try:
            canonical_json(receipt.output)
        except (CanonicalJSONError, TypeError, ValueError) as exc:
            problems.append(f"{probe.name}: the output cannot be written as canonical JSON: {exc}")
            continue
        if not roundtrips(receipt):
            problems.append(f"{probe.name}: the receipt does not survive a JSON round trip")
    fail_if("receipts must be well formed", problems)


def streamed_receipts(outcome: Outcome) -> list[tuple[str, ExecutionReceipt]]:
    """``(where, receipt)`` for the receipt a stream returned and every ``Complete`` it sent."""
    found = [(f"Complete event {i}", r) for i, r in enumerate(completes_of(outcome.events))]
    if outcome.receipt is not None:
        found.append(("the returned receipt", outcome.receipt))
    return found


def _fingerprint_problem(where: str, receipt: ExecutionReceipt) -> str | None:
    try:
        expected = fingerprint(receipt.output)
    except (CanonicalJSONError, TypeError, ValueError) as exc:
        return f"{where}: the output cannot be fingerprinted: {exc}"
    if receipt.output_fingerprint == expected:
        return None
    return (
        f"{where}: output_fingerprint is {receipt.output_fingerprint!r} but "
        f"fingerprint(output) is {expected!r} for output {show(receipt.output)}; set it to "
        "templiqx_contracts.fingerprint(output) of the output the receipt carries"
    )


def output_fingerprint(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        problem = _fingerprint_problem(f"{probe.name} via execute", receipt)
        if problem is not None:
            problems.append(problem)
        outcome = ctx.stream(probe)
        for where, streamed in streamed_receipts(outcome):
            problem = _fingerprint_problem(f"{probe.name} via execute_streaming, {where}", streamed)
            if problem is not None:
                problems.append(problem)
    fail_if(
        "output_fingerprint must equal fingerprint(output) (SHA-256 of its canonical JSON), on "
        "execute's receipt and on the streamed one",
        problems,
    )


def request_fingerprint(ctx: CheckContext) -> None:
    problems = []
    seen: dict[bytes, str] = {}
    for probe in ctx.probes():
        adapter = ctx.new_adapter()
        first = ctx.execute(probe, adapter)
        again = ctx.execute(probe, adapter)
        fresh = ctx.execute(probe)
        if again.request_fingerprint != first.request_fingerprint:
            problems.append(
                f"{probe.name}: a repeated call on the same adapter gave "
                f"{again.request_fingerprint!r} after {first.request_fingerprint!r}"
            )
        if fresh.request_fingerprint != first.request_fingerprint:
            problems.append(
                f"{probe.name}: a fresh adapter gave {fresh.request_fingerprint!r}, "
                f"the first gave {first.request_fingerprint!r}"
            )
        outcome = ctx.stream(probe)
        for streamed in completes_of(outcome.events):
            if streamed.request_fingerprint != first.request_fingerprint:
                problems.append(
                    f"{probe.name}: streaming changed it to {streamed.request_fingerprint!r} "
                    f"(execute gave {first.request_fingerprint!r})"
                )
        interaction = canonical_json(probe.interaction)
        for other_interaction, other_fp in seen.items():
            if other_fp == first.request_fingerprint and other_interaction != interaction:
                problems.append(
                    f"{probe.name}: a different interaction gave the same request_fingerprint "
                    f"{other_fp!r}; it must bind the request"
                )
        seen[interaction] = first.request_fingerprint
    fail_if(
        "request_fingerprint must be a stable function of the request, unaffected by streaming",
        problems,
    )


def output_schema_valid(ctx: CheckContext) -> None:
    probes = ctx.probes()
    declared = set(ctx.descriptor().capabilities)
    negatives = [
        probe
        for capability, probe in NEGATIVE_PROBES.items()
        if capability in declared and probe not in probes and ctx.rig.accepts(probe)
    ]
    problems = []
    judged_invalid = 0
    for probe in [*probes, *negatives]:
        receipt = ctx.execute(probe)
        judged_invalid += not interaction_output_valid(probe.interaction, receipt.output, _accepts)
        problem = validity_problem(probe.interaction, receipt)
        if problem is not None:
            problems.append(f"{probe.name} via execute: {problem}")
        for where, streamed in streamed_receipts(ctx.stream(probe)):
            if show(streamed.output, 10**9) != show(receipt.output, 10**9):
                continue  # a different output is streaming.complete_matches_execute's finding
            problem = validity_problem(probe.interaction, streamed)
            if problem is not None:
                problems.append(f"{probe.name} via execute_streaming, {where}: {problem}")
    fail_if(
        "output_schema_valid must agree with the interaction's output schema (a tool-call answer "
        "to an interaction that declares tools: with the declared tools), on both paths",
        problems,
    )
    if not judged_invalid:
        raise NotApplicableError(
            "not exercised: the kit asked for outputs that break their schema "
            f"({', '.join(p.name for p in probes + negatives if not p.schema_valid)}) but the "
            "adapter never produced one, so its judgement of an invalid output was never seen; "
            "an adapter that replays fixture_output, or one run over a wire, produces them"
        )


# --- concurrency --------------------------------------------------------------------------

_PARALLEL_CALLS = 8


def parallel_execute(ctx: CheckContext) -> None:
    probe: Probe = ctx.probes()[0]
    adapter = ctx.new_adapter()
    ctx.rig.serve(probe)
    request = ctx.request(probe)
    with ThreadPoolExecutor(max_workers=_PARALLEL_CALLS) as pool:
        outcomes = list(
            pool.map(lambda _: run_execute(adapter, request, ctx.timeout), range(_PARALLEL_CALLS))
        )
    problems = []
    receipts: list[ExecutionReceipt] = []
    for index, outcome in enumerate(outcomes):
        if outcome.timed_out:
            problems.append(f"call {index}: still running after {ctx.timeout:g} s")
        elif outcome.error is not None:
            problems.append(f"call {index}: raised {describe_error(outcome.error)}")
        elif isinstance(outcome.result, ExecutionReceipt):
            receipts.append(outcome.result)
        else:
            problems.append(f"call {index}: returned {type(outcome.result).__name__}")
    for index, receipt in enumerate(receipts[1:], 1):
        diff = receipt_diff(receipts[0], receipt, ("first", f"call {index}"))
        if diff:
            problems.append(f"call {index} differs from the first:\n{diff}")
    fail_if(
        f"one adapter must serve {_PARALLEL_CALLS} concurrent executions of the same request "
        "with identical receipts (adapters are shared between threads)",
        problems,
    )
