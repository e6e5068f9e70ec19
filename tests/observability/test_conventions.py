"""Every semantic-convention name templiqx writes is the published one.

The names are checked against the constants of the ``opentelemetry-semantic-conventions``
package (a test dependency; its version is pinned in ``uv.lock``): the GenAI attributes and
metrics (``opentelemetry.semconv._incubating``, where the GenAI conventions are published for
Python) and the stable ``error.type`` / ``server.*`` attributes. A name that is not published
fails here, so a typo, or a convention renamed upstream, cannot reach a user's dashboards.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes, server_attributes

from templiqx_ports import telemetry
from templiqx_ports.telemetry import Attr


def _published(*modules: object) -> set[str]:
    return {
        value
        for module in modules
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }


def test_the_conventions_package_is_present() -> None:
    assert version("opentelemetry-semantic-conventions")


def test_every_convention_attribute_is_published() -> None:
    published = _published(gen_ai_attributes, error_attributes, server_attributes)
    unknown = sorted(set(telemetry.GENAI_ATTRIBUTES) - published)
    assert not unknown, f"not in the published semantic conventions: {unknown}"
    # The list is what templiqx writes: every non-templiqx name of Attr, and nothing else.
    assert set(telemetry.GENAI_ATTRIBUTES) >= {
        Attr.OPERATION_NAME,
        Attr.PROVIDER_NAME,
        Attr.REQUEST_MODEL,
        Attr.RESPONSE_ID,
        Attr.RESPONSE_FINISH_REASONS,
        Attr.USAGE_INPUT_TOKENS,
        Attr.USAGE_OUTPUT_TOKENS,
        Attr.ERROR_TYPE,
    }


def test_every_genai_metric_is_published() -> None:
    published = _published(gen_ai_metrics)
    assert set(telemetry.GENAI_METRICS) <= published


def test_the_values_are_the_conventions_values() -> None:
    operations = {v.value for v in gen_ai_attributes.GenAiOperationNameValues}
    outputs = {v.value for v in gen_ai_attributes.GenAiOutputTypeValues}
    tokens = {v.value for v in gen_ai_attributes.GenAiTokenTypeValues}
    assert "chat" in operations
    assert {"json", "text"} <= outputs
    assert {"input", "output"} <= tokens
    assert "openai" in {v.value for v in gen_ai_attributes.GenAiProviderNameValues}


def test_templiqx_names_stay_in_their_namespace() -> None:
    for name in (*telemetry.TEMPLIQX_ATTRIBUTES, *telemetry.TEMPLIQX_METRICS):
        assert name.startswith("templiqx."), name
    assert not set(telemetry.TEMPLIQX_ATTRIBUTES) & set(telemetry.GENAI_ATTRIBUTES)


def test_the_user_guide_lists_every_attribute_and_metric() -> None:
    """docs/observability.md's tables name every attribute and metric templiqx defines."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text(
        encoding="utf-8"
    )
    tables = "\n".join(line for line in guide.splitlines() if line.startswith("|"))
    names = [value for key, value in vars(Attr).items() if key.isupper()]
    assert len(names) >= 40
    missing = []
    for name in (*names, *telemetry.GENAI_METRICS, *telemetry.TEMPLIQX_METRICS):
        shown = f"`{name}<name>`" if name == Attr.FINGERPRINT_PREFIX else f"`{name}`"
        if shown not in tables:
            missing.append(name)
    assert not missing, f"not in docs/observability.md's tables: {missing}"
