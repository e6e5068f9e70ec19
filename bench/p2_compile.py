"""P2: compile the bli-62 contract with its request against Jinja2 + jsonschema + json.dumps.

Subject: ``compile_interaction`` (contract validation, value validation with formats,
capability negotiation, rendering) on the contract parsed once, then ``fingerprint`` of the
compiled interaction.

Baseline: what a user would otherwise write: the same two messages as precompiled Jinja2
templates, the request checked by a prebuilt ``jsonschema`` Draft 2020-12 validator with format
checking, and the same compiled request serialized with ``json.dumps`` and hashed. Before timing
both sides are checked to produce the same messages and the same SHA-256, and to both reject a
request with an impossible date.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import jinja2
import jsonschema
import yaml
from harness import (
    BenchmarkError,
    Comparison,
    Settings,
    Side,
    calibrate,
    check,
    interleave,
    peak_python_memory,
)

from templiqx_contracts import RenderRequest, canonical_json, fingerprint
from templiqx_core import compile_interaction, parse_contract

__all__ = ["run"]

CONTRACT = "crm3/contracts/bli-62-document-drafting.yaml"
REQUEST = "crm3/evals/bli-62-request.json"
TARGETS = ["structured_output"]

USER_TEMPLATE = (
    "Cliënt: {{ context.client_name | trim }}\n"
    "Zaak: {{ context.matter_reference | trim }}\n"
    "Gevalideerde feiten: {{ inputs.extracted_facts | json }}"
)


def _json_filter(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Baseline:
    """Jinja2 templates, a jsonschema validator and the static parts, all prepared once."""

    def __init__(self, source: dict[str, Any]) -> None:
        env = jinja2.Environment(autoescape=False, keep_trailing_newline=True)
        env.filters["json"] = _json_filter
        self.system = env.from_string(source["messages"][0]["content"][0]["value"])
        self.user = env.from_string(USER_TEMPLATE)

        def scope(fields: dict[str, Any]) -> dict[str, Any]:
            return {
                "type": "object",
                "additionalProperties": False,
                "required": sorted(k for k, f in fields.items() if f.get("required")),
                "properties": {k: f["schema"] for k, f in fields.items()},
            }

        schema = {
            "type": "object",
            "required": ["inputs", "context"],
            "properties": {
                "inputs": scope(source["inputs"]),
                "context": scope(source["context"]),
            },
        }
        self.validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.FormatChecker()
        )
        self.static = {
            "compiler": "templiqx-core/0.2.0",
            "contract_id": source["id"],
            "contract_version": source["version"],
            "output_schema": source["output_schema"],
            "required_capabilities": sorted(source["capabilities"]),
            "target_capabilities": TARGETS,
            "runtime_policy": source["runtime_policy"],
            "extensions": source["extensions"],
        }

    def compile(self, request: dict[str, Any]) -> str:
        self.validator.validate(request)
        compiled = dict(self.static)
        compiled["messages"] = [
            {"role": "system", "content": self.system.render()},
            {"role": "user", "content": self.user.render(request)},
        ]
        text = json.dumps(compiled, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P2",
        what="compile bli-62 + fingerprint",
        baseline="Jinja2 + jsonschema + json.dumps",
        target=1.0,
    )
    source_bytes = (settings.reference / CONTRACT).read_bytes()
    contract, diagnostics = parse_contract(source_bytes)
    check(contract is not None, f"bli-62 does not parse: {diagnostics}")
    assert contract is not None
    request: dict[str, Any] = json.loads((settings.reference / REQUEST).read_text("utf-8"))
    baseline = _Baseline(yaml.safe_load(source_bytes))

    def subject_compile(req: dict[str, Any]) -> str | None:
        interaction, _ = compile_interaction(
            contract, RenderRequest(inputs=req["inputs"], context=req["context"]), TARGETS
        )
        return None if interaction is None else fingerprint(interaction)

    # Check once: both sides produce the same compiled request, and both refuse a bad date.
    interaction, diagnostics = compile_interaction(
        contract, RenderRequest(inputs=request["inputs"], context=request["context"]), TARGETS
    )
    check(interaction is not None and not diagnostics, f"bli-62 does not compile: {diagnostics}")
    assert interaction is not None
    ours = subject_compile(request)
    theirs = baseline.compile(request)
    check(
        ours == theirs,
        "templiqx and the Jinja2 baseline disagree on the compiled request:\n"
        f"{canonical_json(interaction).decode()}",
    )
    bad = copy.deepcopy(request)
    bad["inputs"]["extracted_facts"]["notice_date"] = "2027-02-30"
    check(subject_compile(bad) is None, "templiqx accepted an impossible date")
    try:
        baseline.compile(bad)
    except jsonschema.ValidationError:
        pass
    else:
        raise BenchmarkError("the jsonschema baseline accepted an impossible date")

    subject = Side("templiqx", lambda: subject_compile(request))
    other = Side("jinja2+jsonschema", lambda: baseline.compile(request))
    a, b, ratios = interleave(
        subject,
        other,
        rounds=settings.rounds(21, 5),
        subject_repeat=calibrate(subject.run, 0.05),
        baseline_repeat=calibrate(other.run, 0.05),
    )
    row.record(a, b, ratios)
    row.subject_peak_memory = peak_python_memory(subject.run)
    row.baseline_peak_memory = peak_python_memory(other.run)
    return [row]


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """The measured path, repeated for a profiler."""
    contract, _ = parse_contract((settings.reference / CONTRACT).read_bytes())
    assert contract is not None
    request: dict[str, Any] = json.loads((settings.reference / REQUEST).read_text("utf-8"))

    def repeat() -> None:
        for _ in range(2000):
            interaction, _ = compile_interaction(
                contract,
                RenderRequest(inputs=request["inputs"], context=request["context"]),
                TARGETS,
            )
            fingerprint(interaction)

    return repeat
