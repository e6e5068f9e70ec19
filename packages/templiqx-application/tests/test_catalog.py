"""The catalog and the generic entry: descriptors surfaces are generated from, strict arguments."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from templiqx_application import (
    CATALOG,
    CATALOG_VIEWS,
    OPERATION_NAMES,
    OperationSpec,
    ParameterSpec,
    TempliqxService,
    bind_arguments,
    catalog_envelope,
    operation_spec,
)

Factory = Callable[..., TempliqxService]

EXPECTED = [
    "catalog",
    "discover_packages",
    "create_package",
    "update_package",
    "delete_package",
    "export_package_identity",
    "sign_package",
    "verify_package_trust",
    "inspect_contract",
    "put_contract",
    "delete_contract",
    "validate_contract",
    "validate_package",
    "compile_contract",
    "render_contract",
    "execute_contract",
    "list_workspace_artifacts",
    "read_artifact",
    "delete_workspace_artifact",
    "test_package",
    "list_evals",
    "run_eval",
    "diff_contract",
    "explain_contract",
]


def test_catalog_lists_exactly_the_operations_that_work() -> None:
    assert list(OPERATION_NAMES) == EXPECTED
    for absent in (
        "migrate_legacy",
        "render_document",
        "inspect_document",
        "assess_quality_proposals",
    ):
        assert operation_spec(absent) is None


def test_every_catalog_operation_is_a_typed_method(
    scratch_root: Path, make_service: Factory
) -> None:
    service = make_service(scratch_root)
    for spec in CATALOG:
        method = getattr(service, spec.name)
        assert callable(method)
        assert method.__doc__


def test_catalog_view_names_lists_only_the_names_in_catalog_order(
    scratch_root: Path, make_service: Factory
) -> None:
    service = make_service(scratch_root)
    names = service.catalog(view="names")
    assert names.ok
    assert names.to_builtins() == {
        "api_version": "templiqx/v1alpha1",
        "operation": "catalog",
        "ok": True,
        "result": EXPECTED,
        "diagnostics": [],
        "fingerprints": {},
    }
    assert service.invoke("catalog", {"view": "names"}) == names
    assert catalog_envelope({"view": "names"}) == names
    assert service.catalog(view="full") == service.catalog() == catalog_envelope()
    assert CATALOG_VIEWS == ("full", "names")


@pytest.mark.parametrize("view", ["Names", "", "all", 7, None])
def test_catalog_view_outside_its_choices_is_refused(
    view: object, scratch_root: Path, make_service: Factory
) -> None:
    envelope = make_service(scratch_root).invoke("catalog", {"view": view})
    assert not envelope.ok
    (diagnostic,) = envelope.diagnostics
    assert (diagnostic.code, diagnostic.json_pointer) == ("TQX_ARGUMENT_INVALID", "/view")
    if isinstance(view, str):
        assert diagnostic.message == (
            f"argument 'view' must be one of 'full', 'names', not '{view}'"
        )
    assert catalog_envelope({"view": view}) == envelope


def test_choices_appear_only_where_a_parameter_has_them() -> None:
    wire = msgspec.to_builtins(list(CATALOG))
    with_choices = [
        (operation["name"], parameter["name"], parameter["choices"])
        for operation in wire
        for parameter in operation["parameters"]
        if "choices" in parameter
    ]
    assert with_choices == [("catalog", "view", ["full", "names"])]


def test_catalog_operation_returns_the_descriptors(
    scratch_root: Path, make_service: Factory
) -> None:
    envelope = make_service(scratch_root).catalog()
    assert envelope.ok
    assert envelope.fingerprints == {}
    wire = envelope.to_builtins()
    assert [entry["name"] for entry in wire["result"]] == EXPECTED
    assert json.loads(json.dumps(wire)) == wire
    decoded = msgspec.convert(wire["result"], list[OperationSpec])
    assert decoded == list(CATALOG)
    compile_spec = next(entry for entry in wire["result"] if entry["name"] == "compile_contract")
    assert compile_spec["parameters"] == [
        {
            "name": "package",
            "type": "string",
            "required": True,
            "default": None,
            "description": "Package name (a directory under the root).",
        },
        {
            "name": "contract",
            "type": "string",
            "required": True,
            "default": None,
            "description": "Contract id (contracts/<id>.yaml in the package).",
        },
        {
            "name": "inputs",
            "type": "object",
            "required": False,
            "default": {},
            "description": "Input values by name, as the contract declares them "
            "(explain_contract lists the names; inspect_contract shows each one's type).",
        },
        {
            "name": "context",
            "type": "object",
            "required": False,
            "default": {},
            "description": "Context values by name, as the contract declares them "
            "(explain_contract lists the names; inspect_contract shows each one's type).",
        },
        {
            "name": "capabilities",
            "type": "string_list",
            "required": False,
            "default": [],
            "description": "Capabilities the target offers, e.g. structured_output.",
        },
    ]


WRITES = {
    # operation: destructive (may replace or remove what is there)
    "create_package": False,
    "update_package": True,
    "delete_package": True,
    "sign_package": False,
    "put_contract": True,
    "delete_contract": True,
    "delete_workspace_artifact": True,
}


def test_every_operation_states_what_it_does_to_the_world() -> None:
    for spec in CATALOG:
        assert spec.title
        assert spec.title[0].isupper()
        assert not spec.title.endswith(".")
        if spec.name in WRITES:
            assert not spec.read_only, spec.name
            assert spec.destructive is WRITES[spec.name], spec.name
            assert spec.idempotent, spec.name  # compare-and-swap or existence-checked
        else:
            assert spec.read_only, spec.name
            assert not spec.destructive, spec.name
        # Only an execution reaches outside the packages and the workspace (a live model).
        assert spec.open_world is (spec.name == "execute_contract"), spec.name
    execute = operation_spec("execute_contract")
    assert execute is not None
    assert not execute.idempotent


def test_a_spec_without_flags_is_assumed_to_be_a_destructive_open_world_write() -> None:
    spec = OperationSpec(name="summarise_package", summary="Summarise.", parameters=[])
    assert (spec.read_only, spec.destructive, spec.idempotent, spec.open_world) == (
        False,
        True,
        False,
        True,
    )
    assert spec.display_title == "Summarise package"


def test_catalog_descriptions_are_complete() -> None:
    for spec in CATALOG:
        assert spec.summary
        assert spec.summary.endswith(".")
        names = [parameter.name for parameter in spec.parameters]
        assert len(names) == len(set(names))
        for parameter in spec.parameters:
            assert parameter.description.endswith(".")
            if parameter.required:
                assert parameter.default is None


def test_typed_methods_and_invoke_give_identical_envelopes(
    reference: Path, make_service: Factory
) -> None:
    service = make_service(reference)
    arguments = {
        "package": "crm3",
        "contract": "bli-61-date-term-extraction",
        "capabilities": ["structured_output"],
    }
    assert service.invoke(
        "explain_contract", {"package": "crm3", "contract": "bli-61-date-term-extraction"}
    ).to_builtins() == (
        service.explain_contract("crm3", "bli-61-date-term-extraction").to_builtins()
    )
    assert service.invoke("compile_contract", arguments).to_builtins() == (
        service.compile_contract(
            "crm3", "bli-61-date-term-extraction", capabilities=["structured_output"]
        ).to_builtins()
    )
    assert service.invoke("catalog", {}).to_builtins() == service.catalog().to_builtins()
    assert service.invoke("catalog").to_builtins() == service.catalog().to_builtins()


def test_invoke_bound_runs_what_bind_arguments_bound(
    reference: Path, make_service: Factory
) -> None:
    service = make_service(reference)
    cases = [
        (
            "compile_contract",
            {
                "package": "crm3",
                "contract": "bli-61-date-term-extraction",
                "capabilities": ["structured_output"],
            },
        ),
        ("explain_contract", {"package": "crm3", "contract": "bli-61-date-term-extraction"}),
        ("validate_contract", {"package": "crm3", "contract": "missing"}),
        ("catalog", {}),
    ]
    for name, arguments in cases:
        spec = operation_spec(name)
        assert spec is not None
        bound, diagnostics = bind_arguments(spec, arguments)
        assert diagnostics == []
        kept = dict(bound)
        assert service.invoke_bound(name, bound).to_builtins() == (
            service.invoke(name, arguments).to_builtins()
        ), name
        assert bound == kept, "the bound arguments are not changed"
    unknown = service.invoke_bound("nope", {})
    assert [d.code for d in unknown.diagnostics] == ["TQX_UNKNOWN_OPERATION"]
    assert unknown.to_builtins() == service.invoke("nope", {}).to_builtins()
    wrong = service.invoke_bound("catalog", {"package": "crm3"})
    assert [d.code for d in wrong.diagnostics] == ["TQX_INTERNAL"], "never raises"


def test_unknown_operation(scratch_root: Path, make_service: Factory) -> None:
    service = make_service(scratch_root)
    for name in ("migrate_legacy", "nope", "assess_quality_proposals"):
        envelope = service.invoke(name, {})
        assert envelope.operation == name
        assert not envelope.ok
        (diagnostic,) = envelope.diagnostics
        assert diagnostic.code == "TQX_UNKNOWN_OPERATION"
        assert diagnostic.message == f"unknown operation '{name}'"


def test_unknown_operation_names_that_are_not_short_strings(
    scratch_root: Path, make_service: Factory
) -> None:
    # Regression (issue #9 R1): a deeply nested non-string name made invoke() raise
    # RecursionError from str(name); a huge name was echoed whole.
    service = make_service(scratch_root)
    deep: list[object] = []
    for _ in range(5_000):
        deep = [deep]
    for name, operation, message in [
        (deep, "", "an operation name is a string, not list"),
        (None, "", "an operation name is a string, not NoneType"),
        (b"catalog", "", "an operation name is a string, not bytes"),
        ("x" * 120, "x" * 120, f"unknown operation '{'x' * 120}'"),
        ("x" * 10_000, "x" * 10_000, f"unknown operation '{'x' * 120}…' (10000 characters)"),
    ]:
        envelope = service.invoke(name, {})  # type: ignore[arg-type]
        assert envelope.operation == operation
        (diagnostic,) = envelope.diagnostics
        assert (diagnostic.code, diagnostic.message) == ("TQX_UNKNOWN_OPERATION", message)


def test_arguments_are_checked_strictly(scratch_root: Path, make_service: Factory) -> None:
    service = make_service(scratch_root)
    envelope = service.invoke(
        "execute_contract",
        {
            "package": "demo",
            "contract": 7,
            "inputs": [],
            "capabilities": ["a", 1],
            "stream": "yes",
            "sink": None,
            "extra": 1,
        },
    )
    assert not envelope.ok
    found = [(d.code, d.json_pointer) for d in envelope.diagnostics]
    assert found == [
        ("TQX_ARGUMENT_UNKNOWN", "/extra"),
        ("TQX_ARGUMENT_UNKNOWN", "/sink"),
        ("TQX_ARGUMENT_INVALID", "/contract"),
        ("TQX_ARGUMENT_INVALID", "/inputs"),
        ("TQX_ARGUMENT_INVALID", "/capabilities"),
        ("TQX_ARGUMENT_INVALID", "/stream"),
    ]
    assert envelope.diagnostics[2].message == "argument 'contract' must be a string, not a number"
    missing = service.invoke("run_eval", {"package": "demo"})
    assert [(d.code, d.json_pointer) for d in missing.diagnostics] == [
        ("TQX_ARGUMENT_MISSING", "/contract"),
        ("TQX_ARGUMENT_MISSING", "/fixture_id"),
    ]
    not_a_mapping = service.invoke("list_evals", ["demo"])  # type: ignore[arg-type]
    assert [d.code for d in not_a_mapping.diagnostics] == ["TQX_ARGUMENT_INVALID"]
    no_parameters = service.invoke("catalog", {"verbose": True})
    assert [d.code for d in no_parameters.diagnostics] == ["TQX_ARGUMENT_UNKNOWN"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (math.nan, "is not a finite number"),
        ({"a": [1, math.inf]}, "is not a finite number"),
        (1 << 70, "outside the 64-bit range"),
        ({1: "x"}, "non-string key"),
        ({"when": object()}, "not a JSON value"),
    ],
)
def test_json_arguments_must_be_fingerprintable(value: object, problem: str) -> None:
    spec = operation_spec("execute_contract")
    assert spec is not None
    _, diagnostics = bind_arguments(
        spec, {"package": "p", "contract": "c", "fixture_output": value}
    )
    (diagnostic,) = diagnostics
    assert diagnostic.code == "TQX_ARGUMENT_INVALID"
    assert problem in diagnostic.message


def test_nulls_and_defaults() -> None:
    spec = operation_spec("update_package")
    assert spec is not None
    bound, diagnostics = bind_arguments(
        spec, {"package": "p", "expected_fingerprint": "f", "version": None}
    )
    assert diagnostics == []
    assert bound == {
        "package": "p",
        "expected_fingerprint": "f",
        "version": None,
        "description": None,
    }
    compile_spec = operation_spec("compile_contract")
    assert compile_spec is not None
    first, _ = bind_arguments(compile_spec, {"package": "p", "contract": "c"})
    second, _ = bind_arguments(compile_spec, {"package": "p", "contract": "c"})
    first["inputs"]["mutated"] = True
    assert second["inputs"] == {}
    assert CATALOG[13].parameters[2].default == {}
    _, diagnostics = bind_arguments(compile_spec, {"package": "p", "contract": "c", "inputs": None})
    assert [d.code for d in diagnostics] == ["TQX_ARGUMENT_INVALID"]
    execute_spec = operation_spec("execute_contract")
    assert execute_spec is not None
    bound, diagnostics = bind_arguments(
        execute_spec, {"package": "p", "contract": "c", "fixture_output": None}
    )
    assert diagnostics == []
    assert bound["fixture_output"] is None


def test_parameter_spec_is_strict() -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(
            {"name": "x", "type": "integer", "required": True, "description": "."}, ParameterSpec
        )


def test_typed_request_or_values_but_not_both(reference: Path, make_service: Factory) -> None:
    from templiqx_contracts import RenderRequest

    service = make_service(reference)
    request = RenderRequest(inputs={"x": 1})
    envelope = service.compile_contract("crm3", "x", request=request, inputs={})
    assert [d.code for d in envelope.diagnostics] == ["TQX_ARGUMENT_INVALID"]


def test_unexpected_exceptions_become_internal_diagnostics(
    scratch_root: Path, make_service: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(scratch_root)

    def explode() -> list[object]:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(service._ctx.store, "discover", explode)
    envelope = service.discover_packages()
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == "TQX_INTERNAL"
    assert "RuntimeError: disk on fire" in diagnostic.message
