"""templiqx-ray installed alone: it imports with Ray and pyarrow, and refuses a CSV dataset that
Ray cannot read as a table (a record whose cells do not match the header) on the driver, naming
the record, before starting any cluster or writing any output."""

import os
import shutil
from pathlib import Path

from templiqx_local.batch import BatchFileError
from templiqx_ray import RayBatch, run_ray_batch


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke check failed: {what}")


shutil.copytree(Path(os.environ["SMOKE_FIXTURES"]) / "welcome", Path("packages") / "welcome")
Path("rows.csv").write_text("account,open_tickets\nacme,2\nglobex\n")
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
    check("line 3" in str(error), f"the record is not named: {error}")
else:
    check(False, "a ragged CSV dataset was not refused")
check(not Path("out.jsonl").exists(), "an output was written")
print("ok")
