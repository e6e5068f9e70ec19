"""templiqx-core installed alone: parse, validate and compile a tiny contract; a diagnostic."""

from templiqx_contracts import RenderRequest
from templiqx_core import CORE_CODES, compile_interaction, parse_contract

SOURCE = """\
api_version: templiqx/v1alpha1
id: hello
version: 1.0.0
inputs:
  name: {required: true, schema: {type: string}}
messages:
  - role: user
    content:
      - {kind: text, value: "Hello "}
      - kind: interpolate
        expression: {kind: ref, path: inputs.name}
        filters: [trim, upper]
output_schema: {type: string}
"""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


contract, diagnostics = parse_contract(SOURCE)
check(contract is not None and diagnostics == [], f"parse: {diagnostics}")
assert contract is not None
interaction, diagnostics = compile_interaction(
    contract, RenderRequest(inputs={"name": " ada "}), ["text"]
)
check(interaction is not None and diagnostics == [], f"compile: {diagnostics}")
assert interaction is not None
check(interaction.messages[0].content == "Hello ADA", "rendered text")
check(interaction.compiler == "templiqx-core/0.2.0", "compiler id")
broken, diagnostics = parse_contract("api_version: templiqx/v1alpha1\nid: x\n")
# one problem per missing field (version, messages, output_schema), all in one run
missing = ["TQX_PARSE_MISSING_FIELD"] * 3
check(broken is None and [d.code for d in diagnostics] == missing, "parse error")
check(diagnostics[0].span is not None, "a parse error carries a position")
check({"TQX_PARSE_YAML", "TQX_PARSE_MISSING_FIELD"} <= set(CORE_CODES), "the code registry")
print("ok")
