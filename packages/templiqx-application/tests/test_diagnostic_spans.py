"""Diagnostics that point into a package's YAML carry the file and the line and column (#19)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from templiqx_application import TempliqxService
from templiqx_contracts import Diagnostic

from .conftest import CAPS, greeting_source

Factory = Callable[..., TempliqxService]

REPO = Path(__file__).resolve().parents[3]
# The newcomer's contract of issue #19, from the corpus of broken contracts.
FOUR_ERRORS = (REPO / "fixtures/diagnostics/broken/contracts/four-errors.yaml").read_text("utf-8")


def located(diagnostic: Diagnostic) -> tuple[str, str | None, int, int]:
    assert diagnostic.span is not None, diagnostic
    return diagnostic.code, diagnostic.file, diagnostic.span.line, diagnostic.span.column


def test_put_reports_all_four_problems_of_the_newcomers_contract(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    write_pkg(scratch_root, "pkg")
    envelope = make_service(scratch_root).put_contract("pkg", "hello", FOUR_ERRORS)
    label = "pkg/contracts/hello.yaml"
    assert [located(d) for d in envelope.diagnostics] == [
        ("TQX_PARSE_YAML", label, 9, 1),
        ("TQX_PARSE_UNKNOWN_KIND", label, 12, 15),
        ("TQX_PARSE_MISSING_FIELD", label, 2, 1),
        ("TQX_SCHEMA_TYPE_UNSUPPORTED", label, 7, 20),
    ]
    assert all(d.help for d in envelope.diagnostics)
    assert not (scratch_root / "pkg" / "contracts" / "hello.yaml").exists()


def test_static_problems_of_a_stored_contract_have_their_place(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    source = greeting_source().replace("path: inputs.name", "path: inputs.nmae")
    write_pkg(scratch_root, "pkg", contracts={"hello": source})
    service = make_service(scratch_root)
    for envelope in (
        service.validate_contract("pkg", "hello"),
        service.validate_package("pkg"),
        service.compile_contract("pkg", "hello", inputs={"name": "Ada"}, capabilities=CAPS),
    ):
        (diagnostic,) = envelope.diagnostics
        assert located(diagnostic) == ("TQX_REF_UNKNOWN", "pkg/contracts/hello.yaml", 15, 39)
        assert diagnostic.span is not None
        assert diagnostic.span.end_column == 50  # `inputs.nmae`
        assert "did you mean 'inputs.name'?" in diagnostic.message


def test_request_values_are_not_pointed_at_in_the_contract(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    write_pkg(scratch_root, "pkg", contracts={"hello": greeting_source()})
    envelope = make_service(scratch_root).compile_contract(
        "pkg", "hello", inputs={"name": "", "extra": 1}, capabilities=CAPS
    )
    assert [(d.code, d.file, d.span) for d in envelope.diagnostics] == [
        ("TQX_VALUE_SCHEMA", "pkg/contracts/hello.yaml", None),
        ("TQX_VALUE_UNKNOWN", "pkg/contracts/hello.yaml", None),
    ]


def test_manifest_problems_point_into_the_manifest(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    write_pkg(
        scratch_root,
        "pkg",
        contracts={"hello": greeting_source()},
        version="one",
        api_version="templiqx/v2",
        dependencies={"other": "sha256:x"},
    )
    envelope = make_service(scratch_root).validate_package("pkg")
    assert [located(d) for d in envelope.diagnostics] == [
        ("TQX_MANIFEST_API_VERSION", "pkg/templiqx.yaml", 1, 14),
        ("TQX_MANIFEST_VERSION_INVALID", "pkg/templiqx.yaml", 3, 10),
        ("TQX_LOCK_MISSING", "pkg/templiqx.yaml", 6, 1),
    ]


def test_a_stored_contract_with_parse_problems_reports_them_all_in_every_operation(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    write_pkg(scratch_root, "pkg", contracts={"hello": FOUR_ERRORS})
    service = make_service(scratch_root)
    for envelope in (
        service.validate_contract("pkg", "hello"),
        service.inspect_contract("pkg", "hello"),
        service.render_contract("pkg", "hello", inputs={"name": "Ada"}, capabilities=CAPS),
    ):
        assert [d.code for d in envelope.diagnostics] == [
            "TQX_PARSE_YAML",
            "TQX_PARSE_UNKNOWN_KIND",
            "TQX_PARSE_MISSING_FIELD",
            "TQX_SCHEMA_TYPE_UNSUPPORTED",
        ]


def test_unresolved_tool_contract_references_have_their_place(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    source = greeting_source() + (
        "extensions:\n"
        "  vendor.tool:\n"
        "    capability: structured_output\n"
        '    schema: {$ref: "tool_contract:search", fingerprint: "sha256:old"}\n'
        "    value: {}\n"
    )
    write_pkg(
        scratch_root,
        "pkg",
        contracts={"hello": source},
        tool_contracts={"search": {"fingerprint": "sha256:new", "schema": {"type": "object"}}},
    )
    (diagnostic,) = make_service(scratch_root).validate_contract("pkg", "hello").diagnostics
    assert located(diagnostic) == (
        "TQX_TOOL_CONTRACT_REF_UNRESOLVED",
        "pkg/contracts/hello.yaml",
        30,
        5,
    )


def test_an_include_problem_names_the_contract_that_includes(
    scratch_root: Path, make_service: Factory, write_pkg: Callable[..., Path]
) -> None:
    source = greeting_source().replace(
        '      - {kind: text, value: "Hello "}', "      - {kind: include, path: partials/gone.yaml}"
    )
    write_pkg(scratch_root, "pkg", contracts={"hello": source})
    (diagnostic,) = make_service(scratch_root).validate_contract("pkg", "hello").diagnostics
    assert (diagnostic.code, diagnostic.file) == (
        "TQX_INCLUDE_UNRESOLVED",
        "pkg/contracts/hello.yaml",
    )
    assert diagnostic.help
