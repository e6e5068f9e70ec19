"""Running checks against an adapter: the library entry points behind the plugin and command.

Checks run in order. A check whose dependency (``Check.depends``) failed or was not run is not
run either: it is reported *not run*, naming the root check — so one bug gives one failure, and
no dependent check spends its deadline on the consequences. Every message is scrubbed of the
credentials the adapter holds before it leaves the kit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from templiqx_conformance.checks import CORE_CHECKS, TRANSPORT_CHECKS
from templiqx_conformance.checks.context import Check, CheckContext
from templiqx_conformance.errors import BrokenInvariantError, NotApplicableError, TargetError
from templiqx_conformance.report import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
)
from templiqx_conformance.rig.calls import describe_error
from templiqx_conformance.rig.rig import FixtureRig, Rig
from templiqx_conformance.rig.wire_rig import WireRig
from templiqx_conformance.target import AdapterTarget, FailureCase, as_target
from templiqx_conformance.wires.wire import Wire
from templiqx_contracts import AdapterDescriptor
from templiqx_ports import RuntimeAdapter

__all__ = [
    "KIT_VERSION",
    "blocked_by",
    "check_names",
    "checks_for",
    "run_check",
    "run_checks",
    "run_conformance",
]

KIT_VERSION = "0.2.0"


def checks_for(transport: str | Wire | None) -> tuple[Check, ...]:
    """Every check of the suite for ``transport`` (``None``: the fixture suite), in run order.

    Every transport runs the same checks: the port checks, then the transport suite.
    """
    return CORE_CHECKS if transport is None else CORE_CHECKS + TRANSPORT_CHECKS


def check_names(transport: str | Wire | None = None) -> list[str]:
    """The names of the checks :func:`run_conformance` runs for ``transport``."""
    return [check.name for check in checks_for(transport)]


def make_rig(target: AdapterTarget) -> Rig:
    """The rig for ``target``: the loopback server's with a transport, else fixture outputs."""
    return FixtureRig(target) if target.wire is None else WireRig(target)


def blocked_by(check: Check, results: Mapping[str, CheckResult]) -> str | None:
    """The message of a check that must not run because a dependency failed (else ``None``).

    It names the dependency and the root cause: the failed check itself, or — through a
    dependency that was not run — the failed check that one was waiting for.
    """
    for name in check.depends:
        result = results.get(name)
        if result is None or result.status not in (CheckStatus.FAILED, CheckStatus.NOT_RUN):
            continue
        if result.status is CheckStatus.FAILED:
            return f"not run: depends on {name}, which failed; fix {name} first"
        root = result.message.rsplit("; fix ", 1)[-1].removesuffix(" first")
        return f"not run: depends on {name}, not run either; fix {root} first"
    return None


def _scrub(text: str, rig: Rig) -> str:
    for index, (_label, secret) in enumerate(rig.secrets()):
        text = text.replace(secret, f"[credential #{index + 1}]")
    return text


def run_one(
    check: Check, rig: Rig, results: Mapping[str, CheckResult] | None = None
) -> CheckResult:
    """Run ``check`` with ``rig`` (or report it not run when ``results`` show a failed
    dependency)."""
    blocked = blocked_by(check, results) if results is not None else None
    if blocked is not None:
        return CheckResult(
            name=check.name, invariant=check.invariant, status=CheckStatus.NOT_RUN, message=blocked
        )
    start = time.monotonic()
    ctx = CheckContext(rig)
    try:
        check.run(ctx)
    except BrokenInvariantError as failure:
        status, message = CheckStatus.FAILED, str(failure)
    except NotApplicableError as reason:
        status, message = CheckStatus.NOT_APPLICABLE, str(reason)
    except Exception as exc:  # a check must never crash the run: report what the adapter did
        status = CheckStatus.FAILED
        message = f"the adapter broke the check with an unexpected {describe_error(exc)}"
    else:
        status, message = CheckStatus.PASSED, ""
    return CheckResult(
        name=check.name,
        invariant=check.invariant,
        status=status,
        message=_scrub(message, rig),
        duration_ms=int((time.monotonic() - start) * 1000),
    )


def _descriptor_of(rig: Rig) -> AdapterDescriptor | None:
    try:
        return CheckContext(rig).descriptor()
    except (BrokenInvariantError, NotApplicableError):
        return None


def run_check(
    name: str,
    factory: AdapterTarget | Callable[..., RuntimeAdapter],
    *,
    transport: str | Wire | None = None,
    failures: Sequence[FailureCase] | None = None,
    secrets: Sequence[str] | None = None,
) -> CheckResult:
    """Run the single check called ``name`` against the adapter the factory makes.

    Its dependencies are not consulted: the check runs whatever they would say.
    """
    target = as_target(factory, transport=transport, failures=failures, secrets=secrets)
    by_name = {check.name: check for check in checks_for(target.transport)}
    if name not in by_name:
        raise TargetError(
            f"no check called {name!r} in this suite; the checks are {', '.join(by_name)}"
        )
    rig = make_rig(target)
    try:
        return run_one(by_name[name], rig)
    finally:
        rig.close()


def run_checks(
    target: AdapterTarget, checks: Iterable[Check]
) -> tuple[AdapterDescriptor | None, list[CheckResult]]:
    """Run ``checks`` in order on one rig, skipping those whose dependencies failed."""
    rig = make_rig(target)
    results: dict[str, CheckResult] = {}
    try:
        descriptor = _descriptor_of(rig)
        for check in checks:
            results[check.name] = run_one(check, rig, results)
    finally:
        rig.close()
    return descriptor, list(results.values())


def run_conformance(
    factory: AdapterTarget | Callable[..., RuntimeAdapter],
    *,
    transport: str | Wire | None = None,
    failures: Sequence[FailureCase] | None = None,
    secrets: Sequence[str] | None = None,
    checks: Iterable[str] | None = None,
) -> ConformanceReport:
    """Run the kit against an adapter and return the report.

    ``factory`` is a zero-argument adapter factory (fixture suite), a factory receiving the
    loopback base URL (with a ``transport``: ``"openai"``, another registered name, or a
    :class:`~templiqx_conformance.wires.Wire`), or an :class:`AdapterTarget`. ``failures``
    lists the failures the adapter can be driven into, ``secrets`` the credentials it holds.
    ``checks`` restricts the run to the named checks (all by default); a named check whose
    dependency is not among them runs regardless.
    """
    target = as_target(factory, transport=transport, failures=failures, secrets=secrets)
    suite = checks_for(target.transport)
    if checks is not None:
        wanted = list(checks)
        unknown = [name for name in wanted if name not in {check.name for check in suite}]
        if unknown:
            raise TargetError(
                f"unknown check(s) {', '.join(unknown)}; the checks are "
                f"{', '.join(check.name for check in suite)}"
            )
        suite = tuple(check for check in suite if check.name in wanted)
    descriptor, results = run_checks(target, suite)
    return ConformanceReport(
        api_version=REPORT_API_VERSION,
        kit_version=KIT_VERSION,
        adapter=descriptor,
        transport=target.transport_name,
        ok=not any(result.status is CheckStatus.FAILED for result in results),
        checks=results,
    )
