"""Proof against a real backend (issue #32 item 6): templiqx's spans in Arize Phoenix.

Run by ``nox -s phoenix`` (opt-in: it installs Phoenix into its own virtual environment and
takes a few minutes), never by the default test run. It starts Phoenix on 127.0.0.1 with
ephemeral ports and a fresh working folder, runs templiqx the way a user deploys it — under
``opentelemetry-instrument`` with the OTLP/HTTP exporter pointed at Phoenix and no line of
OpenTelemetry set-up of its own — through the scenario of :mod:`scenario` (a streamed contract,
a failed call, a batch) on the CLI and on the HTTP server (``templiqx-http-server`` called by a
traced client, whose ``traceparent`` every operation continues), then reads every span back
from Phoenix's REST API and checks names, parenting and attributes with the same assertions the
CI runs against the SDK's exporter (``test_cli_scenario.py``).

``TEMPLIQX_PHOENIX_PYTHON`` names the interpreter that has ``arize-phoenix`` (the session sets
it). Every process started here is stopped here.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scenario import (
    Span,
    check_cli_scenario,
    check_http_scenario,
    run_cli_scenario,
    run_http_scenario,
)

from conftest import Model

STARTUP_S = 300.0
"""Phoenix needs ~40 s to start on an idle two-core machine; several times that under load."""

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Phoenix:
    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base_url + path, timeout=30) as answer:
            return json.load(answer)

    def spans(self, project: str) -> list[Span]:
        found: list[Span] = []
        cursor = ""
        while True:
            page = self.get(f"/v1/projects/{project}/spans?limit=1000{cursor}")
            for item in page["data"]:
                found.append(
                    Span(
                        name=item["name"],
                        trace_id=item["context"]["trace_id"],
                        span_id=item["context"]["span_id"],
                        parent_id=item["parent_id"],
                        kind="",  # Phoenix reports OpenInference kinds, not OpenTelemetry's
                        status=item["status_code"],
                        attributes=item["attributes"],
                    )
                )
            if not page.get("next_cursor"):
                return found
            cursor = f"&cursor={page['next_cursor']}"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    python = os.environ.get("TEMPLIQX_PHOENIX_PYTHON")
    if not python:
        pytest.fail("TEMPLIQX_PHOENIX_PYTHON is not set: run this suite with `nox -s phoenix`")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = _free_port(), _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = work / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [python, "-m", "phoenix.server.main", "serve"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=work,
        )
    server = Phoenix(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"Phoenix exited: {log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(server.base_url + "/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"Phoenix did not start in {STARTUP_S:.0f} s: {log.read_text()[-3000:]}"
                )
            time.sleep(1.0)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def otlp_env(phoenix: Phoenix, project: str, service: str) -> dict[str, str]:
    """What a user sets to send a templiqx process's traces to Phoenix (docs/observability.md)."""
    return {
        "OTEL_SERVICE_NAME": service,
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.base_url + "/v1/traces",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    }


def wait_for_spans(phoenix: Phoenix, project: str, at_least: int) -> list[Span]:
    """Phoenix's spans of ``project`` once at least ``at_least`` have been ingested."""
    deadline = time.monotonic() + 120.0
    spans: list[Span] = []
    while time.monotonic() < deadline:
        try:
            spans = phoenix.spans(project)
        except urllib.error.HTTPError as error:
            if error.code != 404:  # the project appears with its first span
                raise
        if len(spans) >= at_least:
            time.sleep(2.0)  # let stragglers of the same batch land
            return phoenix.spans(project)
        time.sleep(1.0)
    pytest.fail(f"Phoenix holds {len(spans)} spans of {project}, expected at least {at_least}")


def test_the_cli_in_phoenix(phoenix: Phoenix, tmp_path: Path) -> None:
    project = f"templiqx-cli-{secrets.token_hex(4)}"
    launcher = [str(BIN / "opentelemetry-instrument"), str(BIN / "templiqx")]
    model = Model()
    with model.server:
        outcome = run_cli_scenario(
            tmp_path, model, otlp_env(phoenix, project, "templiqx-cli"), launcher=launcher
        )
    spans = wait_for_spans(phoenix, project, at_least=11)
    check_cli_scenario(spans, outcome)
    print(f"\nPhoenix: {len(spans)} spans of the CLI scenario read back from {project}")


def test_the_http_server_in_phoenix(phoenix: Phoenix, tmp_path: Path) -> None:
    project = f"templiqx-http-{secrets.token_hex(4)}"
    launcher = [str(BIN / "opentelemetry-instrument"), str(BIN / "templiqx-http-server")]
    model = Model()
    with model.server:
        outcome = run_http_scenario(
            tmp_path, model, otlp_env(phoenix, project, "templiqx-http"), launcher=launcher
        )
    spans = wait_for_spans(phoenix, project, at_least=10)
    check_http_scenario(spans, outcome)
    print(f"\nPhoenix: {len(spans)} spans of the HTTP scenario read back from {project}")
