"""templiqx-conformance installed alone: the command lists its checks and the kit runs."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from templiqx_conformance import run_conformance
from templiqx_contracts import AdapterDescriptor, ExecutionReceipt, ExecutionRequest, fingerprint
from templiqx_ports import RuntimeAdapter

COMMAND = str(Path(sys.executable).parent / "templiqx-conformance")
CHECKS = ["descriptor.well_formed", "receipt.output_fingerprint", "streaming.event_order"]


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


class Echo(RuntimeAdapter):
    def descriptor(self) -> AdapterDescriptor:
        return AdapterDescriptor(id="smoke-echo", version="1.0.0", capabilities=["text"])

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        output: Any = request.fixture_output
        return ExecutionReceipt(
            adapter=self.descriptor(),
            request_fingerprint=fingerprint(request),
            output_fingerprint=fingerprint(output),
            output=output,
            output_schema_valid=True,
        )


listed = subprocess.run([COMMAND, "list", "--json"], capture_output=True, text=True, check=False)
check(listed.returncode == 0, f"list exits 0: {listed.stderr}")
names = [entry["name"] for entry in json.loads(listed.stdout)]
check(set(CHECKS) <= set(names), f"the checks: {names}")
report = run_conformance(Echo, checks=CHECKS)
check(report.ok and [c.name for c in report.checks] == CHECKS, f"report: {report}")
print("ok")
