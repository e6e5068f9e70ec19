"""Property tests: the core never raises, whatever contract or request it is given."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from templiqx_contracts import (
    Contract,
    Diagnostic,
    RenderRequest,
    canonical_json,
    fingerprint,
)
from templiqx_core import (
    compile_interaction,
    diff_contracts,
    explain_contract,
    render_messages,
    strict_json_equal,
    validate_contract,
    validate_output,
    validate_values,
)
from templiqx_core.filters import json_text

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# Whole random contracts are expensive to generate; fewer examples keep the suite fast.
CONTRACT_SETTINGS = settings(SETTINGS, max_examples=60)

KEYS = st.sampled_from(["a", "b", "name", "x", "0", "a/b", "é", "_templiqx_translations"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(KEYS | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=6,
)

TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
KEYWORD_VALUES: dict[str, Any] = {
    "enum": st.lists(SCALARS, max_size=3),
    "const": SCALARS,
    "format": st.sampled_from(["date", "date-time", "email"]),
    "minLength": st.integers(0, 4),
    "maxLength": st.integers(0, 4),
    "minimum": st.integers(-3, 3) | st.floats(-3, 3),
    "maximum": st.integers(-3, 3) | st.floats(-3, 3),
    "exclusiveMinimum": st.integers(-3, 3),
    "exclusiveMaximum": st.integers(-3, 3),
    "minItems": st.integers(0, 3),
    "maxItems": st.integers(0, 3),
    "uniqueItems": st.booleans(),
    "additionalProperties": st.booleans(),
    "pattern": st.just("^a"),
    "oneOf": st.just([{"type": "string"}]),
}


KEYWORD_LISTS = st.lists(st.sampled_from(sorted(KEYWORD_VALUES)), max_size=3, unique=True)
ONE_IN_TEN = st.integers(0, 9)
PROPERTY_NAMES = st.lists(KEYS, max_size=3, unique=True)
REQUIRED_NAMES = st.lists(KEYS, max_size=2)


@st.composite
def _schemas(draw: st.DrawFn, depth: int) -> Any:
    """Mostly bounded-subset schemas, sometimes anything at all."""
    if draw(ONE_IN_TEN) == 0:
        return draw(JSON)
    schema: dict[str, Any] = {"type": draw(TYPES)}
    for keyword in draw(KEYWORD_LISTS):
        schema[keyword] = draw(KEYWORD_VALUES[keyword])
    if depth > 0 and schema["type"] == "array":
        schema["items"] = draw(SCHEMAS[depth - 1])
    if depth > 0 and schema["type"] == "object" and draw(st.booleans()):
        names = draw(PROPERTY_NAMES)
        schema["properties"] = {name: draw(SCHEMAS[depth - 1]) for name in names}
        schema["required"] = draw(REQUIRED_NAMES)
    return schema


SCHEMAS: list[st.SearchStrategy[Any]] = []
for _depth in range(3):
    SCHEMAS.append(_schemas(_depth))


def schemas(depth: int = 2) -> st.SearchStrategy[Any]:
    return SCHEMAS[depth]


PATHS = st.one_of(
    st.sampled_from(
        [
            "inputs.a",
            "inputs.b",
            "inputs.a.name",
            "inputs.a.0",
            "context.x",
            "context.locale",
            "item",
            "item.name",
            "p",
            "inputs",
            "",
            "a..b",
        ]
    ),
    st.text(max_size=10),
)
FILTERS = st.lists(
    st.sampled_from(
        [
            "trim",
            "lower",
            "upper",
            "json",
            "format_date",
            "format_number",
            "format_currency",
            "translate",
        ]
    ),
    max_size=2,
)


def _exprs() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.builds(lambda p: {"kind": "ref", "path": p}, PATHS),
        st.builds(lambda v: {"kind": "literal", "value": v}, JSON),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(lambda a, b: {"kind": "equals", "left": a, "right": b}, inner, inner),
            st.builds(lambda a: {"kind": "not", "value": a}, inner),
            st.builds(lambda vs: {"kind": "and", "values": vs}, st.lists(inner, max_size=3)),
            st.builds(lambda vs: {"kind": "or", "values": vs}, st.lists(inner, max_size=3)),
        ),
        max_leaves=3,
    )


COMPONENT_NAMES = st.sampled_from(["c1", "c2", "c3", "ghost"])
ITEMS = st.sampled_from(["item", "p", "inputs", "bad item", "a.b"])


EXPRS = _exprs()


def exprs() -> st.SearchStrategy[dict[str, Any]]:
    return EXPRS


def _nodes() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.builds(lambda v: {"kind": "text", "value": v}, st.text(max_size=5)),
        st.builds(
            lambda e, f: {"kind": "interpolate", "expression": e, "filters": f}, exprs(), FILTERS
        ),
        st.builds(
            lambda n, w: {"kind": "component", "name": n, "with": w},
            COMPONENT_NAMES,
            st.dictionaries(st.sampled_from(["p", "q", "item"]), exprs(), max_size=2),
        ),
        st.just({"kind": "include", "path": "partials/x.yaml"}),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(
                lambda c, t, e: {"kind": "when", "condition": c, "then": t, "else": e},
                exprs(),
                st.lists(inner, max_size=2),
                st.lists(inner, max_size=2),
            ),
            st.builds(
                lambda c, i, b, s: {
                    "kind": "for_each",
                    "collection": c,
                    "item": i,
                    "body": b,
                    "separator": s,
                },
                exprs(),
                ITEMS,
                st.lists(inner, max_size=2),
                st.text(max_size=2),
            ),
        ),
        max_leaves=4,
    )


NODES = _nodes()


def nodes() -> st.SearchStrategy[dict[str, Any]]:
    return NODES


FIELDS = st.dictionaries(
    KEYS,
    st.fixed_dictionaries({"schema": schemas(1), "required": st.booleans()}),
    max_size=2,
)


def _components() -> st.SearchStrategy[dict[str, Any]]:
    typed = st.fixed_dictionaries(
        {
            "parameters": st.dictionaries(
                st.sampled_from(["p", "q"]),
                st.fixed_dictionaries({"schema": schemas(1), "required": st.booleans()}),
                max_size=2,
            ),
            "content": st.lists(nodes(), max_size=2),
        }
    )
    return st.dictionaries(
        st.sampled_from(["c1", "c2", "c3"]), typed | st.lists(nodes(), max_size=2), max_size=2
    )


COMPONENTS = _components()
EXTENSION = st.fixed_dictionaries(
    {
        "capability": st.sampled_from(["tools", "vendor.x", "", "bad cap"]),
        "schema": schemas(1),
        "value": JSON,
    }
)
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user"]), "content": st.lists(NODES, max_size=3)}
    ),
    max_size=2,
)


@st.composite
def contracts(draw: st.DrawFn) -> Contract:
    data = {
        "api_version": draw(st.sampled_from(["templiqx/v1alpha1", "v0"])),
        "id": draw(st.sampled_from(["c", "ok.id-1", "", "bad id"])),
        "version": draw(st.sampled_from(["1.0.0", "1.0", "1.0.0-rc.1"])),
        "inputs": draw(FIELDS),
        "context": draw(FIELDS),
        "capabilities": draw(st.lists(st.sampled_from(["text", "structured_output"]), max_size=2)),
        "messages": draw(MESSAGES),
        "output_schema": draw(schemas()),
        "runtime_policy": draw(st.dictionaries(KEYS, JSON, max_size=2)),
        "extensions": draw(
            st.dictionaries(st.sampled_from(["v.a", "plain"]), EXTENSION, max_size=2)
        ),
        "components": draw(COMPONENTS),
    }
    return msgspec.convert(data, Contract)


REQUESTS = st.builds(
    lambda i, c: RenderRequest(inputs=i, context=c),
    st.dictionaries(KEYS, JSON, max_size=3),
    st.dictionaries(KEYS | st.just("locale"), JSON, max_size=3),
)
TARGETS = st.lists(st.sampled_from(["text", "structured_output", "tools", "vendor.x"]), max_size=3)


def assert_diagnostics(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        assert diagnostic.severity == "error"
        assert diagnostic.code.startswith("TQX_")
        assert diagnostic.json_pointer is not None
        assert diagnostic.json_pointer == "" or diagnostic.json_pointer.startswith("/")


@CONTRACT_SETTINGS
@given(contracts())
def test_validate_contract_never_raises(contract: Contract) -> None:
    assert_diagnostics(validate_contract(contract))
    explain_contract(contract)
    diff = diff_contracts(contract, contract)
    assert diff.changes == []


@CONTRACT_SETTINGS
@given(contracts(), REQUESTS, TARGETS)
def test_compile_and_render_never_raise(
    contract: Contract, request: RenderRequest, targets: list[str]
) -> None:
    value_diagnostics = validate_values(contract, request)
    assert_diagnostics(value_diagnostics)
    compiled, diagnostics = compile_interaction(contract, request, targets)
    assert_diagnostics(diagnostics)
    assert (compiled is None) == bool(diagnostics)
    messages, render_diagnostics = render_messages(contract, request)
    assert_diagnostics(render_diagnostics)
    if compiled is not None:
        assert fingerprint(compiled)
        assert messages == compiled.messages
    elif not validate_contract(contract) and not value_diagnostics:
        # everything validated, so only a render failure (alone, pointer "") or a capability
        # gap can remain
        assert len(diagnostics) == 1 or all(
            d.code in ("TQX_CAPABILITY_UNSUPPORTED", "TQX_EXTENSION_UNSUPPORTED")
            for d in diagnostics
        )


# Well-typed contracts, to exercise rendering rather than validation failures.

TYPED_FIELDS: dict[str, tuple[dict[str, Any], st.SearchStrategy[Any]]] = {
    "s": ({"type": "string"}, st.text(max_size=6)),
    "n": ({"type": "number"}, st.integers(-(10**6), 10**6) | st.floats(-1e20, 1e20)),
    "b": ({"type": "boolean"}, st.booleans()),
    "d": ({"type": "string", "format": "date"}, st.sampled_from(["2026-07-12", "2024-02-29"])),
    "xs": (
        {"type": "array", "items": {"type": "string"}},
        st.lists(st.text(max_size=3), max_size=3),
    ),
    "o": (
        {"type": "object", "properties": {"k": {"type": "integer"}}},
        st.fixed_dictionaries({"k": st.integers(-5, 5)}),
    ),
}
SCALAR_REFS = {"s": ["trim", "upper", "lower"], "n": ["format_number", "format_currency"]}


@st.composite
def typed_case(draw: st.DrawFn) -> tuple[Contract, RenderRequest]:
    content: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        choice = draw(st.sampled_from(["s", "n", "b", "d", "xs", "o", "loop", "when", "call"]))
        if choice in ("s", "n"):
            filters = draw(st.lists(st.sampled_from(SCALAR_REFS[choice]), max_size=1))
            expression = {"kind": "ref", "path": f"inputs.{choice}"}
            content.append({"kind": "interpolate", "expression": expression, "filters": filters})
        elif choice == "d":
            expression = {"kind": "ref", "path": "inputs.d"}
            content.append(
                {"kind": "interpolate", "expression": expression, "filters": ["format_date"]}
            )
        elif choice in ("xs", "o", "b"):
            expression = {"kind": "ref", "path": f"inputs.{choice}"}
            content.append({"kind": "interpolate", "expression": expression, "filters": ["json"]})
        elif choice == "loop":
            content.append(
                {
                    "kind": "for_each",
                    "collection": {"kind": "ref", "path": "inputs.xs"},
                    "item": "x",
                    "separator": ", ",
                    "body": [{"kind": "interpolate", "expression": {"kind": "ref", "path": "x"}}],
                }
            )
        elif choice == "when":
            condition = {
                "kind": "or",
                "values": [
                    {"kind": "ref", "path": "inputs.b"},
                    {
                        "kind": "equals",
                        "left": {"kind": "ref", "path": "inputs.o.k"},
                        "right": {"kind": "literal", "value": 1},
                    },
                ],
            }
            content.append(
                {
                    "kind": "when",
                    "condition": condition,
                    "then": [{"kind": "text", "value": "yes"}],
                    "else": [{"kind": "text", "value": "no"}],
                }
            )
        else:
            content.append(
                {
                    "kind": "component",
                    "name": "wrap",
                    "with": {"v": {"kind": "ref", "path": "inputs.s"}},
                }
            )
    names = draw(st.lists(st.sampled_from(sorted(TYPED_FIELDS)), unique=True))
    contract = msgspec.convert(
        {
            "api_version": "templiqx/v1alpha1",
            "id": "typed-case",
            "version": "1.0.0",
            "inputs": {
                name: {"schema": schema, "required": name in names}
                for name, (schema, _) in TYPED_FIELDS.items()
            },
            "context": {"locale": {"schema": {"type": "string"}}},
            "messages": [{"role": "user", "content": content}],
            "output_schema": {"type": "object"},
            "components": {
                "wrap": [
                    {"kind": "text", "value": "["},
                    {"kind": "interpolate", "expression": {"kind": "ref", "path": "v"}},
                    {"kind": "text", "value": "]"},
                ]
            },
        },
        Contract,
    )
    inputs = {name: draw(TYPED_FIELDS[name][1]) for name in names}
    locale = draw(st.sampled_from(["", "nl-NL", "de", "en-US", "fr"]))
    return contract, RenderRequest(inputs=inputs, context={"locale": locale})


@SETTINGS
@given(typed_case())
def test_valid_requests_render_or_fail_alone(case: tuple[Contract, RenderRequest]) -> None:
    contract, request = case
    assert validate_contract(contract) == []
    assert validate_values(contract, request) == []
    compiled, diagnostics = compile_interaction(contract, request, [])
    if compiled is None:
        assert len(diagnostics) == 1
        assert diagnostics[0].json_pointer == ""
        assert diagnostics[0].code == "TQX_VALUE_MISSING"
    else:
        assert diagnostics == []
        assert fingerprint(compiled)


@SETTINGS
@given(JSON)
def test_json_text_is_canonical_json(value: Any) -> None:
    assert json_text(value) == canonical_json(value).decode("utf-8")


@SETTINGS
@given(JSON, JSON)
def test_strict_equality_is_reflexive_and_symmetric(a: Any, b: Any) -> None:
    assert strict_json_equal(a, a)
    assert strict_json_equal(a, b) == strict_json_equal(b, a)


@SETTINGS
@given(schemas(), JSON)
def test_validate_output_never_raises(schema: Any, output: Any) -> None:
    assert_diagnostics(validate_output(schema, output))
