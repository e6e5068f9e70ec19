"""Four-way parity: the Python API, the CLI, the MCP server and HTTP give equal envelopes.

Every catalog operation runs through the four surfaces with a success case and at least one
failure case, in one sequence whose writes build on each other (create, put, sign, update,
delete …). Each surface replays the sequence on a fresh copy of the same sandbox, at the same
path, so the envelopes — paths in messages included — must be equal as JSON values, with no
normalisation. A guard fails when the catalog gains an operation without parity cases. Over
HTTP each call is the request :func:`templiqx_http.http_call` builds from the same arguments
(the reference's route, body, query and headers), answered by the app ``create_app`` builds,
and its status is 2xx exactly when the envelope is ``ok``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from starlette.testclient import TestClient

from templiqx_application import CATALOG
from templiqx_contracts import Diagnostic, OperationEnvelope
from templiqx_http import create_app, http_call, status_for
from templiqx_local.compose import compose

Results = dict[str, dict[str, Any]]

SIGNING = {"TEMPLIQX_PACKAGE_SIGNING_KEY": "parity-signing-key"}
OS = "onboarding-summary"
AD = "account-digest"
PROOF = "parity-proof"

HELLO = """api_version: templiqx/v1alpha1
id: hello
version: 0.1.0
description: Greets someone by name.
inputs:
  name:
    required: true
    schema: {type: string, minLength: 1}
capabilities: [text]
messages:
  - role: user
    content:
      - kind: text
        value: "Say hello to "
      - kind: interpolate
        expression: {kind: ref, path: inputs.name}
output_schema: {type: string}
"""

BROKEN_MANIFEST = "api_version: templiqx/v1alpha1\n"


@dataclass(frozen=True)
class Case:
    """One call, the same on every surface."""

    id: str
    operation: str
    ok: bool
    arguments: Callable[[Results], dict[str, Any]]
    """Python / MCP arguments, from the earlier envelopes of the same surface."""
    cli: Callable[[Results, Path], list[str]]
    """CLI arguments after ``--root R --json``, given the earlier envelopes and the inputs dir."""
    before: Callable[[Path], None] | None = None
    after: Callable[[Path], None] | None = None


def _fp(results: Results, case: str, key: str) -> str:
    value: str = results[case]["fingerprints"][key]
    return value


def _add_broken_package(root: Path) -> None:
    (root / "broken").mkdir()
    (root / "broken" / "templiqx.yaml").write_text(BROKEN_MANIFEST, encoding="utf-8")


def _remove_broken_package(root: Path) -> None:
    shutil.rmtree(root / "broken")


WELCOME = Path(__file__).resolve().parents[2] / "fixtures" / "packages" / "welcome"
SCENARIO = WELCOME / "scenarios" / "stream-vip"


def _request() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIO / "request.json").read_text(encoding="utf-8"))
    return data


def _output() -> Any:
    manifest = json.loads((SCENARIO / "manifest.json").read_text(encoding="utf-8"))
    return manifest["events"][-1]["output"]


def _cases() -> list[Case]:
    request = _request()
    output = _output()
    caps = ["structured_output"]
    proof_sha = hashlib.sha256(PROOF.encode()).hexdigest()
    compile_args = {"package": "welcome", "contract": OS, **request, "capabilities": caps}

    def values(inputs: Path) -> list[str]:
        return ["--values", str(inputs / "values.json"), "--capability", "structured_output"]

    fixture = ["--fixture-output"]
    return [
        Case("catalog", "catalog", True, lambda r: {}, lambda r, i: ["catalog"]),
        Case(
            "catalog.names",
            "catalog",
            True,
            lambda r: {"view": "names"},
            lambda r, i: ["catalog", "--view", "names"],
        ),
        Case(
            "catalog.full",
            "catalog",
            True,
            lambda r: {"view": "full"},
            lambda r, i: ["catalog", "--view", "full"],
        ),
        Case("discover", "discover_packages", True, lambda r: {}, lambda r, i: ["discover"]),
        Case(
            "discover.broken-package",
            "discover_packages",
            False,
            lambda r: {},
            lambda r, i: ["discover"],
            before=_add_broken_package,
            after=_remove_broken_package,
        ),
        Case(
            "validate_package",
            "validate_package",
            True,
            lambda r: {"package": "welcome"},
            lambda r, i: ["validate", "welcome"],
        ),
        Case(
            "validate_package.missing",
            "validate_package",
            False,
            lambda r: {"package": "nope"},
            lambda r, i: ["validate", "nope"],
        ),
        Case(
            "validate_contract",
            "validate_contract",
            True,
            lambda r: {"package": "welcome", "contract": OS},
            lambda r, i: ["validate", "welcome", OS],
        ),
        Case(
            "validate_contract.missing",
            "validate_contract",
            False,
            lambda r: {"package": "welcome", "contract": "nope"},
            lambda r, i: ["validate", "welcome", "nope"],
        ),
        Case(
            "inspect",
            "inspect_contract",
            True,
            lambda r: {"package": "welcome", "contract": OS},
            lambda r, i: ["inspect", "welcome", OS],
        ),
        Case(
            "inspect.missing",
            "inspect_contract",
            False,
            lambda r: {"package": "welcome", "contract": "nope"},
            lambda r, i: ["inspect", "welcome", "nope"],
        ),
        Case(
            "explain",
            "explain_contract",
            True,
            lambda r: {"package": "welcome", "contract": AD},
            lambda r, i: ["explain", "welcome", AD],
        ),
        Case(
            "explain.missing",
            "explain_contract",
            False,
            lambda r: {"package": "welcome", "contract": "nope"},
            lambda r, i: ["explain", "welcome", "nope"],
        ),
        Case(
            "diff",
            "diff_contract",
            True,
            lambda r: {
                "left_package": "welcome",
                "left_contract": OS,
                "right_package": "welcome",
                "right_contract": AD,
            },
            lambda r, i: ["diff", "welcome", OS, "welcome", AD],
        ),
        Case(
            "diff.missing",
            "diff_contract",
            False,
            lambda r: {
                "left_package": "welcome",
                "left_contract": OS,
                "right_package": "welcome",
                "right_contract": "nope",
            },
            lambda r, i: ["diff", "welcome", OS, "welcome", "nope"],
        ),
        Case(
            "compile",
            "compile_contract",
            True,
            lambda r: dict(compile_args),
            lambda r, i: ["compile", "welcome", OS, *values(i)],
        ),
        Case(
            "compile.no-values",
            "compile_contract",
            False,
            lambda r: {"package": "welcome", "contract": OS, "capabilities": caps},
            lambda r, i: ["compile", "welcome", OS, "--capability", "structured_output"],
        ),
        Case(
            "render",
            "render_contract",
            True,
            lambda r: dict(compile_args),
            lambda r, i: ["render", "welcome", OS, *values(i)],
        ),
        Case(
            "render.no-capability",
            "render_contract",
            False,
            lambda r: {"package": "welcome", "contract": OS, **request},
            lambda r, i: ["render", "welcome", OS, "--values", str(i / "values.json")],
        ),
        Case(
            "execute",
            "execute_contract",
            True,
            lambda r: {**compile_args, "fixture_output": output},
            lambda r, i: ["execute", "welcome", OS, *values(i), *fixture, str(i / "output.json")],
        ),
        Case(
            "execute.stream",
            "execute_contract",
            True,
            lambda r: {**compile_args, "fixture_output": output, "stream": True},
            lambda r, i: [
                "execute",
                "welcome",
                OS,
                *values(i),
                *fixture,
                str(i / "output.json"),
                "--stream",
            ],
        ),
        Case(
            "execute.no-fixture",
            "execute_contract",
            False,
            lambda r: dict(compile_args),
            lambda r, i: ["execute", "welcome", OS, *values(i)],
        ),
        Case(
            "execute.stream-failure",
            "execute_contract",
            False,
            lambda r: {**compile_args, "stream": True},
            lambda r, i: ["execute", "welcome", OS, *values(i), "--stream"],
        ),
        Case(
            "execute.invalid-output",
            "execute_contract",
            False,
            lambda r: {**compile_args, "fixture_output": {"summary": 7}},
            lambda r, i: ["execute", "welcome", OS, *values(i), *fixture, str(i / "bad.json")],
        ),
        Case(
            "list_evals",
            "list_evals",
            True,
            lambda r: {"package": "welcome"},
            lambda r, i: ["list-evals", "welcome"],
        ),
        Case(
            "list_evals.missing",
            "list_evals",
            False,
            lambda r: {"package": "nope"},
            lambda r, i: ["list-evals", "nope"],
        ),
        Case(
            "run_eval",
            "run_eval",
            True,
            lambda r: {
                "package": "welcome",
                "contract": AD,
                "fixture_id": "quiet-week",
                "capabilities": ["text"],
            },
            lambda r, i: ["run-eval", "welcome", AD, "quiet-week", "--capability", "text"],
        ),
        Case(
            "run_eval.missing-fixture",
            "run_eval",
            False,
            lambda r: {"package": "welcome", "contract": AD, "fixture_id": "nope"},
            lambda r, i: ["run-eval", "welcome", AD, "nope"],
        ),
        Case(
            "test",
            "test_package",
            True,
            lambda r: {"package": "welcome", "capabilities": ["structured_output", "text"]},
            lambda r, i: [
                "test",
                "welcome",
                "--capability",
                "structured_output",
                "--capability",
                "text",
            ],
        ),
        Case(
            "test.without-capabilities",
            "test_package",
            False,
            lambda r: {"package": "welcome", "capabilities": ["structured_output"]},
            lambda r, i: ["test", "welcome", "--capability", "structured_output"],
        ),
        Case(
            "test.default-capabilities",
            "test_package",
            True,
            lambda r: {"package": "welcome"},
            lambda r, i: ["test", "welcome"],
        ),
        Case(
            "export",
            "export_package_identity",
            True,
            lambda r: {"package": "welcome"},
            lambda r, i: ["export-package-identity", "welcome"],
        ),
        Case(
            "export.missing",
            "export_package_identity",
            False,
            lambda r: {"package": "nope"},
            lambda r, i: ["export-package-identity", "nope"],
        ),
        Case(
            "verify",
            "verify_package_trust",
            True,
            lambda r: {"package": "welcome"},
            lambda r, i: ["verify-package-trust", "welcome"],
        ),
        Case(
            "verify.strict-unsigned",
            "verify_package_trust",
            False,
            lambda r: {"package": "welcome", "strict": True},
            lambda r, i: ["verify-package-trust", "welcome", "--strict"],
        ),
        Case(
            "create",
            "create_package",
            True,
            lambda r: {"name": "parity", "version": "0.1.0"},
            lambda r, i: ["create", "parity"],
        ),
        Case(
            "create.exists",
            "create_package",
            False,
            lambda r: {"name": "welcome", "version": "0.1.0"},
            lambda r, i: ["create", "welcome", "--version", "0.1.0"],
        ),
        Case(
            "put",
            "put_contract",
            True,
            lambda r: {"package": "parity", "contract": "hello", "source": HELLO},
            lambda r, i: ["put", "parity", "hello", str(i / "hello.yaml")],
        ),
        Case(
            "put.stale",
            "put_contract",
            False,
            lambda r: {
                "package": "parity",
                "contract": "hello",
                "source": HELLO,
                "expected_fingerprint": "deadbeef",
            },
            lambda r, i: [
                "put",
                "parity",
                "hello",
                str(i / "hello.yaml"),
                "--expected-fingerprint",
                "deadbeef",
            ],
        ),
        Case(
            "delete.stale",
            "delete_contract",
            False,
            lambda r: {
                "package": "parity",
                "contract": "hello",
                "expected_fingerprint": "deadbeef",
            },
            lambda r, i: ["delete", "parity", "hello", "--expected-fingerprint", "deadbeef"],
        ),
        Case(
            "delete",
            "delete_contract",
            True,
            lambda r: {
                "package": "parity",
                "contract": "hello",
                "expected_fingerprint": _fp(r, "put", "contract"),
            },
            lambda r, i: [
                "delete",
                "parity",
                "hello",
                "--expected-fingerprint",
                _fp(r, "put", "contract"),
            ],
        ),
        Case(
            "export.parity",
            "export_package_identity",
            True,
            lambda r: {"package": "parity"},
            lambda r, i: ["export-package-identity", "parity"],
        ),
        Case(
            "sign.stale",
            "sign_package",
            False,
            lambda r: {"package": "parity", "key_id": "ci", "expected_fingerprint": "deadbeef"},
            lambda r, i: [
                "sign-package",
                "parity",
                "--key-id",
                "ci",
                "--expected-fingerprint",
                "deadbeef",
            ],
        ),
        Case(
            "sign",
            "sign_package",
            True,
            lambda r: {
                "package": "parity",
                "key_id": "ci",
                "expected_fingerprint": _fp(r, "export.parity", "manifest"),
            },
            lambda r, i: [
                "sign-package",
                "parity",
                "--key-id",
                "ci",
                "--expected-fingerprint",
                _fp(r, "export.parity", "manifest"),
            ],
        ),
        Case(
            "verify.strict-signed",
            "verify_package_trust",
            True,
            lambda r: {"package": "parity", "strict": True},
            lambda r, i: ["verify-package-trust", "parity", "--strict"],
        ),
        Case(
            "update.stale",
            "update_package",
            False,
            lambda r: {"package": "parity", "version": "0.2.0", "expected_fingerprint": "beef"},
            lambda r, i: [
                "update-package",
                "parity",
                "--version",
                "0.2.0",
                "--expected-fingerprint",
                "beef",
            ],
        ),
        Case(
            "update",
            "update_package",
            True,
            lambda r: {
                "package": "parity",
                "version": "0.2.0",
                "description": "behaviour parity",
                "expected_fingerprint": _fp(r, "sign", "package"),
            },
            lambda r, i: [
                "update-package",
                "parity",
                "--version",
                "0.2.0",
                "--description",
                "behaviour parity",
                "--expected-fingerprint",
                _fp(r, "sign", "package"),
            ],
        ),
        Case(
            "delete_package.stale",
            "delete_package",
            False,
            lambda r: {"package": "parity", "expected_fingerprint": "deadbeef"},
            lambda r, i: ["delete-package", "parity", "--expected-fingerprint", "deadbeef"],
        ),
        Case(
            "delete_package",
            "delete_package",
            True,
            lambda r: {"package": "parity", "expected_fingerprint": _fp(r, "update", "package")},
            lambda r, i: [
                "delete-package",
                "parity",
                "--expected-fingerprint",
                _fp(r, "update", "package"),
            ],
        ),
        Case(
            "list_artifacts",
            "list_workspace_artifacts",
            True,
            lambda r: {"package": "welcome"},
            lambda r, i: ["list-workspace-artifacts", "welcome"],
        ),
        Case(
            "list_artifacts.bad-prefix",
            "list_workspace_artifacts",
            False,
            lambda r: {"package": "welcome", "prefix": "../outside"},
            lambda r, i: ["list-workspace-artifacts", "welcome", "--prefix", "../outside"],
        ),
        Case(
            "read_artifact",
            "read_artifact",
            True,
            lambda r: {"package": "welcome", "path": "notes.txt"},
            lambda r, i: ["read-artifact", "welcome", "notes.txt"],
        ),
        Case(
            "read_artifact.missing",
            "read_artifact",
            False,
            lambda r: {"package": "welcome", "path": "missing.txt"},
            lambda r, i: ["read-artifact", "welcome", "missing.txt"],
        ),
        Case(
            "delete_artifact.stale",
            "delete_workspace_artifact",
            False,
            lambda r: {"package": "welcome", "path": "notes.txt", "expected_fingerprint": "0" * 64},
            lambda r, i: [
                "delete-workspace-artifact",
                "welcome",
                "notes.txt",
                "--expected-fingerprint",
                "0" * 64,
            ],
        ),
        Case(
            "delete_artifact",
            "delete_workspace_artifact",
            True,
            lambda r: {
                "package": "welcome",
                "path": "notes.txt",
                "expected_fingerprint": proof_sha,
            },
            lambda r, i: [
                "delete-workspace-artifact",
                "welcome",
                "notes.txt",
                "--expected-fingerprint",
                proof_sha,
            ],
        ),
    ]


NO_FAILURE_MODE = {
    "catalog": "reads nothing: every call with valid arguments succeeds (an unknown view is an "
    "argument error, which MCP answers as isError, not as an envelope)",
}
"""Operations that cannot fail on valid arguments, and why (the guard accepts no others)."""


CASES = _cases()


def _write_inputs(inputs: Path) -> None:
    inputs.mkdir(parents=True, exist_ok=True)
    (inputs / "values.json").write_text(json.dumps(_request()), encoding="utf-8")
    (inputs / "output.json").write_text(json.dumps(_output()), encoding="utf-8")
    (inputs / "bad.json").write_text(json.dumps({"summary": 7}), encoding="utf-8")
    (inputs / "hello.yaml").write_text(HELLO, encoding="utf-8")


def _hooks(case: Case, root: Path, phase: str) -> None:
    hook = case.before if phase == "before" else case.after
    if hook is not None:
        hook(root)


def _run_python(cases: list[Case], root: Path) -> Results:
    results: Results = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in SIGNING.items():
            patch.setenv(name, value)
        service = compose(root)
        for case in cases:
            _hooks(case, root, "before")
            envelope = service.invoke(case.operation, case.arguments(results))
            results[case.id] = envelope.to_builtins()
            _hooks(case, root, "after")
    return results


def _run_http(cases: list[Case], root: Path) -> tuple[Results, dict[str, int]]:
    results: Results = {}
    statuses: dict[str, int] = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in SIGNING.items():
            patch.setenv(name, value)
        service = compose(root)
        client = TestClient(create_app(service))
        for case in cases:
            _hooks(case, root, "before")
            call = http_call(case.operation, case.arguments(results))
            response = client.request(
                call.method, call.path, content=call.body, headers=call.headers
            )
            assert response.headers["content-type"] == "application/json", case.id
            results[case.id] = response.json()
            statuses[case.id] = response.status_code
            _hooks(case, root, "after")
        service.close()
    return results, statuses


def _run_cli(
    cases: list[Case], root: Path, inputs: Path, harness: Any
) -> tuple[Results, dict[str, int]]:
    results: Results = {}
    codes: dict[str, int] = {}
    for case in cases:
        _hooks(case, root, "before")
        done = harness.run_cli(root, *case.cli(results, inputs), env=SIGNING, cwd=inputs)
        assert done.stdout, f"{case.id}: no envelope on stdout; stderr: {done.stderr}"
        results[case.id] = done.envelope()
        codes[case.id] = done.code
        _hooks(case, root, "after")
    return results, codes


def _run_mcp(
    cases: list[Case], root: Path, log: Path, harness: Any
) -> tuple[Results, dict[str, bool]]:
    results: Results = {}
    errors: dict[str, bool] = {}

    async def drive() -> None:
        async with harness.mcp_session(root, env=SIGNING, errlog=log) as session:
            for case in cases:
                _hooks(case, root, "before")
                answer = await session.call_tool(case.operation, case.arguments(results))
                errors[case.id] = bool(answer.is_error)
                assert answer.structured_content is not None, f"{case.id}: {answer.content}"
                results[case.id] = answer.structured_content
                text = answer.content[0].text  # type: ignore[union-attr]
                assert json.loads(text) == answer.structured_content, case.id
                _hooks(case, root, "after")

    anyio.run(drive)
    return results, errors


@dataclass
class Outcomes:
    cases: list[Case]
    python: Results
    cli: Results
    cli_codes: dict[str, int]
    mcp: Results
    mcp_errors: dict[str, bool]
    http: Results
    http_statuses: dict[str, int]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory, harness: Any) -> Outcomes:
    base = tmp_path_factory.mktemp("parity")
    sandbox = base / "sandbox"
    inputs = base / "inputs"
    _write_inputs(inputs)
    cases = CASES
    python = _run_python(cases, harness.fresh_sandbox(sandbox))
    cli, codes = _run_cli(cases, harness.fresh_sandbox(sandbox), inputs, harness)
    mcp, errors = _run_mcp(cases, harness.fresh_sandbox(sandbox), base / "mcp.log", harness)
    http, statuses = _run_http(cases, harness.fresh_sandbox(sandbox))
    return Outcomes(cases, python, cli, codes, mcp, errors, http, statuses)


def test_every_catalog_operation_has_success_and_failure_cases() -> None:
    cases = CASES
    operations = [spec.name for spec in CATALOG]
    succeeding = {case.operation for case in cases if case.ok}
    failing = {case.operation for case in cases if not case.ok}
    assert sorted(set(operations) - succeeding) == [], "operations without a success case"
    missing_failures = set(operations) - failing - set(NO_FAILURE_MODE)
    assert sorted(missing_failures) == [], "operations without a failure case"
    assert {case.operation for case in cases} <= set(operations), "cases for unknown operations"
    assert len({case.id for case in cases}) == len(cases), "case ids must be unique"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_surfaces_agree(case: Case, outcomes: Outcomes) -> None:
    python = outcomes.python[case.id]
    assert python["ok"] is case.ok, python["diagnostics"]
    assert outcomes.cli[case.id] == python, "CLI envelope differs from the Python API's"
    assert outcomes.mcp[case.id] == python, "MCP envelope differs from the Python API's"
    assert outcomes.http[case.id] == python, "HTTP envelope differs from the Python API's"
    assert outcomes.cli_codes[case.id] == (0 if case.ok else 2), "CLI exit code"
    assert outcomes.mcp_errors[case.id] is False, "an envelope result is never isError"
    status = outcomes.http_statuses[case.id]
    assert (200 <= status < 300) is case.ok, f"HTTP status {status}"
    assert status == status_for(
        OperationEnvelope.build(  # the rule, on the same codes
            "x", diagnostics=[msgspec.convert(d, Diagnostic) for d in python["diagnostics"]]
        )
    ), "HTTP status is not the status rule's"


def test_streamed_execution_carries_events_on_every_surface(outcomes: Outcomes) -> None:
    plain, streamed = outcomes.python["execute"], outcomes.python["execute.stream"]
    assert "stream_events" not in plain
    assert [event["kind"] for event in streamed["stream_events"]] == ["Complete"]
    assert {k: v for k, v in streamed.items() if k != "stream_events"} == plain


def test_a_failed_stream_keeps_its_terminal_event_on_every_surface(outcomes: Outcomes) -> None:
    plain, streamed = (
        outcomes.python["execute.no-fixture"],
        outcomes.python["execute.stream-failure"],
    )
    assert "stream_events" not in plain
    ((diagnostic),) = streamed["diagnostics"]
    assert streamed["stream_events"] == [
        {"kind": "Failed", "code": diagnostic["code"], "message": diagnostic["message"]}
    ]
    assert {k: v for k, v in streamed.items() if k != "stream_events"} == plain
    for surface in (outcomes.cli, outcomes.mcp, outcomes.http):
        assert surface["execute.stream-failure"] == streamed
