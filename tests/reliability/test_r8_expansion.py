"""R8: string alias bombs that stay under every size and node limit are refused while reading.

Issue #18 item 1. R7's bombs all exceed a limit; these do not: a 1 MB string aliased 1,000
times is 1 MB of YAML (an eighth of ``MAX_DOCUMENT_BYTES``) and about a thousand nodes (far
under ``MAX_EXPANDED_NODES`` and ``ALIAS_EXPANSION_FACTOR``), yet a gigabyte once fingerprinted,
cached or sent back (``put`` took 4.2 s and 2.97 GB; ``export_package_identity`` of a manifest
bomb 1.9 GB). Each bomb reaches templiqx the way a user's document would — a ``put_contract``
source, a stored contract, manifest (``tool_contracts``), lock, partial or translation bundle, a
mock scenario file, a YAML render request — and must be refused within one second, with a
``TQX_*`` error naming ``MAX_EXPANDED_BYTES``, while peak memory grows by at most 64 MiB.

Under ``ulimit -v`` the 4,000-alias bomb used to kill the process with SIGSEGV inside msgspec's
encoder; here real ``templiqx`` processes run under a 256 MiB address-space limit
(``RLIMIT_AS``) and must answer with an envelope.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit

from templiqx_application import TempliqxService
from templiqx_contracts import OperationEnvelope
from templiqx_core import limits, parse_render_request
from templiqx_local import compose
from templiqx_mock import runtime_from_path
from templiqx_ports import PortError

SUITE = "R8"
DEADLINE_S = 1.0
MEMORY_BUDGET_MIB = 64.0
LIMIT = "MAX_EXPANDED_BYTES"
ADDRESS_SPACE_MIB = 256
TEXT = "y" * 1_000_000


def _aliases(count: int, item: Callable[[int], str]) -> str:
    return "".join(item(index) for index in range(count))


def contract_bomb(aliases: int = 1000) -> str:
    messages = _aliases(aliases, lambda _: "  - {role: user, content: [{kind: text, value: *s}]}\n")
    return (
        "api_version: templiqx/v1alpha1\nid: onboarding-summary\nversion: 1.0.0\n"
        f"description: &s {TEXT}\ncapabilities: [text]\nmessages:\n{messages}"
        "output_schema: {type: string}\n"
    )


def manifest_bomb() -> str:
    tools = _aliases(
        1000, lambda i: f"  t{i}: {{fingerprint: f, schema: {{type: string, description: *s}}}}\n"
    )
    return (
        "api_version: templiqx/v1alpha1\npackage: welcome\nversion: 1.0.0\n"
        f"description: &s {TEXT}\ncontracts: [onboarding-summary, account-digest]\n"
        f"components: [partials/house-style.yaml]\ntool_contracts:\n{tools}"
    )


def lock_bomb() -> str:
    entries = _aliases(1000, lambda i: f"  d{i}: {{path: d{i}, fingerprint: *s}}\n")
    return f"dependencies:\n  d: {{path: d, fingerprint: &s {TEXT}}}\n{entries}"


def partial_bomb() -> str:
    return f"- {{kind: text, value: &s {TEXT}}}\n" + _aliases(
        1000, lambda _: "- {kind: text, value: *s}\n"
    )


def translation_bomb() -> str:
    return f"k: &s {TEXT}\n" + _aliases(1000, lambda i: f"k{i}: *s\n")


def scenario_bomb() -> str:
    events = _aliases(1000, lambda i: f"  - {{kind: delta, id: d{i}, text: *s}}\n")
    return (
        "api_version: templiqx.mock/v1alpha1\nid: bomb\ncontract: onboarding-summary\n"
        f"kind: happy_path\ndescription: &s {TEXT}\nevents:\n{events}"
    )


def request_bomb() -> str:
    return f"inputs:\n  note: &s {TEXT}\n  notes: [{', '.join(['*s'] * 1000)}]\n"


def test_the_bombs_stay_under_every_other_limit() -> None:
    for build in (
        contract_bomb,
        manifest_bomb,
        lock_bomb,
        partial_bomb,
        translation_bomb,
        scenario_bomb,
        request_bomb,
    ):
        source = build()
        assert len(source.encode()) < limits.MAX_DOCUMENT_BYTES // 4
        assert source.count("*s") * 2 < limits.MAX_EXPANDED_NODES // 10
        assert len(TEXT) * source.count("*s") > 50 * limits.MAX_EXPANDED_BYTES  # ~1 GB expanded


# --- through the service ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TempliqxService]:
    root = tmp_path_factory.mktemp("r8") / "root"
    kit.fresh_welcome(root)
    return root, compose(root)


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    figures = kit.FIGURES
    figures.expect(SUITE, "string alias bombs under every other limit", ">=", 16)
    figures.expect(SUITE, "refused with a TQX_* error naming MAX_EXPANDED_BYTES", ">=", 16)
    figures.expect(SUITE, "slowest refusal", "<=", DEADLINE_S, " s")
    figures.expect(SUITE, "largest peak-memory growth", "<=", MEMORY_BUDGET_MIB, " MiB")
    figures.expect(SUITE, f"processes under ulimit -v {ADDRESS_SPACE_MIB} MiB", ">=", 3)
    figures.expect(SUITE, "processes killed by a signal", "==", 0)
    yield
    total = figures.get(SUITE, "string alias bombs under every other limit")
    figures.expect(SUITE, "refused with a TQX_* error naming MAX_EXPANDED_BYTES", "==", total)
    processes = figures.get(SUITE, f"processes under ulimit -v {ADDRESS_SPACE_MIB} MiB")
    figures.expect(SUITE, "processes answering with an envelope", "==", processes)


def _check(label: str, run: Callable[[], tuple[list[str], list[str]]]) -> None:
    figures = kit.FIGURES
    figures.add(SUITE, "string alias bombs under every other limit")
    with kit.measure_peak() as peak:
        codes, messages = run()
    figures.peak(SUITE, "slowest refusal", round(peak.seconds, 3))
    if peak.growth_mib is not None:
        figures.peak(SUITE, "largest peak-memory growth", round(peak.growth_mib, 1))
    named = bool(codes) and all(kit.CODE.fullmatch(c) for c in codes)
    named = named and any(LIMIT in message for message in messages)
    if named:
        figures.add(SUITE, "refused with a TQX_* error naming MAX_EXPANDED_BYTES")
    assert named, f"{label}: {codes} {messages}"
    assert peak.seconds <= DEADLINE_S, f"{label}: took {peak.seconds:.2f} s"
    if peak.growth_mib is not None:
        assert peak.growth_mib <= MEMORY_BUDGET_MIB, f"{label}: grew {peak.growth_mib:.0f} MiB"


def _errors(envelope: OperationEnvelope, operation: str) -> tuple[list[str], list[str]]:
    problems = kit.envelope_problems(envelope, operation)
    assert not problems, problems
    assert not envelope.ok, f"{operation} accepted the bomb"
    errors = [d for d in envelope.diagnostics if d.severity == "error"]
    return [d.code for d in errors], [d.message for d in errors]


def test_put_contract_source(sandbox: tuple[Path, TempliqxService]) -> None:
    _, service = sandbox
    for aliases in (1000, 4000):
        source = contract_bomb(aliases)
        arguments = {"package": "welcome", "contract": "bomb", "source": source}
        _check(
            f"put_contract ({aliases} aliases)",
            lambda a=arguments: _errors(service.invoke("put_contract", a), "put_contract"),
        )


ONBOARDING = {"package": "welcome", "contract": "onboarding-summary"}
STORED: dict[str, tuple[str, Callable[[], str], list[tuple[str, dict[str, Any]]]]] = {
    "contract": (
        "contracts/onboarding-summary.yaml",
        contract_bomb,
        [
            ("inspect_contract", ONBOARDING),
            ("compile_contract", ONBOARDING),
            ("validate_contract", ONBOARDING),
            ("validate_package", {"package": "welcome"}),
        ],
    ),
    "manifest (tool_contracts)": (
        "templiqx.yaml",
        manifest_bomb,
        [
            ("export_package_identity", {"package": "welcome"}),
            ("validate_package", {"package": "welcome"}),
            ("discover_packages", {}),
            ("verify_package_trust", {"package": "welcome"}),
        ],
    ),
    "lock": ("templiqx.lock", lock_bomb, [("validate_package", {"package": "welcome"})]),
    "include partial": (
        "partials/house-style.yaml",
        partial_bomb,
        [("compile_contract", ONBOARDING), ("inspect_contract", ONBOARDING)],
    ),
    "translation bundle": (
        "translations/nl.yaml",
        translation_bomb,
        [("compile_contract", ONBOARDING)],
    ),
}


@pytest.mark.parametrize("stored", list(STORED))
def test_stored_document(sandbox: tuple[Path, TempliqxService], stored: str) -> None:
    root, service = sandbox
    relative, build, calls = STORED[stored]
    target = root / "welcome" / relative
    original = target.read_bytes() if target.exists() else None
    target.write_text(build(), encoding="utf-8")
    try:
        for operation, arguments in calls:
            _check(
                f"stored {stored} / {operation}",
                lambda o=operation, a=arguments: _errors(service.invoke(o, a), o),
            )
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_bytes(original)


def test_mock_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(scenario_bomb(), encoding="utf-8")

    def run() -> tuple[list[str], list[str]]:
        try:
            runtime_from_path(path)
        except PortError as error:
            return [error.code], [str(error)]
        raise AssertionError("the scenario bomb was accepted")

    _check("mock scenario file", run)


def test_yaml_render_request() -> None:
    def run() -> tuple[list[str], list[str]]:
        request, diagnostics = parse_render_request(request_bomb())
        assert request is None
        return [d.code for d in diagnostics], [d.message for d in diagnostics]

    _check("YAML render request", run)


# --- real processes under an address-space limit ----------------------------------------------


def _limited() -> None:
    limit = ADDRESS_SPACE_MIB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _templiqx_under_ulimit(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    figures = kit.FIGURES
    figures.add(SUITE, f"processes under ulimit -v {ADDRESS_SPACE_MIB} MiB")
    done = subprocess.run(
        [sys.executable, "-m", "templiqx_cli", "--json", "--root", str(root), *args],
        capture_output=True,
        preexec_fn=_limited,  # only setrlimit, in the child before it runs Python
        timeout=60,
        check=False,
    )
    if done.returncode < 0:
        figures.add(SUITE, "processes killed by a signal")
    return done


@pytest.mark.parametrize(
    ("label", "relative", "build", "args"),
    [
        ("put SOURCE", None, lambda: contract_bomb(4000), ("put", "welcome", "bomb")),
        (
            "compile a stored contract",
            "contracts/onboarding-summary.yaml",
            lambda: contract_bomb(4000),
            ("compile", "welcome", "onboarding-summary"),
        ),
        (
            "export a manifest's identity",
            "templiqx.yaml",
            manifest_bomb,
            ("export-package-identity", "welcome"),
        ),
    ],
)
def test_4000_aliases_under_ulimit_give_an_envelope(
    tmp_path: Path,
    label: str,
    relative: str | None,
    build: Callable[[], str],
    args: tuple[str, ...],
) -> None:
    root = tmp_path / "root"
    kit.fresh_welcome(root)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(build(), encoding="utf-8")
    if relative is None:
        args = (*args, str(bomb))
    else:
        os.replace(bomb, root / "welcome" / relative)
    done = _templiqx_under_ulimit(root, *args)
    assert done.returncode >= 0, f"{label}: killed by signal {-done.returncode}"
    envelope = json.loads(done.stdout)
    errors = [d for d in envelope["diagnostics"] if d["severity"] == "error"]
    assert any(LIMIT in d["message"] for d in errors), f"{label}: {errors}"
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr
    kit.FIGURES.add(SUITE, "processes answering with an envelope")


def test_the_memory_detector_sees_a_planted_allocation() -> None:
    with kit.measure_peak() as peak:
        planted = bytearray(128 * 1024 * 1024)
        planted[::4096] = b"x" * len(planted[::4096])  # touch every page
        del planted
    if peak.growth_mib is None:
        pytest.skip("/proc cannot reset the peak resident set here")
    assert peak.growth_mib >= 120
