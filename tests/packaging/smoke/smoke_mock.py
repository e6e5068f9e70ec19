"""templiqx-mock installed alone: replay the example streaming scenario."""

import os
from importlib.metadata import entry_points
from pathlib import Path

from templiqx_contracts import CompiledInteraction, Complete, Delta, ExecutionRequest, StreamEvent
from templiqx_ports import validate_event_order


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


scenario = Path(os.environ["SMOKE_FIXTURES"]) / "welcome/scenarios/stream-vip/manifest.json"
os.environ["TEMPLIQX_MOCK_SCENARIO"] = str(scenario)
factories = {e.name: e for e in entry_points(group="templiqx.runtimes")}
check(set(factories) == {"mock"}, f"only the mock runtime is registered: {sorted(factories)}")
runtime = factories["mock"].load()()
interaction = CompiledInteraction(
    compiler="templiqx-core/0.2.0",
    contract_id="onboarding-summary",
    contract_version="1.0.0",
    messages=[],
    output_schema={"type": "object"},
    required_capabilities=["structured_output"],
    target_capabilities=["structured_output"],
    runtime_policy={},
    extensions={},
)
events: list[StreamEvent] = []
receipt = runtime.execute_streaming(ExecutionRequest(interaction=interaction), events.append)
validate_event_order(events)
deltas = [e for e in events if isinstance(e, Delta)]
check(len(deltas) > 1, "the scenario streams several deltas")
check(isinstance(events[-1], Complete) and events[-1].receipt == receipt, "one Complete")
check(isinstance(receipt.output, dict) and "summary" in receipt.output, "the scripted output")
print("ok")
