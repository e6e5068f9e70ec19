"""templiqx-runtime-openai beside templiqx-cli: ``--runtime openai`` is listed and selectable."""

import os
import subprocess
import sys
from pathlib import Path

TEMPLIQX = str(Path(sys.executable).parent / "templiqx")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


helped = subprocess.run([TEMPLIQX, "--help"], capture_output=True, text=True, check=False)
runtimes = " ".join(helped.stdout.split())
check("templiqx.runtimes): fake, openai." in runtimes, f"the CLI lists openai: {helped.stdout}")
env = {k: v for k, v in os.environ.items() if not k.startswith("MODEL_")}
chosen = subprocess.run(
    [TEMPLIQX, "--root", "packages", "--runtime", "openai", "discover"],
    capture_output=True,
    text=True,
    env=env,
    check=False,
)
check(chosen.returncode == 1, f"missing settings exit 1: {chosen.returncode}")
check("MODEL_BASE_URL" in chosen.stderr, f"the message names the variable: {chosen.stderr}")
print("ok")
