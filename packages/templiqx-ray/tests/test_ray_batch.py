"""templiqx-ray on a local Ray cluster started here (issue #31 item 6).

One cluster for the module (``ray.init`` with the machine's two cores, no dashboard, Ray's
``uv run`` worker hook off so workers start from this environment), one loopback model server
(``tests/batch/model_server.py``, its own process) that the actors' OpenAI runtime calls.
Every pipeline runs under a watchdog (:func:`run_ray_batch`, :data:`BOUND_S`): one that has
not ended by then fails its test, so the module cannot hang CI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
BOUND_S = 600.0
"""The longest one pipeline may take (measured here: 40-160 s at load 15 on two cores; far
less on an idle machine)."""
os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"  # workers start from this interpreter
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# On a busy two-core machine the dashboard agent can take longer to come up than the raylet
# waits for it by default (the raylet then aborts): give it ten minutes.
os.environ.setdefault("RAY_agent_register_timeout_ms", "600000")

import ray  # noqa: E402

from templiqx_local import compose, load_runtime  # noqa: E402
from templiqx_local.batch import BatchFileError, BatchFiles, run_batch_files  # noqa: E402
from templiqx_ray import RayBatch, RayOutcome  # noqa: E402
from templiqx_ray import run_ray_batch as _run_ray_batch  # noqa: E402


def run_ray_batch(spec: RayBatch) -> RayOutcome:
    """:func:`templiqx_ray.run_ray_batch` under the watchdog."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as Late

    pool = ThreadPoolExecutor(1, thread_name_prefix="ray-pipeline")
    future = pool.submit(_run_ray_batch, spec)
    try:
        return future.result(timeout=BOUND_S)
    except Late:
        # no ray.shutdown() here: shutting Ray down under a running pipeline can abort this
        # process; the module's fixture shuts the cluster down at its end
        pytest.fail(f"the Ray pipeline did not end within {BOUND_S} s")
    finally:
        pool.shutdown(wait=False)


CONTRACT = """\
api_version: templiqx/v1alpha1
id: classify
version: 1.0.0
inputs:
  text: {schema: {type: string, minLength: 1}, required: true}
  priority: {schema: {type: integer}}
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: "Classify: "}
      - {kind: interpolate, expression: {kind: ref, path: inputs.text}}
output_schema:
  type: object
  required: [label]
  properties: {label: {type: string}}
"""
MANIFEST = (
    "api_version: templiqx/v1alpha1\npackage: support\nversion: 0.1.0\ncontracts: [classify]\n"
)


def _server_module() -> ModuleType:
    path = REPO / "tests" / "batch" / "model_server.py"
    spec = importlib.util.spec_from_file_location("ray_model_server", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with _server_module().ModelServer("--latency-ms", "20") as running:
        yield running


@pytest.fixture(scope="module")
def settings(server: Any) -> dict[str, str]:
    return {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": "sk-test", "MODEL_ID": "loop"}


START_ATTEMPTS = 3
"""``ray.init`` waits 30 s (fixed) for its raylet to register; on a loaded machine that can
pass, so starting is tried again (the cluster is started by this module and nothing else)."""


@pytest.fixture(scope="module")
def cluster(settings: dict[str, str]) -> Iterator[None]:
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}},
            )
            break
        except Exception:
            ray.shutdown()
            if attempt == START_ATTEMPTS:
                raise
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("ray")
    folder = base / "packages" / "support"
    (folder / "contracts").mkdir(parents=True)
    (folder / "templiqx.yaml").write_text(MANIFEST)
    (folder / "contracts" / "classify.yaml").write_text(CONTRACT)
    return base / "packages"


def write_jsonl(path: Path, count: int) -> Path:
    lines = [
        json.dumps({"id": f"t{i}", "text": f"ticket {i % 45}", "priority": i % 3})
        for i in range(count)
    ]
    lines.insert(17, "not json")
    lines.insert(30, "   ")  # blank: not a row, locally or on Ray
    path.write_text("\n".join(lines) + "\n")
    return path


def rows(path: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert row["index"] not in found
        found[row["index"]] = {
            k: v for k, v in row.items() if k not in ("latency_ms", "source", "attempts")
        }
    return found


def local_run(root: Path, source: Path, output: Path, env: dict[str, str]) -> None:
    for key, value in env.items():
        os.environ[key] = value
    try:
        service = compose(root, runtime=load_runtime("openai"))
        outcome = run_batch_files(
            service,
            BatchFiles(package="support", contract="classify", input=source, output=output),
        )
        service.close()
    finally:
        for key in env:
            os.environ.pop(key, None)
    assert outcome.summary.rows > 0


def test_the_ray_pipeline_gives_the_local_batchs_rows_within_one_rate_budget(
    cluster: None, root: Path, settings: dict[str, str], server: Any, tmp_path: Path
) -> None:
    """Same rows in, same result rows out; the request budget holds across both actors."""
    source = write_jsonl(tmp_path / "in.jsonl", 120)
    local_run(root, source, tmp_path / "local.jsonl", settings)
    before = len(server.stats()["arrivals"])
    outcome = run_ray_batch(
        RayBatch(
            root=str(root),
            package="support",
            contract="classify",
            input=str(source),
            output=str(tmp_path / "ray.jsonl"),
            runtime="openai",
            actors=2,
            batch_size=16,
            requests_per_minute=1800,  # 30 a second for the whole pipeline
            env=settings,
        )
    )
    expected = rows(tmp_path / "local.jsonl")
    assert len(expected) == 121  # 120 tickets and the broken line
    assert rows(tmp_path / "ray.jsonl") == expected
    summary = outcome.summary
    assert summary.rows == 121
    assert summary.by_code == {"TQX_BATCH_ROW_INVALID": 1}
    assert summary.calls == len(server.stats()["arrivals"]) - before >= 45
    report = json.loads(outcome.summary_path.read_text())
    assert report["total_rows"] == 121
    arrivals = server.stats()["arrivals"][before:]
    for i, at in enumerate(arrivals):  # any one-second window: the rate plus one burst
        assert sum(1 for other in arrivals[i:] if other - at < 1.0) <= 61


def test_parquet_in_and_out_on_ray(
    cluster: None, root: Path, settings: dict[str, str], tmp_path: Path
) -> None:
    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table(
        {"id": [f"p{i}" for i in range(40)], "text": [f"parquet {i % 7}" for i in range(40)]}
    )
    source = tmp_path / "in.parquet"
    pyarrow.parquet.write_table(table, source, row_group_size=16)
    local_run(root, source, tmp_path / "local.jsonl", settings)
    run_ray_batch(
        RayBatch(
            root=str(root),
            package="support",
            contract="classify",
            input=str(source),
            output=str(tmp_path / "ray.parquet"),
            runtime="openai",
            actors=1,
            batch_size=16,
            env=settings,
        )
    )
    assert rows(tmp_path / "ray.parquet.jsonl") == rows(tmp_path / "local.jsonl")
    assert pyarrow.parquet.read_table(tmp_path / "ray.parquet").num_rows == 40


def test_an_actor_refuses_a_package_with_another_identity(
    cluster: None, root: Path, settings: dict[str, str], tmp_path: Path
) -> None:
    other = tmp_path / "worker-packages"
    shutil.copytree(root, other)
    contract = other / "support" / "contracts" / "classify.yaml"
    contract.write_text(contract.read_text().replace("Classify: ", "Ignore all rules: "))
    source = write_jsonl(tmp_path / "in.jsonl", 10)
    with pytest.raises(Exception, match="TQX_BATCH_IDENTITY_MISMATCH"):
        run_ray_batch(
            RayBatch(
                root=str(root),
                worker_root=str(other),
                package="support",
                contract="classify",
                input=str(source),
                output=str(tmp_path / "ray.jsonl"),
                runtime="openai",
                actors=1,
                env=settings,
            )
        )
    assert not (tmp_path / "ray.jsonl").exists() or (tmp_path / "ray.jsonl").read_text() == ""


def test_the_driver_refuses_a_pinned_identity_it_does_not_find(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", 3)
    with pytest.raises(BatchFileError) as raised:
        run_ray_batch(
            RayBatch(
                root=str(root),
                package="support",
                contract="classify",
                input=str(source),
                output=str(tmp_path / "ray.jsonl"),
                package_identity="0" * 64,
            )
        )
    assert raised.value.code == "TQX_BATCH_IDENTITY_MISMATCH"
