"""templiqx-ray installed alone: it imports with Ray and pyarrow, and refuses a CSV dataset
(Ray would type its cells) before starting any cluster."""

import os
import shutil
from pathlib import Path

from templiqx_local.batch import BatchFileError
from templiqx_ray import RayBatch, run_ray_batch


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


shutil.copytree(Path(os.environ["SMOKE_FIXTURES"]) / "welcome", Path("packages") / "welcome")
Path("rows.csv").write_text("account,open_tickets\nacme,2\n")
try:
    run_ray_batch(
        RayBatch(
            root="packages",
            package="welcome",
            contract="account-digest",
            input="rows.csv",
            output="out.jsonl",
        )
    )
except BatchFileError as error:
    check(error.code == "TQX_BATCH_INPUT_INVALID", f"code {error.code}")
else:
    check(False, "a CSV dataset was not refused")
check(not Path("out.jsonl").exists(), "an output was written")
print("ok")
