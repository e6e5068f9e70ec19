"""The core's caches are bounded by entries and bytes, and never keep whole documents as keys.

Regression of issue #18 item 2: the ``validate_contract`` results and the compiled-schema cache
were keyed by the full msgpack bytes of the contract or schema, so four 1 MB contracts left a
long-running MCP server gigabytes larger for good.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator

import pytest

from templiqx_contracts import Contract, FieldSpec, MessageTemplate, TextNode
from templiqx_core import validate_contract
from templiqx_core.schema import compile_schema

MEGABYTE = 1_000_000


@pytest.fixture
def traced() -> Iterator[None]:
    gc.collect()
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _retained_mib() -> float:
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    return current / (1024 * 1024)


def _big_contract(index: int) -> Contract:
    return Contract(
        api_version="templiqx/v1alpha1",
        id=f"big-{index}",
        version="1.0.0",
        description=str(index) + "d" * MEGABYTE,
        messages=[MessageTemplate(role="user", content=[TextNode(value="hi")])],
        output_schema={"type": "string"},
        inputs={"x": FieldSpec(schema={"type": "string", "description": "s" * 100})},
    )


@pytest.mark.usefixtures("traced")
def test_validation_results_do_not_keep_the_contracts() -> None:
    for index in range(24):
        assert validate_contract(_big_contract(index)) == []
    assert _retained_mib() < 4  # 24 MB of contracts were validated; their keys were 24 MB


@pytest.mark.usefixtures("traced")
def test_the_schema_cache_does_not_keep_the_schemas() -> None:
    for index in range(24):
        schema = {"type": "string", "description": str(index) + "s" * MEGABYTE}
        assert compile_schema(schema).error is None
    assert _retained_mib() < 4  # the schemas' msgpack keys were 24 MB
