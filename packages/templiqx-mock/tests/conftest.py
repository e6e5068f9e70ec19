"""Fixtures shared by the templiqx-mock tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import CompiledInteraction, CompiledMessage, ExecutionRequest
from templiqx_mock import MOCK_API_VERSION, ScenarioManifest

REPO = Path(__file__).resolve().parents[3]

ManifestFactory = Callable[..., dict[str, Any]]


def _steps_manifest(**overrides: Any) -> dict[str, Any]:
    """A minimal valid steps manifest as JSON data, with top-level fields replaced."""
    data: dict[str, Any] = {
        "api_version": MOCK_API_VERSION,
        "id": "minimal",
        "contract": "greeting",
        "kind": "happy_path",
        "receipt_payload_policy": "fingerprints_only",
        "steps": [
            {"id": "request-received", "kind": "request_received"},
            {"id": "runtime-success", "kind": "runtime_success"},
        ],
    }
    data.update(overrides)
    return data


def _stream_manifest(events: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    """A stream manifest with the given events."""
    data = _steps_manifest(events=events, **overrides)
    del data["steps"]
    return data


def _parse(data: dict[str, Any]) -> ScenarioManifest:
    return ScenarioManifest.from_json(json.dumps(data).encode("utf-8"))


@pytest.fixture
def steps_manifest() -> ManifestFactory:
    """Factory of a minimal valid steps manifest (JSON data); keywords replace fields."""
    return _steps_manifest


@pytest.fixture
def stream_manifest() -> Callable[..., dict[str, Any]]:
    """Factory of a stream manifest (JSON data) with the given events."""
    return _stream_manifest


@pytest.fixture
def parse() -> Callable[[dict[str, Any]], ScenarioManifest]:
    """Encode JSON data and read it as a manifest (validated)."""
    return _parse


@pytest.fixture
def crm3(reference: Path) -> Path:
    """The reference CRM3 package folder."""
    return reference / "crm3"


@pytest.fixture
def welcome_stream() -> Path:
    """The project's own streaming scenario (fixtures/packages/welcome)."""
    return REPO / "fixtures" / "packages" / "welcome" / "scenarios" / "stream-vip" / "manifest.json"


def _interaction(
    *,
    compiler: str = "conformance",
    contract_id: str = "bli-61-date-term-extraction",
    contract_version: str = "1.0.0",
    messages: list[CompiledMessage] | None = None,
    output_schema: Any = None,
) -> CompiledInteraction:
    """The synthetic interaction of the reference's streaming tests (by default)."""
    return CompiledInteraction(
        compiler=compiler,
        contract_id=contract_id,
        contract_version=contract_version,
        messages=[CompiledMessage(role="user", content="hello")] if messages is None else messages,
        output_schema={"type": "object"} if output_schema is None else output_schema,
        required_capabilities=[],
        target_capabilities=[],
        runtime_policy={},
        extensions={},
    )


def _request(fixture_output: Any = None, **kwargs: Any) -> ExecutionRequest:
    return ExecutionRequest(interaction=_interaction(**kwargs), fixture_output=fixture_output)


def _gateway_request(contract: str, fixture_output: Any) -> ExecutionRequest:
    """The request the reference's mock gateway synthesizes for a scenario's contract."""
    return ExecutionRequest(
        interaction=_interaction(
            compiler="templiqx-mock-gateway",
            contract_id=contract,
            contract_version="mock",
            messages=[],
            output_schema={},
        ),
        fixture_output=fixture_output,
    )


@pytest.fixture
def make_request() -> Callable[..., ExecutionRequest]:
    """Factory of the reference streaming tests' request; ``fixture_output`` first."""
    return _request


@pytest.fixture
def gateway_request() -> Callable[[str, Any], ExecutionRequest]:
    """Factory of the mock gateway's synthesized request for a contract id."""
    return _gateway_request
