"""A one-contract package for the host-level benchmarks (P8, P11), written to a scratch root.

Its contract asks for the JSON object ``sse_server.py`` answers (``{"summary": ...}``), so the
OpenAI runtime against that server returns a schema-valid output.
"""

from __future__ import annotations

from pathlib import Path

from templiqx_application import TempliqxService
from templiqx_local import compose
from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

__all__ = ["CONTRACT", "PACKAGE", "service_for"]

PACKAGE = "bench-host"
CONTRACT = "summary"
MODEL = "gpt-4o-mini"
API_KEY = "bench-key"

_SOURCE = """\
api_version: templiqx/v1alpha1
id: summary
version: 1.0.0
capabilities: [structured_output]
inputs:
  topic:
    schema: {type: string}
    required: true
messages:
  - role: user
    content:
      - {kind: text, value: "Summarise "}
      - kind: interpolate
        expression: {kind: ref, path: inputs.topic}
output_schema:
  type: object
  additionalProperties: false
  required: [summary]
  properties:
    summary: {type: string}
"""


def service_for(root: Path, base_url: str, *, worker_threads: int | None = None) -> TempliqxService:
    """A service over ``root`` (the package is written once) with the OpenAI runtime."""
    package = root / PACKAGE
    if not package.exists():
        (package / "contracts").mkdir(parents=True)
        (package / "contracts" / f"{CONTRACT}.yaml").write_text(_SOURCE, encoding="utf-8")
        (package / "templiqx.yaml").write_text(
            f"api_version: templiqx/v1alpha1\npackage: {PACKAGE}\nversion: 0.1.0\n"
            f"contracts: [{CONTRACT}]\n",
            encoding="utf-8",
        )
    runtime = OpenAIRuntime(
        OpenAISettings(base_url=base_url, api_key=API_KEY, model=MODEL, timeout_ms=600_000)
    )
    return compose(str(root), runtime=runtime, worker_threads=worker_threads)
