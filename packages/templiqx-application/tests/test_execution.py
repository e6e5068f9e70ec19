"""execute_contract: capability check before the runtime, failure mapping, output re-check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import DeterministicFakeRuntime, TempliqxService, fix_hint
from templiqx_contracts import (
    AdapterDescriptor,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_mock import ScriptedRuntime
from templiqx_ports import (
    InvalidDataError,
    PortError,
    PortIOError,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeFailureCode,
    RuntimeFailureError,
    UnsupportedError,
)

Factory = Callable[..., TempliqxService]
CAPS = ["structured_output"]


class Scripted(RuntimeAdapter):
    """A runtime that returns a fixed output with a claimed validity, or raises."""

    def __init__(
        self,
        *,
        output: Any = None,
        claims_valid: bool = True,
        raises: Exception | None = None,
        capabilities: list[str] | None = None,
    ) -> None:
        self.output = output
        self.claims_valid = claims_valid
        self.raises = raises
        self.capabilities = CAPS if capabilities is None else capabilities
        self.calls = 0

    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="test.scripted", version="1", capabilities=self.capabilities)

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.calls += 1
        if self.raises is not None:
            raise self.raises
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request.interaction),
            output_fingerprint=fingerprint(self.output),
            output=self.output,
            output_schema_valid=self.claims_valid,
        )


@pytest.fixture
def root(scratch_root: Path, write_pkg: Callable[..., Path], greeting: Callable[..., str]) -> Path:
    write_pkg(scratch_root, "app", contracts={"hello": greeting()})
    return scratch_root


def _execute(service: TempliqxService, **kwargs: Any) -> Any:
    kwargs.setdefault("capabilities", CAPS)
    return service.execute_contract("app", "hello", inputs={"name": "Ada"}, **kwargs)


def test_capability_check_happens_before_the_runtime(root: Path, make_service: Factory) -> None:
    runtime = Scripted(output={"greeting": "hi"}, capabilities=["text"])
    for stream in (False, True):
        envelope = _execute(make_service(root, runtime), stream=stream)
        (diagnostic,) = envelope.diagnostics
        assert diagnostic.code == "TQX_RUNTIME_CAPABILITY_UNSUPPORTED"
        assert diagnostic.message == "runtime lacks 'structured_output'"
        assert diagnostic.json_pointer == "/capabilities"
    assert runtime.calls == 0


def test_compile_failures_stop_before_the_runtime(root: Path, make_service: Factory) -> None:
    runtime = Scripted(output={"greeting": "hi"})
    envelope = make_service(root, runtime).execute_contract("app", "hello", capabilities=CAPS)
    assert [d.code for d in envelope.diagnostics] == ["TQX_VALUE_REQUIRED"]
    assert envelope.diagnostics[0].file == "app/contracts/hello.yaml"
    assert envelope.fingerprints == {}
    assert runtime.calls == 0


def test_output_validity_is_rechecked_whatever_the_runtime_claims(
    root: Path, make_service: Factory
) -> None:
    lying = Scripted(output={"unexpected": 1}, claims_valid=True)
    envelope = _execute(make_service(root, lying))
    assert not envelope.ok
    # each violation named: where in the output, which keyword, why
    assert [(d.code, d.json_pointer, d.message) for d in envelope.diagnostics] == [
        (
            "TQX_OUTPUT_SCHEMA",
            "/output",
            "/output breaks `additionalProperties`: Additional properties are not allowed "
            "('unexpected' was unexpected)",
        ),
        (
            "TQX_OUTPUT_SCHEMA",
            "/output",
            '/output breaks `required`: "greeting" is a required property',
        ),
    ]
    assert all(d.help == fix_hint("TQX_OUTPUT_SCHEMA") for d in envelope.diagnostics)
    assert isinstance(envelope.result, ExecutionReceipt)  # kept even when invalid
    assert set(envelope.fingerprints) == {"request", "output"}

    modest = Scripted(output={"greeting": "hi"}, claims_valid=False)
    assert _execute(make_service(root, modest)).ok


def test_the_fake_runtime_echoes_the_fixture(root: Path, make_service: Factory) -> None:
    service = make_service(root)
    envelope = _execute(service, fixture_output={"greeting": "Hello Ada"})
    assert envelope.ok
    receipt = envelope.result
    assert isinstance(receipt, ExecutionReceipt)
    assert receipt.adapter.id == "templiqx.fake"
    assert receipt.adapter.capabilities == ["structured_output", "text"]
    compiled = service.compile_contract("app", "hello", inputs={"name": "Ada"}, capabilities=CAPS)
    assert receipt.request_fingerprint == compiled.fingerprints["compiled_interaction"]
    assert receipt.output_fingerprint == fingerprint({"greeting": "Hello Ada"})
    missing = _execute(service)
    (diagnostic,) = missing.diagnostics
    assert diagnostic.code == "TQX_DATA_INVALID"
    assert diagnostic.message == "invalid data: fake runtime requires fixture_output"
    assert diagnostic.help is not None
    assert "as `fixture_output` (the CLI's --fixture-output FILE" in diagnostic.help


def test_fake_runtime_reports_validity_itself() -> None:
    runtime = DeterministicFakeRuntime()
    assert runtime.descriptor().id == "templiqx.fake"
    assert runtime.descriptor().version == "0.2.0"


@pytest.mark.parametrize("code", list(RuntimeFailureCode))
def test_runtime_failures_become_diagnostics_with_their_code(
    root: Path, make_service: Factory, code: RuntimeFailureCode
) -> None:
    runtime = ScriptedRuntime.failure(str(code), code)
    envelope = _execute(make_service(root, runtime), fixture_output={"greeting": "x"})
    assert not envelope.ok
    assert "result" not in envelope.to_builtins()
    assert envelope.fingerprints == {}
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == code.value
    assert diagnostic.message == f"runtime failure {code.value}: scripted runtime failure: {code}"
    tokens = (diagnostic.help or "").split()
    assert tokens[:3] == [
        "adapter=templiqx-scripted-runtime",
        "version=0.2.0",
        f"scenario={code}",
    ]
    retry = "1500" if code is RuntimeFailureCode.RATE_LIMITED else "none"
    assert tokens[3] == f"retry_after_ms={retry}"
    assert tokens[4].startswith("fingerprint=")
    assert runtime.stats().attempts == 1


def test_help_line_without_scenario_or_retry(root: Path, make_service: Factory) -> None:
    failure = RuntimeFailure(
        code=RuntimeFailureCode.TIMEOUT,
        adapter_id="a",
        adapter_version="1",
        fingerprint="ff",
        detail="deadline exceeded",
    )
    envelope = _execute(make_service(root, Scripted(raises=RuntimeFailureError(failure))))
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.help == "adapter=a version=1 scenario=none retry_after_ms=none fingerprint=ff"


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (UnsupportedError("no tools"), "TQX_UNSUPPORTED", "unsupported: no tools"),
        (PortIOError("socket closed"), "TQX_IO", "I/O error: socket closed"),
        (InvalidDataError("bad json"), "TQX_DATA_INVALID", "invalid data: bad json"),
    ],
)
def test_port_errors_from_the_runtime(
    root: Path, make_service: Factory, error: PortError, code: str, message: str
) -> None:
    for stream in (False, True):
        envelope = _execute(make_service(root, Scripted(raises=error)), stream=stream)
        (diagnostic,) = envelope.diagnostics
        assert (diagnostic.code, diagnostic.message, diagnostic.json_pointer) == (code, message, "")
        assert diagnostic.help == fix_hint(code)  # every diagnostic says how to fix it


def test_an_adapter_bug_becomes_an_internal_diagnostic_without_its_text(
    root: Path, make_service: Factory
) -> None:
    runtime = Scripted(raises=ValueError("token=sk-secret"))
    envelope = _execute(make_service(root, runtime))
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == "TQX_INTERNAL"
    assert diagnostic.message == "runtime adapter 'test.scripted' raised an unexpected ValueError"
    assert "sk-secret" not in str(envelope.to_builtins())
