"""Running checks against an adapter: the library entry points behind the plugin and command."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from templiqx_conformance.context import (
    BrokenInvariantError,
    Check,
    CheckContext,
    NotApplicableError,
)
from templiqx_conformance.core_checks import CORE_CHECKS
from templiqx_conformance.recording import describe_error
from templiqx_conformance.report import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
)
from templiqx_conformance.rig import FixtureRig, Rig
from templiqx_conformance.target import AdapterTarget, FailureCase, TargetError, as_target
from templiqx_conformance.transport_suite import TRANSPORT_CHECKS
from templiqx_conformance.wire import Wire
from templiqx_conformance.wire_rig import WireRig
from templiqx_contracts import AdapterDescriptor
from templiqx_ports import RuntimeAdapter

__all__ = ["KIT_VERSION", "check_names", "checks_for", "run_check", "run_conformance"]

KIT_VERSION = "0.2.0"


def checks_for(transport: str | Wire | None) -> tuple[Check, ...]:
    """Every check of the suite for ``transport`` (``None``: the fixture suite), in run order.

    Every transport runs the same checks: the port checks, then the transport suite.
    """
    return CORE_CHECKS if transport is None else CORE_CHECKS + TRANSPORT_CHECKS


def check_names(transport: str | Wire | None = None) -> list[str]:
    """The names of the checks :func:`run_conformance` runs for ``transport``."""
    return [check.name for check in checks_for(transport)]


def _make_rig(target: AdapterTarget) -> Rig:
    return FixtureRig(target) if target.wire is None else WireRig(target)


def _run_one(check: Check, rig: Rig) -> CheckResult:
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
        message=message,
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
    """Run the single check called ``name`` against the adapter the factory makes."""
    target = as_target(factory, transport=transport, failures=failures, secrets=secrets)
    by_name = {check.name: check for check in checks_for(target.transport)}
    if name not in by_name:
        raise TargetError(
            f"no check called {name!r} in this suite; the checks are {', '.join(by_name)}"
        )
    rig = _make_rig(target)
    try:
        return _run_one(by_name[name], rig)
    finally:
        rig.close()


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
    loopback base URL (with a ``transport``: ``"openai"``, a registered name, or a
    :class:`~templiqx_conformance.wire.Wire`), or an :class:`AdapterTarget`. ``failures``
    lists the failures the adapter can be driven into, ``secrets`` the credentials it holds.
    ``checks`` restricts the run to the named checks (all by default).
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
    rig = _make_rig(target)
    try:
        descriptor = _descriptor_of(rig)
        results = [_run_one(check, rig) for check in suite]
    finally:
        rig.close()
    return ConformanceReport(
        api_version=REPORT_API_VERSION,
        kit_version=KIT_VERSION,
        adapter=descriptor,
        transport=target.transport_name,
        ok=not any(result.status is CheckStatus.FAILED for result in results),
        checks=results,
    )
