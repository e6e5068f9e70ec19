"""templiqx-local installed alone: compose over a copy of the example package and use it."""

import os
import shutil
from pathlib import Path

from templiqx_local import compose


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


root = Path("packages")
shutil.copytree(Path(os.environ["SMOKE_FIXTURES"]) / "welcome", root / "welcome")
service = compose(root)
check(service.validate_package("welcome").ok, "validate_package")
tested = service.test_package("welcome", capabilities=["structured_output", "text"])
check(tested.ok, f"test_package: {tested.diagnostics}")
created = service.create_package("fresh", "0.1.0")
check(created.ok and (root / "fresh" / "templiqx.yaml").is_file(), "create_package")
missing = service.inspect_contract("welcome", "nope")
check([d.code for d in missing.diagnostics] == ["TQX_NOT_FOUND"], "not found diagnostic")
print("ok")
