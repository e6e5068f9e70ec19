"""explain_contract and diff_contracts (core.md §5.2-§5.3, application.md §2.3)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, fingerprint
from templiqx_core import diff_contracts, explain_contract
from templiqx_core.diff import DIFF_FIELDS

BASE: dict[str, Any] = {
    "api_version": "templiqx/v1alpha1",
    "id": "explained",
    "version": "1.0.0",
    "description": "Explains itself.",
    "inputs": {"b": {"schema": {"type": "string"}}, "a": {"schema": {"type": "string"}}},
    "context": {"z": {"schema": {"type": "string"}}, "y": {"schema": {"type": "string"}}},
    "capabilities": ["text", "structured_output", "text"],
    "messages": [
        {
            "role": "user",
            "content": [
                {"kind": "component", "name": "zeta"},
                {
                    "kind": "when",
                    "condition": {"kind": "literal", "value": True},
                    "then": [{"kind": "component", "name": "known"}],
                    "else": [{"kind": "component", "name": "alpha"}],
                },
            ],
        }
    ],
    "output_schema": {"type": "object"},
    "components": {
        "known": [
            {
                "kind": "for_each",
                "collection": {"kind": "literal", "value": []},
                "item": "x",
                "body": [{"kind": "component", "name": "beta"}],
            }
        ],
        "typed": {"parameters": {}, "content": [{"kind": "component", "name": "alpha"}]},
    },
}


def build(data: dict[str, Any]) -> Contract:
    return msgspec.convert(data, Contract)


def test_explain_summarizes_and_hints_with_the_emitted_code() -> None:
    explanation = explain_contract(build(BASE))
    assert explanation.contract_id == "explained"
    assert explanation.summary == "Explains itself."
    assert explanation.inputs == ["a", "b"]
    assert explanation.context == ["y", "z"]
    assert explanation.capabilities == ["text", "structured_output", "text"]
    assert explanation.component_count == 2
    assert explanation.components == ["known", "typed"]
    assert explanation.unresolved_references == ["alpha", "beta", "zeta"]
    assert explanation.fix_hints == [
        f"define component '{name}' under `components:` or remove its reference "
        "(TQX_COMPONENT_MISSING)"
        for name in ("alpha", "beta", "zeta")
    ]


def test_explain_hints_at_missing_messages() -> None:
    data = copy.deepcopy(BASE)
    data["messages"] = []
    data["components"] = {}
    explanation = explain_contract(build(data))
    assert explanation.unresolved_references == []
    assert explanation.fix_hints == [
        "add at least one message under `messages:` (TQX_MESSAGES_EMPTY)"
    ]


def test_diff_of_equal_contracts() -> None:
    left, right = build(BASE), build(copy.deepcopy(BASE))
    diff = diff_contracts(left, right)
    assert diff.equal is True
    assert diff.changes == []
    assert diff.left_fingerprint == diff.right_fingerprint == fingerprint(left)


def test_key_order_never_matters() -> None:
    data = copy.deepcopy(BASE)
    data["inputs"] = dict(reversed(list(data["inputs"].items())))
    assert diff_contracts(build(BASE), build(data)).equal is True


CHANGES: list[tuple[str, Any]] = [
    ("id", "other"),
    ("version", "1.0.1"),
    ("inputs", {}),
    ("context", {}),
    ("messages", []),
    ("output_schema", {"type": "object", "title": "x"}),
    ("capabilities", ["text"]),
    ("api_version", "templiqx/v2"),
    ("description", ""),
    ("runtime_policy", {"temperature": 0}),
    ("extensions", {"v.x": {"capability": "c", "schema": {"type": "integer"}, "value": 1}}),
    ("components", {}),
    ("provenance", {"owner": "me"}),
    ("evals", [{"id": "e", "fake_output": None}]),
]


@pytest.mark.parametrize(("field", "value"), CHANGES, ids=[field for field, _ in CHANGES])
def test_every_field_change_is_listed(field: str, value: Any) -> None:
    data = copy.deepcopy(BASE)
    data[field] = value
    diff = diff_contracts(build(BASE), build(data))
    assert diff.equal is False
    assert diff.changes == [field]


def test_changes_follow_the_fixed_order_and_integers_differ_from_floats() -> None:
    data = copy.deepcopy(BASE)
    data["evals"] = [{"id": "e", "fake_output": 1}]
    data["capabilities"] = []
    data["id"] = "x"
    data["runtime_policy"] = {"t": 0}
    left = build(data)
    data = copy.deepcopy(data)
    data["runtime_policy"] = {"t": 0.0}
    data["evals"] = [{"id": "e", "fake_output": 1.0}]
    data["id"] = "y"
    data["capabilities"] = ["a"]
    diff = diff_contracts(left, build(data))
    assert diff.changes == ["id", "capabilities", "runtime_policy", "evals"]
    assert list(DIFF_FIELDS[:7]) == [
        "id",
        "version",
        "inputs",
        "context",
        "messages",
        "output_schema",
        "capabilities",
    ]
    assert sorted(DIFF_FIELDS) == sorted(Contract.__struct_fields__)


def test_unfingerprintable_contracts_get_empty_fingerprints() -> None:
    data = copy.deepcopy(BASE)
    data["runtime_policy"] = {"t": float("nan")}
    bad = build(data)
    diff = diff_contracts(bad, bad)
    assert diff.left_fingerprint == ""
    assert diff.equal is False
