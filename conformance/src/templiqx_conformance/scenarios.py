"""Replaying reference scenario manifests and comparing their golden receipt fingerprints.

A scenario manifest (``templiqx.mock/v1alpha1``) names a contract of the package it sits in, an
input request and the runtime's scripted behaviour; ``golden_receipt_fingerprint`` is the outcome
fingerprint the reference recorded. Replaying one compiles the contract with the real compiler,
runs it through the application service on the scripted runtime (``execute`` and, separately,
``execute_streaming``) and fingerprints the envelope's outcome.

This needs the compiler, the service and the scripted runtime, which the kit does not depend on:
install ``templiqx-conformance[scenarios]``. They are imported only when a replay starts, so the
kit itself stays free of them.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from templiqx_conformance.errors import TargetError
from templiqx_conformance.report import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
)
from templiqx_contracts import OperationEnvelope
from templiqx_ports import EventOrderError, RuntimeAdapter, validate_event_order

__all__ = ["SCENARIO_CAPABILITIES", "replay_scenarios"]

SCENARIO_CAPABILITIES = ["structured_output"]
"""The target capabilities every reference scenario is replayed with."""

_EXTRA = "templiqx-conformance[scenarios]"
_INVARIANT = "the replayed outcome fingerprint equals golden_receipt_fingerprint"


def _scenario_modules() -> tuple[ModuleType, ModuleType]:
    """The scripted runtime and composition (the ``scenarios`` extra), imported lazily."""
    try:
        import templiqx_local
        import templiqx_mock
    except ImportError as exc:
        raise TargetError(
            f"scenario replay needs templiqx-mock, templiqx-local and templiqx-application "
            f"(compiler, service and scripted runtime): install {_EXTRA!r}, "
            f"e.g. pip install '{_EXTRA}'"
        ) from exc
    return templiqx_mock, templiqx_local


def _locate(directory: Path) -> tuple[Path, Path]:
    """``(scenarios folder, package folder)`` for a package folder or a scenarios folder."""
    if (directory / "templiqx.yaml").is_file() and (directory / "scenarios").is_dir():
        return directory / "scenarios", directory
    if (directory.parent / "templiqx.yaml").is_file():
        return directory, directory.parent
    raise TargetError(
        f"{directory} is neither a package folder with scenarios/ nor a scenarios folder "
        "inside a package (no templiqx.yaml found beside it)"
    )


def replay_scenarios(
    directory: str | Path,
    *,
    runtime_factory: Callable[[Any], RuntimeAdapter] | None = None,
) -> ConformanceReport:
    """Replay every ``*/manifest.json`` of a scenarios folder (or of a package's ``scenarios/``).

    The package is copied to a temporary folder first, so the replay never writes beside the
    manifests. ``runtime_factory`` receives the loaded manifest and returns the runtime to run it
    on; by default the scripted runtime replays the manifest itself. One result per scenario,
    named ``scenario.<id>``.
    """
    mock, local = _scenario_modules()
    scenarios_dir, package_dir = _locate(Path(directory).resolve())
    manifests = sorted(scenarios_dir.glob("*/manifest.json"))
    if not manifests:
        raise TargetError(f"no */manifest.json under {scenarios_dir}")
    results: list[CheckResult] = []
    with tempfile.TemporaryDirectory(prefix="templiqx-scenarios-") as scratch:
        root = Path(scratch) / "packages"
        shutil.copytree(package_dir, root / package_dir.name, symlinks=False)
        for path in manifests:
            copied = root / package_dir.name / path.relative_to(package_dir)
            results.append(
                _replay_one(mock, local, copied, package_dir.name, Path(scratch), runtime_factory)
            )
    descriptor = mock.ScriptedRuntime.success().descriptor() if runtime_factory is None else None
    return ConformanceReport(
        api_version=REPORT_API_VERSION,
        kit_version="0.2.0",
        adapter=descriptor,
        transport=None,
        ok=not any(result.status is CheckStatus.FAILED for result in results),
        checks=results,
    )


def _replay_one(
    mock: ModuleType,
    local: ModuleType,
    path: Path,
    package: str,
    scratch: Path,
    runtime_factory: Callable[[Any], RuntimeAdapter] | None,
) -> CheckResult:
    start = time.monotonic()
    name = f"scenario.{path.parent.name}"

    def result(status: CheckStatus, message: str = "") -> CheckResult:
        return CheckResult(
            name=name,
            invariant=_INVARIANT,
            status=status,
            message=message,
            duration_ms=int((time.monotonic() - start) * 1000),
        )

    try:
        manifest = mock.load_scenario(path)
    except Exception as exc:  # a manifest the mock refuses is a failed replay, not a crash
        return result(CheckStatus.FAILED, f"the manifest does not load: {exc}")
    name = f"scenario.{manifest.id}"
    golden = manifest.golden_receipt_fingerprint
    if golden is None:
        return result(CheckStatus.NOT_APPLICABLE, "the manifest has no golden_receipt_fingerprint")
    if manifest.input is None:
        return result(CheckStatus.NOT_APPLICABLE, "the manifest names no input request")
    request = mock.read_json_file(path.parent / manifest.input)
    fixture = mock.load_expected_output(manifest, path)
    problems = []
    for stream in (False, True):
        runtime = (
            runtime_factory(manifest)
            if runtime_factory is not None
            else mock.ScriptedRuntime.from_manifest(manifest)
        )
        service = local.compose(
            scratch / "packages", workspace=scratch / f"workspace-{manifest.id}", runtime=runtime
        )
        envelope: OperationEnvelope = service.execute_contract(
            package,
            manifest.contract,
            inputs=request.get("inputs", {}),
            context=request.get("context", {}),
            capabilities=list(SCENARIO_CAPABILITIES),
            fixture_output=fixture,
            stream=stream,
        )
        mode = "execute_streaming" if stream else "execute"
        try:
            replayed = mock.envelope_outcome_fingerprint(envelope)
        except ValueError as exc:
            problems.append(f"{mode}: the envelope has no outcome: {exc}")
            continue
        if replayed != golden:
            codes = ", ".join(d.code for d in envelope.diagnostics) or "none"
            problems.append(
                f"{mode}: replayed {replayed}, golden {golden} (ok={envelope.ok}, "
                f"diagnostics: {codes})"
            )
        if stream and envelope.ok and envelope.stream_events:
            try:
                validate_event_order(envelope.stream_events)
            except EventOrderError as exc:
                problems.append(f"{mode}: {exc}")
    if problems:
        return result(
            CheckStatus.FAILED,
            "the replayed outcome must reproduce the golden receipt fingerprint:\n  "
            + "\n  ".join(problems),
        )
    return result(CheckStatus.PASSED)
