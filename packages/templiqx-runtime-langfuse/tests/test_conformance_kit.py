"""The conformance kit's OpenAI transport suite (and every port check) against this runtime.

The kit's loopback server plays the model; a second loopback server plays Langfuse, so trace
ingestion (best effort, on success and failure) never counts as a model request. The kit's
pytest plugin adds one test per check beside this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from templiqx_conformance import run_conformance
from templiqx_conformance.loopback import LoopbackServer, Reply
from templiqx_runtime_langfuse import LangfuseRuntime, LangfuseSettings
from templiqx_runtime_openai import OpenAISettings

INGESTION = "/api/public/ingestion"
KIT_KEYS = ("sk-kit-model-5b1e", "pk-lf-kit-77c2", "sk-lf-kit-a90d")


@pytest.fixture
def langfuse_server() -> Iterator[LoopbackServer]:
    with LoopbackServer(routes={INGESTION: Reply.json({"successes": [], "errors": []})}) as server:
        yield server


@pytest.fixture
def templiqx_openai_adapter_factory(
    langfuse_server: LoopbackServer,
) -> Callable[[str], LangfuseRuntime]:
    def make(base_url: str) -> LangfuseRuntime:
        model_key, public_key, secret_key = KIT_KEYS
        return LangfuseRuntime(
            OpenAISettings(
                base_url=base_url, api_key=model_key, model="kit-model", timeout_ms=10_000
            ),
            LangfuseSettings(
                host=langfuse_server.base_url, public_key=public_key, secret_key=secret_key
            ),
        )

    return make


@pytest.fixture
def templiqx_secrets() -> list[str]:
    """The model key and both Langfuse keys: none may show up in anything the kit sees."""
    return list(KIT_KEYS)


def test_the_kit_passes_and_no_report_repeats_a_key(
    templiqx_openai_adapter_factory: Callable[[str], LangfuseRuntime],
    langfuse_server: LoopbackServer,
) -> None:
    report = run_conformance(
        templiqx_openai_adapter_factory,
        transport="openai",
        checks=["receipt.request_fingerprint", "failure.projection", "transport.fault_matrix"],
    )
    assert report.ok, [check.message for check in report.failed_checks]
    for key in KIT_KEYS:
        assert key.encode() not in report.to_json()
    assert langfuse_server.requests_to(INGESTION), "traces go to the Langfuse server"
