from __future__ import annotations

import msgspec
import pytest

from templiqx_contracts import (
    AdapterDescriptor,
    Complete,
    Contract,
    Delta,
    Diagnostic,
    ExecutionReceipt,
    Failed,
    IncludeNode,
    Node,
    OperationEnvelope,
    PackageManifest,
    RefExpr,
    SourceSpan,
    StreamEvent,
    TextNode,
    ToolCallDelta,
    WhenNode,
    canonical_json,
    decode_stream_event,
    encode_stream_event,
)

RECEIPT = ExecutionReceipt(
    adapter=AdapterDescriptor(id="templiqx.fake", version="0.2.0", capabilities=["text"]),
    request_fingerprint="r" * 64,
    output_fingerprint="o" * 64,
    output={"ok": True},
    output_schema_valid=True,
)


@pytest.mark.parametrize(
    ("event", "wire"),
    [
        (Delta(text="Hi"), b'{"kind":"Delta","text":"Hi"}'),
        (
            ToolCallDelta(name="lookup", arguments_fragment='{"q":'),
            b'{"kind":"ToolCallDelta","name":"lookup","arguments_fragment":"{\\"q\\":"}',
        ),
        (
            Complete.of(RECEIPT),
            b'{"kind":"Complete","adapter":{"id":"templiqx.fake","version":"0.2.0",'
            b'"capabilities":["text"]},"request_fingerprint":"' + b"r" * 64 + b'",'
            b'"output_fingerprint":"' + b"o" * 64 + b'","output":{"ok":true},'
            b'"output_schema_valid":true}',
        ),
        (
            Failed(code="TQX_RUNTIME_TIMEOUT", message="runtime failure TQX_RUNTIME_TIMEOUT: late"),
            b'{"kind":"Failed","code":"TQX_RUNTIME_TIMEOUT",'
            b'"message":"runtime failure TQX_RUNTIME_TIMEOUT: late"}',
        ),
    ],
)
def test_stream_event_wire_form(event: StreamEvent, wire: bytes) -> None:
    assert encode_stream_event(event) == wire
    assert decode_stream_event(wire) == event


def test_complete_exposes_its_receipt() -> None:
    event = Complete.of(RECEIPT)
    assert event.receipt == RECEIPT
    assert canonical_json(event) == canonical_json(
        {"kind": "Complete", **msgspec.to_builtins(RECEIPT)}
    )


@pytest.mark.parametrize(
    "wire",
    [
        b'{"kind":"Delta","text":"x","extra":1}',
        b'{"kind":"delta","text":"x"}',
        b'{"kind":"Chunk","text":"x"}',
        b'{"text":"x"}',
        b'{"kind":"Complete","receipt":{}}',
        b'{"kind":"Failed","code":"X"}',
    ],
)
def test_bad_stream_events_are_rejected(wire: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_stream_event(wire)


def test_nodes_serialize_every_field_except_unset_from_dependency() -> None:
    when = WhenNode(condition=RefExpr(path="x"), then=[])
    assert (
        canonical_json(when)
        == b'{"condition":{"kind":"ref","path":"x"},"else":[],"kind":"when","then":[]}'
    )
    assert canonical_json(IncludeNode(path="p.yaml")) == b'{"kind":"include","path":"p.yaml"}'
    assert (
        canonical_json(IncludeNode(path="p.yaml", from_dependency="lib"))
        == b'{"from_dependency":"lib","kind":"include","path":"p.yaml"}'
    )


def test_node_union_is_tagged_by_kind_and_strict() -> None:
    assert msgspec.json.decode(b'{"value":"a","kind":"text"}', type=Node) == TextNode(value="a")
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"kind":"text","value":"a","x":1}', type=Node)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"kind":"loop","value":"a"}', type=Node)


def test_contract_defaults_are_materialized() -> None:
    contract = msgspec.json.decode(
        b'{"api_version":"templiqx/v1alpha1","id":"c","version":"1.0.0",'
        b'"messages":[{"role":"user","content":[{"kind":"text","value":"hi"}]}],'
        b'"output_schema":{"type":"object"}}',
        type=Contract,
    )
    assert canonical_json(contract) == (
        b'{"api_version":"templiqx/v1alpha1","capabilities":[],"components":{},"context":{},'
        b'"description":"","evals":[],"extensions":{},"id":"c","inputs":{},'
        b'"messages":[{"content":[{"kind":"text","value":"hi"}],"role":"user"}],'
        b'"output_schema":{"type":"object"},"provenance":{},"runtime_policy":{},"version":"1.0.0"}'
    )
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(
            b'{"api_version":"x","id":"c","version":"1","messages":[],'
            b'"output_schema":{},"unknown":true}',
            type=Contract,
        )


def test_manifest_omits_only_the_four_optional_sections_when_empty() -> None:
    manifest = PackageManifest.new("demo", "0.1.0")
    data = msgspec.to_builtins(manifest)
    assert set(data) == {
        "api_version",
        "package",
        "version",
        "description",
        "contracts",
        "components",
        "evals",
        "migrations",
        "templates",
        "provenance",
        "signatures",
    }
    manifest.translations = ["en"]
    assert msgspec.to_builtins(manifest)["translations"] == ["en"]


def test_diagnostic_omits_absent_optionals() -> None:
    diag = Diagnostic.error("TQX_X", "broken")
    assert msgspec.json.encode(diag) == (
        b'{"code":"TQX_X","severity":"error","message":"broken","json_pointer":""}'
    )
    spanned = Diagnostic(
        code="TQX_PARSE_YAML",
        severity="error",
        message="bad",
        file="c.yaml",
        span=SourceSpan(line=2, column=3, end_line=2, end_column=3),
        help="fix it",
    )
    assert "json_pointer" not in msgspec.to_builtins(spanned)
    assert spanned.render() == "TQX_PARSE_YAML error: bad\n  at c.yaml:2:3\n  help: fix it"


def test_envelope_shape() -> None:
    ok = OperationEnvelope.build("catalog", result=["catalog"])
    assert msgspec.json.encode(ok) == (
        b'{"api_version":"templiqx/v1alpha1","operation":"catalog","ok":true,'
        b'"result":["catalog"],"diagnostics":[],"fingerprints":{}}'
    )
    failed = OperationEnvelope.build(
        "x",
        diagnostics=[Diagnostic.error("TQX_X", "no")],
        fingerprints={"b": "2", "a": "1"},
        stream_events=[Delta(text="a")],
    )
    data = failed.to_builtins()
    assert data["ok"] is False
    assert "result" not in data
    assert list(data["fingerprints"]) == ["a", "b"]
    assert data["stream_events"] == [{"kind": "Delta", "text": "a"}]
    null_result = OperationEnvelope.build("x", result=None)
    assert null_result.to_builtins()["result"] is None
