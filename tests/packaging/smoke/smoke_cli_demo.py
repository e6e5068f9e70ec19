"""templiqx-cli installed beside templiqx-mock: ``templiqx demo`` runs from the installed CLI.

The example package ships inside the CLI's wheel, so the demo needs no clone: it runs in an
empty folder, end to end, and writes nothing there.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

TEMPLIQX = str(Path(sys.executable).parent / "templiqx")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


done = subprocess.run(
    [TEMPLIQX, "demo", "--json", "--pace-ms", "0"],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
)
check(done.returncode == 0, f"demo exits 0: {done.stderr}")
report = json.loads(done.stdout)
check(list(report) == ["validate", "compile", "execute"], f"the three steps: {list(report)}")
check(all(envelope["ok"] for envelope in report.values()), "every step is ok")
events = [json.loads(line) for line in done.stderr.splitlines()]
check(events[-1]["kind"] == "Complete" and len(events) > 2, "streamed deltas, then Complete")
check(os.listdir(".") == [], f"nothing written where it ran: {os.listdir('.')}")
people = subprocess.run(
    [TEMPLIQX, "demo", "--pace-ms", "0", "--copy-to", "mine"],
    capture_output=True,
    text=True,
    timeout=120,
    check=False,
)
check(people.returncode == 0, f"demo for people: {people.stderr}")
check(Path("mine", "welcome", "templiqx.yaml").is_file(), "--copy-to copies the example")
check("--root mine explain welcome onboarding-summary" in people.stdout, people.stdout)
print("ok")
