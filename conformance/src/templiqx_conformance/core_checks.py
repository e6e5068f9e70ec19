"""The port-contract checks every adapter must pass, whatever its transport.

:data:`CORE_CHECKS` is the fixture suite; a transport suite runs these too, then its own. The
streaming and cancellation checks live in :mod:`templiqx_conformance.stream_checks`, the
secrets check in :mod:`templiqx_conformance.secrets_check`.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec

from templiqx_conformance.context import (
    HEX64,
    Check,
    CheckContext,
    completes_of,
    fail_if,
    receipt_diff,
    roundtrips,
    show,
    validity_problem,
)
from templiqx_conformance.failure_checks import failure_projection
from templiqx_conformance.probes import Probe
from templiqx_conformance.recording import describe_error, run_execute
from templiqx_conformance.secrets_check import secrets_not_exposed
from templiqx_conformance.stream_checks import (
    cancellation_token,
    complete_matches_execute,
    default_projection,
    deltas_match_output,
    event_order,
)
from templiqx_conformance.tool_probe import declared_tools_check
from templiqx_contracts import (
    AdapterDescriptor,
    CanonicalJSONError,
    ExecutionReceipt,
    canonical_json,
    fingerprint,
)

__all__ = ["CORE_CHECKS"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]*")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]*")
_CAPABILITY = re.compile(r"[A-Za-z0-9._:-]+")


# --- descriptor ---------------------------------------------------------------------------


def _descriptor_well_formed(ctx: CheckContext) -> None:
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


def _capabilities_honest(ctx: CheckContext) -> None:
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


def _receipt_well_formed(ctx: CheckContext) -> None:
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


def _output_fingerprint(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        try:
            expected = fingerprint(receipt.output)
        except (CanonicalJSONError, TypeError, ValueError) as exc:
            problems.append(f"{probe.name}: the output cannot be fingerprinted: {exc}")
            continue
        if receipt.output_fingerprint != expected:
            problems.append(
                f"{probe.name}: receipt says {receipt.output_fingerprint!r}, "
                f"fingerprint(output) is {expected!r} for output {show(receipt.output)}"
            )
    fail_if(
        "output_fingerprint must equal fingerprint(output) (SHA-256 of its canonical JSON)",
        problems,
    )


def _request_fingerprint(ctx: CheckContext) -> None:
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


def _output_schema_valid(ctx: CheckContext) -> None:
    problems = []
    for probe in ctx.probes():
        receipt = ctx.execute(probe)
        problem = validity_problem(probe.interaction, receipt)
        if problem is not None:
            problems.append(f"{probe.name}: {problem}")
    fail_if(
        "output_schema_valid must agree with the interaction's output schema (a tool-call answer "
        "to an interaction that declares tools: with the declared tools)",
        problems,
    )


# --- failures -----------------------------------------------------------------------------


# --- concurrency --------------------------------------------------------------------------

_PARALLEL_CALLS = 8


def _parallel_execute(ctx: CheckContext) -> None:
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


CORE_CHECKS: tuple[Check, ...] = (
    Check(
        "descriptor.well_formed",
        "descriptor() is a static, well-formed identity (id, version, capabilities)",
        _descriptor_well_formed,
    ),
    Check(
        "descriptor.capabilities_honest",
        "every declared capability the kit can exercise is honoured",
        _capabilities_honest,
    ),
    Check(
        "receipt.well_formed",
        "receipts carry the descriptor, SHA-256 fingerprints and JSON-able output",
        _receipt_well_formed,
    ),
    Check(
        "receipt.output_fingerprint",
        "output_fingerprint == fingerprint(output)",
        _output_fingerprint,
    ),
    Check(
        "receipt.request_fingerprint",
        "request_fingerprint is stable across calls and unaffected by streaming",
        _request_fingerprint,
    ),
    Check(
        "receipt.output_schema_valid",
        "output_schema_valid agrees with the output schema",
        _output_schema_valid,
    ),
    Check(
        "streaming.event_order",
        "every stream is deltas then exactly one terminal event, nothing after it",
        event_order,
    ),
    Check(
        "streaming.complete_matches_execute",
        "the Complete receipt equals the execute receipt, field by field, for every probe",
        complete_matches_execute,
    ),
    Check(
        "streaming.deltas_match_output",
        "joined Delta texts are the output; tool-call fragments assemble to its arguments",
        deltas_match_output,
    ),
    Check(
        "streaming.default_projection",
        "an adapter with the default execute_streaming emits exactly one Complete",
        default_projection,
    ),
    Check(
        "failure.projection",
        "each failure yields exactly one Failed equal to the raised error, nothing after it",
        failure_projection,
    ),
    Check(
        "cancellation.token",
        "a token set before the call or at the first delta ends the stream within 1 s with "
        "TQX_RUNTIME_CANCELLED",
        cancellation_token,
    ),
    Check(
        "secrets.not_exposed",
        "no credential appears in an event, receipt, error or diagnostic, for any probe or failure",
        secrets_not_exposed,
    ),
    Check(
        "concurrency.parallel_execute",
        "one adapter serves concurrent executions with identical receipts",
        _parallel_execute,
    ),
    Check(
        "tools.declared_calls",
        "(tool_calling adapters) declared tools reach the model and judge its calls: an "
        "undeclared or forbidden call is invalid on both paths",
        declared_tools_check,
    ),
)
