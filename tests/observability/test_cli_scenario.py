"""The Phoenix scenario in CI (issue #32 item 6): the same CLI and HTTP server runs and the same
assertions, with the child processes exporting through the SDK's console exporter to a file
instead of OTLP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scenario import (
    Span,
    check_cli_scenario,
    check_http_scenario,
    run_cli_scenario,
    run_http_scenario,
)

from conftest import Model

OTEL_SITE = Path(__file__).resolve().parent / "otel_site"


def _hex(value: str | None) -> str | None:
    return None if value is None else value.removeprefix("0x")


def read_exported(path: Path) -> list[Span]:
    """The spans in a console exporter's output (metric records are skipped)."""
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    spans: list[Span] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return spans
        value: Any
        value, at = decoder.raw_decode(text, at)
        if isinstance(value, dict) and "context" in value and "name" in value:
            spans.append(
                Span(
                    name=value["name"],
                    trace_id=_hex(value["context"]["trace_id"]) or "",
                    span_id=_hex(value["context"]["span_id"]) or "",
                    parent_id=_hex(value["parent_id"]),
                    kind=value["kind"].removeprefix("SpanKind."),
                    status=value["status"]["status_code"],
                    attributes=value["attributes"],
                )
            )


def test_the_cli_scenario_spans(tmp_path: Path, model: Model) -> None:
    exported = tmp_path / "spans.jsonl"
    env = {"PYTHONPATH": str(OTEL_SITE), "TEMPLIQX_TEST_OTEL_OUT": str(exported)}
    outcome = run_cli_scenario(tmp_path, model, env)
    check_cli_scenario(read_exported(exported), outcome)


def test_the_http_scenario_spans(tmp_path: Path, model: Model) -> None:
    """The real ``templiqx-http-server`` continues a traced client's ``traceparent``."""
    exported = tmp_path / "http-spans.jsonl"
    env = {"PYTHONPATH": str(OTEL_SITE), "TEMPLIQX_TEST_OTEL_OUT": str(exported)}
    outcome = run_http_scenario(tmp_path, model, env)
    check_http_scenario(read_exported(exported), outcome)
