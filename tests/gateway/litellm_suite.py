"""The OpenAI-compatible runtime against a real LiteLLM proxy (opt-in: ``nox -s litellm``).

Not part of the default test run: the file name does not match ``test_*.py``, and it needs a
separate virtual environment with ``litellm[proxy]`` installed (the nox session creates it and
passes its interpreter in ``TEMPLIQX_LITELLM_PYTHON``). The proxy runs on 127.0.0.1 with an
ephemeral port, its models answer with LiteLLM's ``mock_response`` (no provider is called), and
it is stopped at the end. The scenarios: text, JSON (structured output), streaming with usage,
429, 500, a context-window error, an unknown model and a wrong key — all through our runtime,
checked for the stable code, the gateway's own message in the failure, and usage.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import (
    COMPILER_ID,
    CompiledInteraction,
    CompiledMessage,
    ExecutionRequest,
    Usage,
)
from templiqx_ports import (
    PermanentFailureError,
    RateLimitedError,
    RuntimeFailureError,
    RuntimeUnavailableError,
    usage_meter,
)
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

MASTER_KEY = "sk-templiqx-litellm-master-3b9d"
STARTUP_S = 180.0

CONFIG = """\
model_list:
  - model_name: mock-text
    litellm_params:
      model: openai/mock-text
      api_key: sk-upstream-never-called
      mock_response: "Hello from the gateway."
  - model_name: mock-json
    litellm_params:
      model: openai/mock-json
      api_key: sk-upstream-never-called
      mock_response: '{"ok": true}'
  - model_name: mock-429
    litellm_params:
      model: openai/mock-429
      api_key: sk-upstream-never-called
      mock_response: litellm.RateLimitError
  - model_name: mock-500
    litellm_params:
      model: openai/mock-500
      api_key: sk-upstream-never-called
      mock_response: litellm.InternalServerError
  - model_name: mock-context
    litellm_params:
      model: openai/mock-context
      api_key: sk-upstream-never-called
      mock_response: litellm.ContextWindowExceededError
litellm_settings:
  num_retries: 0
general_settings:
  master_key: {master_key}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A LiteLLM proxy on 127.0.0.1; yields its API root (``http://127.0.0.1:PORT/v1``)."""
    python = os.environ.get("TEMPLIQX_LITELLM_PYTHON")
    if not python:
        pytest.fail("run this suite with `nox -s litellm` (TEMPLIQX_LITELLM_PYTHON is not set)")
    folder = tmp_path_factory.mktemp("litellm")
    config = folder / "config.yaml"
    config.write_text(CONFIG.replace("{master_key}", MASTER_KEY), encoding="utf-8")
    port = _free_port()
    log = (folder / "proxy.log").open("w", encoding="utf-8")
    litellm = Path(python).parent / "litellm"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MODEL_"))}
    process = subprocess.Popen(
        [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=folder,
        env={**env, "LITELLM_LOG": "ERROR"},
    )
    try:
        _wait_until_live(port, process, folder / "proxy.log")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()


def _wait_until_live(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    url = f"http://127.0.0.1:{port}/health/liveliness"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the LiteLLM proxy exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    pytest.fail(f"the LiteLLM proxy did not start within {STARTUP_S} s")


def _runtime(proxy: str, model: str, key: str = MASTER_KEY) -> OpenAIRuntime:
    return OpenAIRuntime(
        OpenAISettings(base_url=proxy, api_key=key, model=model, timeout_ms=30_000)
    )


def _request(*, structured: bool) -> ExecutionRequest:
    capabilities = ["structured_output"] if structured else ["text"]
    schema: Any = (
        {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": False,
        }
        if structured
        else {"type": "string"}
    )
    interaction = CompiledInteraction(
        compiler=COMPILER_ID,
        contract_id="gateway",
        contract_version="1.0.0",
        messages=[CompiledMessage(role="user", content="Say hello.")],
        output_schema=schema,
        required_capabilities=capabilities,
        target_capabilities=capabilities,
        runtime_policy={},
        extensions={},
    )
    return ExecutionRequest(interaction=interaction, fixture_output=None)


def _failure(call: Any) -> RuntimeFailureError:
    with pytest.raises(RuntimeFailureError) as caught:
        call()
    return caught.value


def test_text(proxy: str) -> None:
    runtime = _runtime(proxy, "mock-text")
    with usage_meter() as meter:
        receipt = runtime.execute(_request(structured=False))
    assert receipt.output == "Hello from the gateway."
    assert receipt.output_schema_valid
    assert isinstance(meter.usage, Usage)
    assert meter.usage.total_tokens > 0


def test_json(proxy: str) -> None:
    receipt = _runtime(proxy, "mock-json").execute(_request(structured=True))
    assert receipt.output == {"ok": True}
    assert receipt.output_schema_valid


def test_streaming_matches_the_plain_call(proxy: str) -> None:
    runtime = _runtime(proxy, "mock-text")
    events: list[Any] = []
    with usage_meter() as meter:
        streamed = runtime.execute_streaming(_request(structured=False), events.append)
    plain = runtime.execute(_request(structured=False))
    deltas = [event.text for event in events[:-1]]
    assert len(deltas) > 1
    assert "".join(deltas) == streamed.output == plain.output
    assert streamed == plain
    assert meter.usage is not None
    assert meter.usage.total_tokens > 0


@pytest.mark.parametrize("streamed", [False, True])
def test_429(proxy: str, streamed: bool) -> None:
    runtime = _runtime(proxy, "mock-429")
    error = _failure(_call(runtime, streamed))
    assert isinstance(error, RateLimitedError)
    assert "mock rate limit error" in (error.failure.provider_message or "")
    assert "retry" in (error.help or "")


@pytest.mark.parametrize("streamed", [False, True])
def test_500(proxy: str, streamed: bool) -> None:
    error = _failure(_call(_runtime(proxy, "mock-500"), streamed))
    assert isinstance(error, RuntimeUnavailableError)
    assert "mock internal server error" in (error.failure.provider_message or "")


def test_context_window(proxy: str) -> None:
    error = _failure(_call(_runtime(proxy, "mock-context"), False))
    assert isinstance(error, PermanentFailureError)
    assert "context window" in error.failure.detail
    assert "runtime_policy.max_tokens" in (error.help or "")


def test_unknown_model(proxy: str) -> None:
    error = _failure(_call(_runtime(proxy, "no-such-model"), False))
    assert isinstance(error, PermanentFailureError)
    assert "no-such-model" in (error.failure.provider_message or "")
    assert "no-such-model" in (error.help or "")


@pytest.mark.parametrize("streamed", [False, True])
def test_bad_key(proxy: str, streamed: bool) -> None:
    key = "sk-templiqx-wrong-key-8c1f27"
    error = _failure(_call(_runtime(proxy, "mock-text", key), streamed))
    assert isinstance(error, PermanentFailureError)
    assert error.failure.status in (400, 401, 403)
    assert error.failure.provider_message  # the gateway's own words are shown
    assert key not in str(error)
    assert key not in (error.help or "")


def _call(runtime: OpenAIRuntime, streamed: bool) -> Any:
    request = _request(structured=False)
    if streamed:
        return lambda: runtime.execute_streaming(request, lambda event: None)
    return lambda: runtime.execute(request)
