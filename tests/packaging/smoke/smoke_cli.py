"""templiqx-cli installed alone: the ``templiqx`` command works, offline, on the fake runtime."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

TEMPLIQX = str(Path(sys.executable).parent / "templiqx")


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TEMPLIQX, *args], capture_output=True, text=True, timeout=60, check=False
    )


catalog = run("catalog", "--json")
check(catalog.returncode == 0, f"catalog exits 0: {catalog.stderr}")
envelope = json.loads(catalog.stdout)
names = [op["name"] for op in envelope["result"]]
check(envelope["ok"] and "execute_contract" in names, "the catalog envelope")
version = run("--version")
check(version.stdout.strip() == "templiqx 0.2.0", f"--version: {version.stdout!r}")
helped = run("--help")
check("templiqx.runtimes): fake." in " ".join(helped.stdout.split()), "only fake is installed")
shutil.copytree(Path(os.environ["SMOKE_FIXTURES"]) / "welcome", Path("packages") / "welcome")
validated = run("--root", "packages", "--json", "validate", "welcome")
check(validated.returncode == 0 and json.loads(validated.stdout)["ok"], validated.stdout)
people = run("--root", "packages", "validate", "welcome")
check("validate welcome: 2 contracts valid" in people.stdout, f"for people: {people.stdout}")
tested = run(
    "--root",
    "packages",
    "--json",
    "test",
    "welcome",
    "--capability",
    "structured_output",
    "--capability",
    "text",
)
check(tested.returncode == 0, f"test: {tested.stdout}")
missing = run("--root", "packages", "--json", "inspect", "welcome", "nope")
check(missing.returncode == 2, "a not-ok envelope exits 2")
codes = [d["code"] for d in json.loads(missing.stdout)["diagnostics"]]
check(codes == ["TQX_NOT_FOUND"], f"diagnostics: {codes}")
demo = run("demo")  # the example ships in the wheel; only the mock runtime is missing here
check(demo.returncode == 1, f"demo without the mock exits 1: {demo.stderr}")
check("--with templiqx-mock" in demo.stderr, f"demo says how to add the mock: {demo.stderr}")
print("ok")
