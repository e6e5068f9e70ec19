"""Render requests, manifests, locks, include partials and translation bundles."""

from __future__ import annotations

import json
import math

import msgspec
import pytest

from templiqx_contracts import (
    IncludeNode,
    LockedDependency,
    PackageSignature,
    RenderRequest,
    TextNode,
    ToolContractRef,
    canonical_json,
)
from templiqx_core.parse import (
    parse_json_value,
    parse_lock,
    parse_manifest,
    parse_node_list,
    parse_render_request,
    parse_translation_bundle,
)

# --- render requests ------------------------------------------------------------------------


def request(source: str | bytes) -> RenderRequest:
    parsed, diagnostics = parse_render_request(source, "values.json")
    assert diagnostics == [], diagnostics
    assert parsed is not None
    return parsed


def request_error(source: str | bytes) -> str:
    parsed, diagnostics = parse_render_request(source, "values.json")
    assert parsed is None
    assert len(diagnostics) == 1
    assert diagnostics[0].code.startswith("TQX_PARSE_")
    assert diagnostics[0].file == "values.json"
    return diagnostics[0].message


def test_json_request_keeps_number_identity_and_json_escapes() -> None:
    text = json.dumps({"inputs": {"name": "Ada \U0001f600", "n": 1, "x": 1.0}, "context": {}})
    assert "\\ud83d" in text  # Python's default JSON escapes astral characters as surrogates
    parsed = request(text)
    assert parsed.inputs == {"name": "Ada \U0001f600", "n": 1, "x": 1.0}
    assert type(parsed.inputs["n"]) is int
    assert type(parsed.inputs["x"]) is float


def test_json_request_uses_the_json_number_rules() -> None:
    parsed = request('{"inputs": {"z": -0, "big": 123456789012345678901234, "e": 1E2}}')
    assert math.copysign(1, parsed.inputs["z"]) == -1
    assert type(parsed.inputs["z"]) is float
    assert parsed.inputs["big"] == 1.2345678901234568e23
    assert parsed.inputs["e"] == 100.0
    assert "out of range" in request_error('{"inputs": {"n": 1e400}}')


def test_yaml_request_uses_the_yaml_rules() -> None:
    parsed = request("inputs:\n  z: -0\n  when: 2026-07-12\ncontext: {vip: true}\n")
    assert parsed.inputs == {"z": 0, "when": "2026-07-12"}
    assert type(parsed.inputs["z"]) is int
    assert parsed.context == {"vip": True}
    assert request("{inputs: {name: Ada}}").inputs == {"name": "Ada"}


def test_request_defaults_and_empty_documents() -> None:
    assert request("{}") == RenderRequest(inputs={}, context={})
    assert request(" \n\ufeff{} ") == RenderRequest(inputs={}, context={})
    assert request(b'{"context": {"a": [1]}}').context == {"a": [1]}
    assert request("---\n") == RenderRequest(inputs={}, context={})
    assert "no YAML document" in request_error("")


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ('{"inputs": {}, "extra": 1}', "unknown field `extra`"),
        ('{"inputs": null}', "inputs: expected a JSON object"),
        ('{"context": []}', "context: expected a JSON object"),
        ("inputs: {}\nextra: 1\n", "unknown field `extra`"),
        ("inputs: ~\n", "expected a mapping"),
        ("[1]", "expected a render request"),
        ('{"inputs": {"a": 1, "a": 2}}', "duplicate key `a`"),
        ('{"inputs": {}, "inputs": {}}', "duplicate field `inputs`"),
    ],
)
def test_request_errors(source: str, fragment: str) -> None:
    assert fragment in request_error(source)


def test_duplicate_json_keys_are_located_through_the_yaml_reader() -> None:
    _, diagnostics = parse_render_request('{"inputs": {"a": 1,\n "a": 2}}')
    assert diagnostics[0].span is not None
    assert (diagnostics[0].span.line, diagnostics[0].span.column) == (2, 2)


# --- manifests and locks --------------------------------------------------------------------

MANIFEST = """\
api_version: templiqx/v1alpha1
package: demo
version: 1.0.0
contracts: [greeting]
"""


def test_manifest_fills_every_default_and_omits_empty_optional_fields() -> None:
    manifest, diagnostics = parse_manifest(MANIFEST)
    assert diagnostics == []
    assert manifest is not None
    assert manifest.description == ""
    assert manifest.components == manifest.evals == manifest.migrations == []
    assert manifest.templates == manifest.signatures == []
    assert manifest.provenance == {}
    data = msgspec.json.decode(canonical_json(manifest))
    assert sorted(data) == [
        "api_version",
        "components",
        "contracts",
        "description",
        "evals",
        "migrations",
        "package",
        "provenance",
        "signatures",
        "templates",
        "version",
    ]


def test_manifest_with_every_field() -> None:
    source = MANIFEST + (
        "description: full\n"
        "components: [partials/a.yaml]\nevals: [evals/a.json]\nmigrations: [m.json]\n"
        "templates: [t.docx]\nprovenance: {requires_authorized_context: true}\n"
        "signatures:\n  - {key_id: k1, algorithm: sha256-keyed, value: abc}\n"
        "dependencies: {lib: 0123}\n"
        "tool_contracts:\n  search: {fingerprint: 'sha256:abc', schema: {type: object}}\n"
        "translations: [en]\ndefinitions: [definitions/d.yaml]\n"
    )
    manifest, diagnostics = parse_manifest(source, "templiqx.yaml")
    assert diagnostics == []
    assert manifest is not None
    assert manifest.provenance == {"requires_authorized_context": "true"}
    assert manifest.signatures == [
        PackageSignature(key_id="k1", algorithm="sha256-keyed", value="abc")
    ]
    assert manifest.dependencies == {"lib": "0123"}
    assert manifest.tool_contracts == {
        "search": ToolContractRef(fingerprint="sha256:abc", schema={"type": "object"})
    }
    assert manifest.definitions == ["definitions/d.yaml"]


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ("colour: red\n", "unknown field `colour` in a package manifest"),
        ("signatures: [{key_id: k, algorithm: a}]\n", "missing field `value`"),
        ("signatures: [{key_id: k, algorithm: a, value: v, extra: 1}]\n", "unknown field `extra`"),
        ("contracts: [again]\n", "duplicate field `contracts`"),
        ("dependencies: {a: x, a: y}\n", "duplicate key `a`"),
        ("translations: [[en]]\n", "expected a string"),
    ],
)
def test_manifest_errors(extra: str, fragment: str) -> None:
    manifest, diagnostics = parse_manifest(MANIFEST + extra, "templiqx.yaml")
    assert manifest is None
    assert fragment in diagnostics[0].message
    assert diagnostics[0].file == "templiqx.yaml"


def test_lock_files() -> None:
    lock, diagnostics = parse_lock("dependencies:\n  lib: {path: ../lib, fingerprint: abc}\n")
    assert diagnostics == []
    assert lock is not None
    assert lock.dependencies == {"lib": LockedDependency(path="../lib", fingerprint="abc")}
    empty, diagnostics = parse_lock("dependencies:\n")
    assert diagnostics == []
    assert empty is not None
    assert empty.dependencies == {}
    _, diagnostics = parse_lock("dependencies:\n  lib: {path: ../lib}\n", "templiqx.lock")
    assert "missing field `fingerprint`" in diagnostics[0].message
    _, diagnostics = parse_lock("packages: {}\n")
    assert "unknown field `packages` in a package lock" in diagnostics[0].message


# --- partials and bundles -------------------------------------------------------------------


def test_node_lists() -> None:
    nodes, diagnostics = parse_node_list(
        "# a partial\n- kind: text\n  value: Hi\n"
        "- {kind: include, path: b.yaml, from_dependency: lib}\n"
    )
    assert diagnostics == []
    assert nodes == [TextNode(value="Hi"), IncludeNode(path="b.yaml", from_dependency="lib")]
    assert parse_node_list("[]") == ([], [])
    _, diagnostics = parse_node_list("kind: text\nvalue: x\n")
    assert "expected a list of content nodes" in diagnostics[0].message
    _, diagnostics = parse_node_list("- kind: text\n  value: 5\n")
    assert "expected a string" in diagnostics[0].message
    assert diagnostics[0].span is not None
    assert (diagnostics[0].span.line, diagnostics[0].span.column) == (2, 10)


def test_translation_bundles() -> None:
    bundle, diagnostics = parse_translation_bundle("a.b: Hallo\nn: 2\nlist: [x]\n")
    assert diagnostics == []
    assert bundle == {"a.b": "Hallo", "n": 2, "list": ["x"]}
    _, diagnostics = parse_translation_bundle("a: x\na: y\n", "nl.yaml")
    assert "duplicate key `a`" in diagnostics[0].message
    assert diagnostics[0].file == "nl.yaml"
    _, diagnostics = parse_translation_bundle("- a\n")
    assert "expected a mapping" in diagnostics[0].message


def test_json_value_failure_returns_none_with_one_diagnostic() -> None:
    assert parse_json_value("a: [")[0] is None
    assert len(parse_json_value("a: [")[1]) == 1
    assert parse_json_value("~") == (None, [])
