"""Acceptance 6 (second half): every code the application emits or relays from a port (the
tables in ``templiqx_application.codes``, a superset of application.md Appendix A for this
scope) is produced through the service by a scenario below."""

from __future__ import annotations

import fcntl
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from templiqx_application import (
    APPLICATION_CODES,
    PORT_CODES,
    DeterministicFakeRuntime,
    StreamLimits,
    TempliqxService,
    fix_hint,
)
from templiqx_contracts import (
    AdapterDescriptor,
    Delta,
    Diagnostic,
    ExecutionReceipt,
    ExecutionRequest,
    OperationEnvelope,
    PackageManifest,
    ToolContractRef,
    fingerprint,
)
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_mock import ScriptedRuntime
from templiqx_ports import (
    PortError,
    PortIOError,
    RuntimeAdapter,
    RuntimeFailureCode,
    UnsupportedError,
)

CAPS = ["structured_output"]

# application.md Appendix A, minus the quality codes (assess_quality_proposals is not in the
# catalog yet) and the codes relayed from the core (documented by the core).
APPENDIX_A = {
    "TQX_PACKAGE_UPDATE_EMPTY",
    "TQX_MANIFEST_VERSION_INVALID",
    "TQX_MANIFEST_API_VERSION",
    "TQX_MANIFEST_PACKAGE",
    "TQX_INVENTORY_DUPLICATE",
    "TQX_CONTRACT_INVENTORY_ID",
    "TQX_LOCK_INVALID",
    "TQX_LOCK_MISSING",
    "TQX_LOCK_DRIFT",
    "TQX_DEPENDENCY_ROOT_MISSING",
    "TQX_PACKAGE_SIGNING_KEY_MISSING",
    "TQX_PACKAGE_UNSIGNED",
    "TQX_PACKAGE_SIGNATURE_ALGORITHM_UNSUPPORTED",
    "TQX_PACKAGE_SIGNATURE_DUPLICATE",
    "TQX_PACKAGE_SIGNATURE_UNVERIFIED",
    "TQX_PACKAGE_SIGNATURE_INVALID",
    "TQX_INCLUDE_CYCLE",
    "TQX_INCLUDE_UNRESOLVED",
    "TQX_INCLUDE_INVALID",
    "TQX_TRANSLATION_INVALID",
    "TQX_RUNTIME_CAPABILITY_UNSUPPORTED",
    "TQX_OUTPUT_SCHEMA",
    "TQX_TEST_FAILED",
    "TQX_NOT_FOUND",
    "TQX_SERIALIZE",
    "TQX_AUTHORIZED_CONTEXT_REQUIREMENT_INVALID",
    "TQX_AUTHORIZED_CONTEXT_MISSING",
    "TQX_AUTHORIZED_CONTEXT_INVALID",
    "TQX_AUTHORIZED_CONTEXT_REDACTED",
    "TQX_AUTHORIZED_CONTEXT_EXPIRED",
    "TQX_AUTHORIZED_CONTEXT_MISMATCH",
    "TQX_CAS_CONFLICT",
    "TQX_PATH_INVALID",
    "TQX_UNSUPPORTED",
    "TQX_IO",
    "TQX_DATA_INVALID",
    "TQX_RUNTIME_TIMEOUT",
    "TQX_RUNTIME_RATE_LIMITED",
    "TQX_RUNTIME_UNAVAILABLE",
    "TQX_RUNTIME_INVALID_RESPONSE",
    "TQX_RUNTIME_PERMANENT",
    "TQX_HOST_RETRY_EXHAUSTED",
}

CONTRACT = """\
api_version: templiqx/v1alpha1
id: {id}
version: 1.0.0
capabilities: [structured_output]
messages:
  - role: user
    content:
{body}
output_schema:
  type: object
  additionalProperties: false
  properties:
    ok: {{type: boolean}}
{extra}"""


def source(
    contract_id: str = "c", body: str = "      - {kind: text, value: hi}", extra: str = ""
) -> str:
    return CONTRACT.format(id=contract_id, body=body, extra=extra)


@dataclass
class Kit:
    root: Path
    build: Callable[..., TempliqxService]
    write: Callable[..., Path]
    monkeypatch: pytest.MonkeyPatch

    def service(self, runtime: RuntimeAdapter | None = None, **kwargs: Any) -> TempliqxService:
        return self.build(self.root, runtime, **kwargs)

    def package(self, name: str = "p", contracts: dict[str, str] | None = None, **kw: Any) -> str:
        self.write(self.root, name, contracts=contracts or {"c": source()}, **kw)
        return name

    def compile(self, service: TempliqxService | None = None, **kw: Any) -> OperationEnvelope:
        kw.setdefault("capabilities", CAPS)
        return (service or self.service()).compile_contract("p", "c", **kw)

    def execute(self, runtime: RuntimeAdapter | None = None, **kw: Any) -> OperationEnvelope:
        kw.setdefault("capabilities", CAPS)
        kw.setdefault("fixture_output", {"ok": True})
        return self.service(runtime).execute_contract("p", "c", **kw)

    def signed(self) -> TempliqxService:
        self.package()
        self.monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", "k1")
        service = self.service()
        token = service.export_package_identity("p").fingerprints["manifest"]
        assert service.sign_package("p", key_id="ci", expected_fingerprint=token).ok
        return service

    def edit_manifest(self, **fields: Any) -> None:
        path = self.root / "p" / "templiqx.yaml"
        data = yaml.safe_load(path.read_text("utf-8"))
        data.update(fields)
        path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")


class Raising(RuntimeAdapter):
    def __init__(self, error: Exception, capabilities: list[str] | None = None) -> None:
        self.error = error
        self.capabilities = CAPS if capabilities is None else capabilities

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="raising", version="1", capabilities=self.capabilities)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        raise self.error


class NaNToolStore(FilesystemPackageStore):
    """A store whose manifest carries a tool-contract schema that cannot be fingerprinted."""

    def manifest(self, package: str) -> PackageManifest:
        manifest = super().manifest(package)
        manifest.tool_contracts["t"] = ToolContractRef(
            fingerprint="pin", schema={"type": "object", "maximum": math.nan}
        )
        return manifest


def _merge(**fields: str) -> dict[str, Any]:
    data = {
        "scope_id": "S",
        "policy_decision_id": "D",
        "policy_version": "1",
        "evidence_provenance_id": "P",
        "issued_at": "2026-07-15T10:00:00Z",
        "expires_at": "2099-12-31T23:59:59Z",
    }
    data.update(fields)
    data["fingerprint"] = fields.get("fingerprint", fingerprint(data))
    return data


def _authorized(kit: Kit, context: dict[str, Any], flag: str = "true") -> OperationEnvelope:
    kit.package(provenance={"requires_authorized_context": flag})
    return kit.compile(context=context)


def _runtime_failure(code: RuntimeFailureCode) -> Callable[[Kit], OperationEnvelope]:
    def produce(kit: Kit) -> OperationEnvelope:
        kit.package()
        return kit.execute(ScriptedRuntime.failure(code.value, code))

    return produce


def _cancelled(kit: Kit) -> OperationEnvelope:
    kit.package()
    cancel = threading.Event()
    cancel.set()
    return kit.execute(stream=True, cancel=cancel)


def _busy(kit: Kit) -> OperationEnvelope:
    kit.package()
    store = FilesystemPackageStore(kit.root, lock_timeout=0.05)
    service = TempliqxService(store, FilesystemArtifactWorkspace(kit.root.parent / "ws"))
    token = service.export_package_identity("p").fingerprints["manifest"]
    locks = kit.root / ".templiqx-package-locks"
    locks.mkdir(exist_ok=True)
    held = os.open(locks / "p.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process writing the package
        return service.update_package("p", expected_fingerprint=token, version="2.0.0")
    finally:
        os.close(held)


def _sink_failed(kit: Kit) -> OperationEnvelope:
    kit.package()

    def sink(event: object) -> None:
        raise OSError("closed")

    return kit.execute(stream=True, sink=sink)


class _Chatty(DeterministicFakeRuntime):
    """The fake, with two deltas before its terminal event."""

    def execute_streaming(
        self, request: ExecutionRequest, sink: Any, *, cancel: Any = None
    ) -> ExecutionReceipt:
        sink(Delta(text="a"))
        sink(Delta(text="b"))
        return super().execute_streaming(request, sink, cancel=cancel)


def _events_truncated(kit: Kit) -> OperationEnvelope:
    kit.package()
    service = kit.service(_Chatty(), stream_limits=StreamLimits(events=2))
    return service.execute_contract("p", "c", stream=True, fixture_output={"ok": True})


def _serialize(kit: Kit) -> OperationEnvelope:
    ext = (
        "extensions:\n  acme.tool:\n    capability: structured_output\n"
        '    schema: {"$ref": "tool_contract:t", fingerprint: pin}\n    value: {}\n'
    )
    kit.package(contracts={"c": source(extra=ext)})
    service = TempliqxService(NaNToolStore(kit.root), kit.service()._ctx.workspace, None)
    return service.inspect_contract("p", "c")


def _signature_edit(**fields: Any) -> Callable[[Kit], OperationEnvelope]:
    def produce(kit: Kit) -> OperationEnvelope:
        service = kit.signed()
        kit.edit_manifest(**fields)
        return service.verify_package_trust("p")

    return produce


def _port(error: PortError) -> Callable[[Kit], OperationEnvelope]:
    def produce(kit: Kit) -> OperationEnvelope:
        kit.package()
        return kit.execute(Raising(error))

    return produce


def _test_failed(kit: Kit) -> OperationEnvelope:
    failing = source().replace(
        "output_schema:", "evals:\n  - {id: e, fake_output: {no: 1}}\noutput_schema:"
    )
    kit.package(contracts={"c": failing})
    return kit.service().test_package("p", capabilities=CAPS)


SCENARIOS: dict[str, Callable[[Kit], OperationEnvelope]] = {
    # calling the service
    "TQX_UNKNOWN_OPERATION": lambda kit: kit.service().invoke("render_document", {}),
    "TQX_ARGUMENT_UNKNOWN": lambda kit: kit.service().invoke("list_evals", {"pkg": "p"}),
    "TQX_ARGUMENT_MISSING": lambda kit: kit.service().invoke("list_evals", {}),
    "TQX_ARGUMENT_INVALID": lambda kit: kit.service().invoke("list_evals", {"package": 1}),
    "TQX_INTERNAL": lambda kit: (kit.package(), kit.execute(Raising(KeyError("x"))))[1],
    # packages
    "TQX_PACKAGE_UPDATE_EMPTY": lambda kit: kit.service().update_package(
        "p", expected_fingerprint="f"
    ),
    "TQX_MANIFEST_VERSION_INVALID": lambda kit: kit.service().create_package("n", "v1"),
    "TQX_MANIFEST_API_VERSION": lambda kit: (
        kit.package(api_version="v0"),
        kit.service().validate_package("p"),
    )[1],
    "TQX_MANIFEST_PACKAGE": lambda kit: (
        kit.package(package="q"),
        kit.service().validate_package("p"),
    )[1],
    "TQX_INVENTORY_DUPLICATE": lambda kit: (
        kit.package(evals=["a.json"], templates=["a.json"], files={"a.json": "{}"}),
        kit.service().validate_package("p"),
    )[1],
    "TQX_CONTRACT_INVENTORY_ID": lambda kit: (
        kit.package(contracts={"c": source("d")}),
        kit.service().validate_package("p"),
    )[1],
    "TQX_LOCK_INVALID": lambda kit: (
        kit.package(files={"templiqx.lock": "nope: 1\n"}),
        kit.service().validate_package("p"),
    )[1],
    "TQX_LOCK_MISSING": lambda kit: (
        kit.package(dependencies={"lib": "f"}),
        kit.service().validate_package("p"),
    )[1],
    "TQX_LOCK_DRIFT": lambda kit: (
        kit.package(files={"templiqx.lock": "dependencies: {x: {path: x, fingerprint: f}}\n"}),
        kit.service().validate_package("p"),
    )[1],
    "TQX_DEPENDENCY_ROOT_MISSING": lambda kit: (
        kit.package(
            dependencies={"x": "f"},
            files={"templiqx.lock": "dependencies: {x: {path: x, fingerprint: f}}\n"},
        ),
        kit.service().validate_package("p"),
    )[1],
    # signatures
    "TQX_PACKAGE_SIGNING_KEY_MISSING": lambda kit: (
        kit.package(),
        kit.service().sign_package("p", key_id="ci", expected_fingerprint="f"),
    )[1],
    "TQX_PACKAGE_UNSIGNED": lambda kit: (
        kit.package(),
        kit.service().verify_package_trust("p", strict=True),
    )[1],
    "TQX_PACKAGE_SIGNATURE_ALGORITHM_UNSUPPORTED": _signature_edit(
        signatures=[{"key_id": "ci", "algorithm": "rsa", "value": "00"}]
    ),
    "TQX_PACKAGE_SIGNATURE_DUPLICATE": _signature_edit(
        signatures=[{"key_id": "ci", "algorithm": "sha256-keyed", "value": "00"}] * 2
    ),
    "TQX_PACKAGE_SIGNATURE_UNVERIFIED": lambda kit: (
        kit.signed(),
        kit.monkeypatch.delenv("TEMPLIQX_PACKAGE_SIGNING_KEY"),
        kit.service().validate_package("p"),
    )[2],
    "TQX_PACKAGE_SIGNATURE_INVALID": _signature_edit(description="changed after signing"),
    "TQX_PACKAGE_FILE_UNLISTED": lambda kit: (
        kit.package(
            contracts={"c": source(body="      - {kind: include, path: x.yaml}")},
            files={"x.yaml": "- {kind: text, value: hi}\n"},
        ),
        kit.service().verify_package_trust("p", strict=True),
    )[1],
    "TQX_PACKAGE_DEPENDENCY_UNPINNED": lambda kit: (
        kit.package("lib", files={"x.yaml": "- {kind: text, value: hi}\n"}, components=["x.yaml"]),
        kit.package(
            contracts={
                "c": source(body="      - {kind: include, path: x.yaml, from_dependency: lib}")
            }
        ),
        kit.service().verify_package_trust("p", strict=True),
    )[2],
    # loading contracts
    "TQX_INCLUDE_CYCLE": lambda kit: (
        kit.package(
            contracts={"c": source(body="      - {kind: include, path: x.yaml}")},
            files={"x.yaml": "- {kind: include, path: x.yaml}\n"},
        ),
        kit.service().inspect_contract("p", "c"),
    )[1],
    "TQX_INCLUDE_UNRESOLVED": lambda kit: (
        kit.package(contracts={"c": source(body="      - {kind: include, path: ../x}")}),
        kit.service().inspect_contract("p", "c"),
    )[1],
    "TQX_INCLUDE_INVALID": lambda kit: (
        kit.package(
            contracts={"c": source(body="      - {kind: include, path: x.yaml}")},
            files={"x.yaml": "{}\n"},
        ),
        kit.service().inspect_contract("p", "c"),
    )[1],
    "TQX_TRANSLATION_INVALID": lambda kit: (
        kit.package(translations=["en"], files={"translations/en.yaml": "[1]\n"}),
        kit.compile(),
    )[1],
    # execution and evals
    "TQX_RUNTIME_CAPABILITY_UNSUPPORTED": lambda kit: (
        kit.package(),
        kit.execute(Raising(KeyError("never"), capabilities=[])),
    )[1],
    "TQX_OUTPUT_SCHEMA": lambda kit: (kit.package(), kit.execute(fixture_output={"no": 1}))[1],
    "TQX_TEST_FAILED": _test_failed,
    "TQX_STREAM_SINK_FAILED": _sink_failed,
    "TQX_STREAM_EVENTS_TRUNCATED": _events_truncated,
    "TQX_SERIALIZE": _serialize,
    # authorized merge context
    "TQX_AUTHORIZED_CONTEXT_REQUIREMENT_INVALID": lambda kit: _authorized(kit, {}, "yes"),
    "TQX_AUTHORIZED_CONTEXT_MISSING": lambda kit: _authorized(kit, {}),
    "TQX_AUTHORIZED_CONTEXT_INVALID": lambda kit: _authorized(
        kit, {"_templiqx_authorized_merge": {"scope_id": "S"}}
    ),
    "TQX_AUTHORIZED_CONTEXT_REDACTED": lambda kit: _authorized(
        kit, {"_templiqx_authorized_merge": _merge(scope_id=" ")}
    ),
    "TQX_AUTHORIZED_CONTEXT_EXPIRED": lambda kit: _authorized(
        kit, {"_templiqx_authorized_merge": _merge(expires_at="2026-12-01T00:00:00Z")}
    ),
    "TQX_AUTHORIZED_CONTEXT_MISMATCH": lambda kit: (
        kit.monkeypatch.setenv("TEMPLIQX_AUTHORIZATION_KEY", "host"),
        _authorized(kit, {"_templiqx_authorized_merge": _merge()}),  # an unkeyed fingerprint
    )[1],
    "TQX_AUTHORIZED_CONTEXT_UNVERIFIED": lambda kit: (
        kit.monkeypatch.delenv("TEMPLIQX_AUTHORIZATION_KEY", raising=False),
        _authorized(kit, {"_templiqx_authorized_merge": _merge()}),
    )[1],
    "TQX_CONTEXT_RESERVED": lambda kit: (
        kit.package(),
        kit.compile(context={"_templiqx_translations": {"en": {}}}),
    )[1],
    # relayed from ports
    "TQX_NOT_FOUND": lambda kit: kit.service().inspect_contract("ghost", "c"),
    "TQX_CAS_CONFLICT": lambda kit: (
        kit.package(),
        kit.service().put_contract("p", "c", source()),
    )[1],
    "TQX_PATH_INVALID": lambda kit: kit.service().validate_package("../etc"),
    "TQX_UNSUPPORTED": _port(UnsupportedError("no such feature")),
    "TQX_IO": _port(PortIOError("device busy")),
    "TQX_DATA_INVALID": lambda kit: (kit.package(), kit.execute(fixture_output=None))[1],
    "TQX_RUNTIME_TIMEOUT": _runtime_failure(RuntimeFailureCode.TIMEOUT),
    "TQX_RUNTIME_RATE_LIMITED": _runtime_failure(RuntimeFailureCode.RATE_LIMITED),
    "TQX_RUNTIME_UNAVAILABLE": _runtime_failure(RuntimeFailureCode.UNAVAILABLE),
    "TQX_RUNTIME_INVALID_RESPONSE": _runtime_failure(RuntimeFailureCode.INVALID_RESPONSE),
    "TQX_RUNTIME_PERMANENT": _runtime_failure(RuntimeFailureCode.PERMANENT),
    "TQX_RUNTIME_CANCELLED": _cancelled,
    "TQX_BUSY": _busy,
    "TQX_HOST_RETRY_EXHAUSTED": _runtime_failure(RuntimeFailureCode.HOST_RETRY_EXHAUSTED),
}


def test_the_tables_cover_appendix_a_and_every_scenario() -> None:
    emitted = set(APPLICATION_CODES) | set(PORT_CODES)
    assert emitted >= APPENDIX_A
    assert set(SCENARIOS) == emitted
    for code in emitted:
        assert fix_hint(code)


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_code_is_produced(
    code: str,
    scratch_root: Path,
    make_service: Callable[..., TempliqxService],
    write_pkg: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TEMPLIQX_PACKAGE_SIGNING_KEY", raising=False)
    monkeypatch.delenv("TEMPLIQX_PACKAGE_STRICT", raising=False)
    kit = Kit(root=scratch_root, build=make_service, write=write_pkg, monkeypatch=monkeypatch)
    envelope = SCENARIOS[code](kit)
    diagnostics: list[Diagnostic] = list(envelope.diagnostics)
    assert code in [d.code for d in diagnostics], diagnostics
    produced = next(d for d in diagnostics if d.code == code)
    assert produced.message
    # a help line for every code, whichever layer built the diagnostic (issue #19)
    assert all(d.help for d in diagnostics), [d.code for d in diagnostics if not d.help]
    warnings = {"TQX_STREAM_SINK_FAILED", "TQX_STREAM_EVENTS_TRUNCATED"}
    expected_severity = "warning" if code in warnings else "error"
    assert produced.severity == expected_severity
    if code != "TQX_STREAM_SINK_FAILED":  # a raising sink also cancels the call
        assert envelope.ok is (expected_severity == "warning")
