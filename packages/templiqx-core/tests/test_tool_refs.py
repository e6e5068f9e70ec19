"""Tool-contract references in extension schemas (core.md §2.9, §7.3)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, ToolContractRef
from templiqx_core import resolve_tool_contract_refs, validate_contract

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}
TABLE = {"search_customers": ToolContractRef(fingerprint="sha256:abc", schema=SEARCH_SCHEMA)}


def contract_with(schema: Any, **more: Any) -> Contract:
    extensions = {
        "vendor.search": {"capability": "tools", "schema": schema, "value": {"query": "x"}}
    }
    for key, spec in more.items():
        extensions[key.replace("_", ".")] = spec
    return msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "tools",
            "version": "1.0.0",
            "messages": [{"role": "user", "content": [{"kind": "text", "value": "hi"}]}],
            "output_schema": {"type": "object"},
            "extensions": extensions,
        },
        Contract,
    )


def test_1_resolves_and_inlines_matching_reference() -> None:
    contract = contract_with(
        {"$ref": "tool_contract:search_customers", "fingerprint": "sha256:abc"}
    )
    assert resolve_tool_contract_refs(contract, TABLE) == []
    assert contract.extensions["vendor.search"].schema == SEARCH_SCHEMA
    assert validate_contract(contract) == []
    # The inlined schema is a copy: changing it never reaches the manifest's table.
    contract.extensions["vendor.search"].schema["required"].append("other")
    assert TABLE["search_customers"].schema["required"] == ["query"]


@pytest.mark.parametrize(
    ("stub", "message"),
    [
        (
            {"$ref": "tool_contract:search_customers", "fingerprint": "sha256:STALE"},
            "extension 'vendor.search' pins fingerprint 'sha256:STALE' but tool_contract "
            "'search_customers' has 'sha256:abc'",
        ),
        (
            {"$ref": "tool_contract:missing", "fingerprint": "sha256:abc"},
            "extension 'vendor.search' references unknown tool_contract 'missing'",
        ),
        (
            {"$ref": "tool_contract:search_customers"},
            "extension 'vendor.search' references tool_contract 'search_customers' without a "
            "fingerprint pin",
        ),
        (
            {"$ref": "tool_contract:search_customers", "fingerprint": 7},
            "extension 'vendor.search' references tool_contract 'search_customers' without a "
            "fingerprint pin",
        ),
    ],
    ids=["2-wrong-fingerprint", "3-unknown-name", "4-missing-pin", "non-string-pin"],
)
def test_unresolved_references_fail_closed(stub: dict[str, Any], message: str) -> None:
    contract = contract_with(stub)
    diagnostics = resolve_tool_contract_refs(contract, TABLE)
    assert [(d.code, d.severity, d.json_pointer, d.message) for d in diagnostics] == [
        ("TQX_TOOL_CONTRACT_REF_UNRESOLVED", "error", "/extensions/vendor.search/schema", message)
    ]
    assert contract.extensions["vendor.search"].schema == stub


def test_5_ordinary_schema_untouched() -> None:
    contract = contract_with({"type": "object"})
    assert resolve_tool_contract_refs(contract, TABLE) == []
    assert contract.extensions["vendor.search"].schema == {"type": "object"}


def test_resolution_is_all_or_nothing_and_sorted() -> None:
    good = {"$ref": "tool_contract:search_customers", "fingerprint": "sha256:abc"}
    contract = contract_with(
        good,
        vendor_a={
            "capability": "tools",
            "schema": {"$ref": "tool_contract:nope", "fingerprint": "x"},
            "value": 1,
        },
    )
    diagnostics = resolve_tool_contract_refs(contract, TABLE)
    assert [d.json_pointer for d in diagnostics] == ["/extensions/vendor.a/schema"]
    assert contract.extensions["vendor.search"].schema == good


def test_an_unresolved_stub_fails_ordinary_validation() -> None:
    contract = contract_with(
        {"$ref": "tool_contract:search_customers", "fingerprint": "sha256:abc"}
    )
    codes = [d.code for d in validate_contract(contract)]
    assert codes[0] == "TQX_EXTENSION_SCHEMA_INVALID"
    assert "TQX_SCHEMA_KEYWORD_UNSUPPORTED" in codes
    assert "TQX_SCHEMA_TYPE_REQUIRED" in codes
