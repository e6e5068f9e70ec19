"""templiqx-application installed alone: the catalog, the fake runtime and its entry point."""

from importlib.metadata import entry_points

from templiqx_application import CATALOG, OPERATION_NAMES, create_fake_runtime, fix_hint
from templiqx_contracts import ExecutionRequest, RenderRequest
from templiqx_core import compile_interaction, parse_contract

SOURCE = """\
api_version: templiqx/v1alpha1
id: hello
version: 1.0.0
messages:
  - role: user
    content: [{kind: text, value: Hi}]
output_schema: {type: string}
"""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


check([op.name for op in CATALOG] == list(OPERATION_NAMES), "catalog names")
check("execute_contract" in OPERATION_NAMES, "execute_contract in the catalog")
check(fix_hint("TQX_NOT_FOUND") is not None, "fix hints")
runtimes = {e.name: e for e in entry_points(group="templiqx.runtimes")}
check(set(runtimes) == {"fake"}, f"only the fake runtime is registered: {sorted(runtimes)}")
runtime = runtimes["fake"].load()()
check(runtime.descriptor() == create_fake_runtime().descriptor(), "entry point = factory")
contract, _ = parse_contract(SOURCE)
assert contract is not None
interaction, diagnostics = compile_interaction(contract, RenderRequest(), ["text"])
assert interaction is not None, diagnostics
receipt = runtime.execute(ExecutionRequest(interaction=interaction, fixture_output="Hello"))
check(receipt.output == "Hello" and receipt.output_schema_valid, "fake runtime receipt")
print("ok")
