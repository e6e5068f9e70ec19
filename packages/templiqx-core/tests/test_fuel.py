"""Render fuel (issue #29): work is bounded whatever it produces, provable excess is refused
statically, and a cancelled call stops as fuel is drawn."""

from __future__ import annotations

import threading
import time
from typing import Any

import msgspec
import pytest

from templiqx_contracts import Contract, RenderRequest
from templiqx_core import compile_interaction, render_messages, validate_contract
from templiqx_core.cost import minimum_steps
from templiqx_core.fuel import (
    DEFAULT_RENDER_FUEL,
    MAX_RENDER_FUEL,
    CallCancelledError,
    Fuel,
    FuelExhaustedError,
    cancelled_by,
    current_fuel,
    fuel_limit,
    metered,
)


def contract(content: list[Any], components: dict[str, Any] | None = None, **more: Any) -> Contract:
    data: dict[str, Any] = {
        "api_version": "templiqx/v1alpha1",
        "id": "fuel",
        "version": "1.0.0",
        "inputs": {
            "xs": {"required": False, "schema": {"type": "array", "items": {"type": "integer"}}},
            "big": {"required": False, "schema": {"type": "array", "items": {"type": "string"}}},
        },
        "capabilities": ["text"],
        "messages": [{"role": "user", "content": content}],
        "components": components or {},
        "output_schema": {"type": "string"},
    }
    data.update(more)
    return msgspec.convert(data, Contract)


def loop(body: list[Any], item: str, path: str = "inputs.xs") -> dict[str, Any]:
    return {
        "kind": "for_each",
        "collection": {"kind": "ref", "path": path},
        "item": item,
        "body": body,
    }


NESTED = contract([loop([loop([loop([], "c")], "b")], "a")])


def codes(diagnostics: list[Any]) -> list[str]:
    return [d.code for d in diagnostics]


def test_the_budget_is_a_checked_setting() -> None:
    assert fuel_limit(None) == DEFAULT_RENDER_FUEL == 1_000_000
    assert fuel_limit("5000") == 5000
    assert fuel_limit(MAX_RENDER_FUEL) == MAX_RENDER_FUEL == 50_000_000
    for bad in (0, -1, MAX_RENDER_FUEL + 1, "lots", True):
        with pytest.raises(ValueError, match="TEMPLIQX_RENDER_FUEL"):
            fuel_limit(bad)


def test_loops_without_output_run_out_of_fuel() -> None:
    # 300 x 300 x 300 empty iterations: 27 million steps, no text at all
    request = RenderRequest(inputs={"xs": list(range(300))})
    started = time.perf_counter()
    messages, diagnostics = render_messages(NESTED, request, Fuel(100_000))
    assert time.perf_counter() - started < 5  # 100,000 steps, well under a second unloaded
    assert messages is None
    assert codes(diagnostics) == ["TQX_FUEL_EXHAUSTED"]
    assert "100000 steps of render fuel" in diagnostics[0].message
    assert "TEMPLIQX_RENDER_FUEL" in diagnostics[0].message
    # the same loops over a short list fit in the budget
    small, diagnostics = render_messages(NESTED, RenderRequest(inputs={"xs": [1, 2, 3]}), Fuel(200))
    assert diagnostics == []
    assert small is not None


def test_every_unit_of_work_draws() -> None:
    fuel = Fuel(10_000)
    render_messages(NESTED, RenderRequest(inputs={"xs": [1, 2]}), fuel)
    # 1 + 2 x (1 + 1 + 2 x (1 + 1 + 2 x (1 + 1))) nodes, iterations and evaluations: 1 + 2*14
    assert fuel.used == 1 + 1 + 2 * (1 + 1 + 1 + 2 * (1 + 1 + 1 + 2 * 1))
    # equals walks its values: comparing a 5,000-element list costs 5,000 steps, not one
    equal = {
        "kind": "when",
        "condition": {
            "kind": "equals",
            "left": {"kind": "ref", "path": "inputs.big"},
            "right": {"kind": "literal", "value": ["x"] * 5000},
        },
        "then": [{"kind": "text", "value": "same"}],
    }
    fuel = Fuel()
    messages, _ = render_messages(
        contract([equal]), RenderRequest(inputs={"big": ["x"] * 5000}), fuel
    )
    assert messages is not None
    assert messages[0].content == "same"
    assert fuel.used > 5000


def test_a_component_call_tree_is_refused_before_any_request() -> None:
    """Each component calls the next twice: 2**24 expansions of a 1.5 KB contract."""
    components = {
        f"c{index}": {"content": [{"kind": "component", "name": f"c{index + 1}"}] * 2}
        for index in range(24)
    }
    components["c24"] = {"content": [{"kind": "text", "value": "x"}]}
    chain = contract([{"kind": "component", "name": "c0"}], components)
    steps, message = minimum_steps(chain, DEFAULT_RENDER_FUEL)
    assert (steps, message) == (DEFAULT_RENDER_FUEL + 1, 0)
    started = time.perf_counter()
    diagnostics = validate_contract(chain)
    assert time.perf_counter() - started < 1
    assert codes(diagnostics) == ["TQX_FUEL_EXHAUSTED"]
    assert diagnostics[0].json_pointer == "/messages/0/content"
    interaction, diagnostics = compile_interaction(chain, RenderRequest(), ["text"])
    assert interaction is None
    assert codes(diagnostics) == ["TQX_FUEL_EXHAUSTED"]
    # the same chain, 10 deep, fits: it is refused for its size, not for having components
    short = {name: value for name, value in components.items() if int(name[1:]) < 10}
    short["c10"] = components["c24"]
    assert validate_contract(contract([{"kind": "component", "name": "c0"}], short)) == []
    # a lower budget is enforced statically too
    with metered(Fuel(1000)):
        assert codes(validate_contract(contract([{"kind": "component", "name": "c0"}], short))) == [
            "TQX_FUEL_EXHAUSTED"
        ]


def test_only_what_every_render_takes_is_counted_statically() -> None:
    optional = {
        "kind": "when",
        "condition": {"kind": "literal", "value": True},
        "then": [loop([{"kind": "text", "value": "x"}] * 10, "i")],
        "else": [],
    }
    assert minimum_steps(contract([optional]), 100) == (1, None)  # the empty branch may run
    literal = {
        "kind": "for_each",
        "collection": {"kind": "literal", "value": list(range(50))},
        "item": "i",
        "body": [{"kind": "text", "value": "x"}] * 3,
    }
    assert minimum_steps(contract([literal]), 1000) == (1 + 50 * 4, None)


def test_a_set_token_stops_a_render_within_milliseconds() -> None:
    token = threading.Event()
    request = RenderRequest(inputs={"xs": list(range(1000))})
    outcome: list[Any] = []

    def work() -> None:
        outcome.append(render_messages(NESTED, request, Fuel(MAX_RENDER_FUEL, token)))

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(0.2)
    cancelled_at = time.perf_counter()
    token.set()
    thread.join(10)
    stopped_after = time.perf_counter() - cancelled_at
    assert not thread.is_alive()
    assert stopped_after < 1.0  # measured: ~1 ms (2,048 steps between looks at the token)
    messages, diagnostics = outcome[0]
    assert messages is None
    assert codes(diagnostics) == ["TQX_CANCELLED"]


def test_tokens_in_scope_cancel_every_budget_made_inside() -> None:
    token = threading.Event()
    with cancelled_by(token):
        fuel = Fuel()
    outside = Fuel()
    token.set()
    with pytest.raises(CallCancelledError):
        fuel.check()
    outside.check()  # made outside the scope: not cancelled by it
    with pytest.raises(FuelExhaustedError):
        Fuel(3).draw(4)
    assert current_fuel().limit == DEFAULT_RENDER_FUEL
    with metered(Fuel(7)) as mine:
        assert current_fuel() is mine


def test_a_cancelled_call_stops_reading_a_large_document() -> None:
    """Reading draws no fuel (it is bounded by MAX_EXPANDED_NODES) but looks at the tokens."""
    from templiqx_core import parse_contract

    source = (
        "api_version: templiqx/v1alpha1\nid: big\nversion: 1.0.0\ncapabilities: [text]\n"
        "messages: [{role: user, content: [{kind: text, value: hi}]}]\n"
        "output_schema: {type: string}\n"
        "runtime_policy:\n  junk: [" + ",".join(["{}"] * 90_000) + "]\n"
    )
    token = threading.Event()
    token.set()
    with metered(Fuel(cancel=token)), pytest.raises(CallCancelledError):
        parse_contract(source)
    contract, diagnostics = parse_contract(source)  # outside a metered call: read whole
    assert contract is not None
    assert diagnostics == []
