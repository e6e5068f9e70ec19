"""templiqx-runtime-openai beside templiqx-cli: ``--runtime openai`` is listed and selectable."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

TEMPLIQX = str(Path(sys.executable).parent / "templiqx")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


helped = subprocess.run([TEMPLIQX, "--help"], capture_output=True, text=True, check=False)
runtimes = " ".join(helped.stdout.split())
check("templiqx.runtimes): fake, openai." in runtimes, f"the CLI lists openai: {helped.stdout}")
env = {k: v for k, v in os.environ.items() if not k.startswith(("MODEL_", "OPENAI_"))}
root = tempfile.mkdtemp()  # a packages root must exist: templiqx never creates one
chosen = subprocess.run(
    [TEMPLIQX, "--root", root, "--runtime", "openai", "discover"],
    capture_output=True,
    text=True,
    env=env,
    check=False,
)
# The runtime reads its settings only when a model is called: other commands need none.
check(chosen.returncode == 0, f"no model settings needed to discover: {chosen.stderr}")
print("ok")
