"""templiqx-ray on a local Ray cluster started here (issue #31 item 6).

One cluster for the session (``ray.init`` with the machine's two cores, no dashboard, no
driver logs, Ray Data's progress bars and logging quiet, Ray's ``uv run`` worker hook off so
workers start from this environment), one loopback model server (``tests/batch/
model_server.py``, its own process) that the actors' OpenAI runtime calls. Pipelines are few
and small (an actor pool costs a process start per actor): each checks several things. Every
pipeline runs under a watchdog (:func:`run_ray_batch`, :data:`BOUND_S`): one that has not ended
by then fails its test, so the module cannot hang CI.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import importlib.util
import json
import logging
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
from templiqx_ray.claims import ClaimKeeper  # noqa: E402


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


@pytest.fixture(scope="session")
def server() -> Iterator[Any]:
    with _server_module().ModelServer("--latency-ms", "20") as running:
        yield running


@pytest.fixture(scope="session")
def settings(server: Any) -> dict[str, str]:
    return {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": "sk-test", "MODEL_ID": "loop"}


START_ATTEMPTS = 3
"""``ray.init`` waits 30 s (fixed) for its raylet to register; on a loaded machine that can
pass, so starting is tried again (the cluster is started by this module and nothing else)."""


def _quiet_ray_data() -> None:
    """No progress bars, no per-dataset stats or start lines: CI output stays readable."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.verbose_stats_logs = False
    with contextlib.suppress(AttributeError):
        context.print_on_execution_start = False
    for name in ("ray", "ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def cluster() -> Iterator[None]:
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                runtime_env={"env_vars": {"RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}},
            )
            break
        except Exception:
            ray.shutdown()
            if attempt == START_ATTEMPTS:
                raise
    _quiet_ray_data()
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


def write_jsonl(path: Path, count: int, distinct: int) -> Path:
    lines = [
        json.dumps({"id": f"t{i}", "text": f"ticket {i % distinct}", "priority": i % 3})
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


def local_run(
    root: Path, source: Path, output: Path, env: dict[str, str], mapping: list[str] | None = None
) -> None:
    for key, value in env.items():
        os.environ[key] = value
    try:
        service = compose(root, runtime=load_runtime("openai"))
        outcome = run_batch_files(
            service,
            BatchFiles(
                package="support",
                contract="classify",
                input=source,
                output=output,
                mapping=list(mapping or []),
            ),
        )
        service.close()
    finally:
        for key in env:
            os.environ.pop(key, None)
    assert outcome.summary.rows > 0


def test_ray_gives_the_local_rows_executes_each_request_once_within_one_rate_budget(
    cluster: None, root: Path, settings: dict[str, str], server: Any, tmp_path: Path
) -> None:
    """Same rows in, same result rows out; a request seen by both actors is executed once in
    the run; the request budget holds for the whole pipeline, at the model server."""
    source = write_jsonl(tmp_path / "in.jsonl", 130, distinct=100)
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
    assert len(expected) == 131  # 130 tickets and the broken line
    got = rows(tmp_path / "ray.jsonl")
    assert got == expected
    summary = outcome.summary
    assert summary.rows == 131
    assert summary.by_code == {"TQX_BATCH_ROW_INVALID": 1}
    arrivals = server.stats()["arrivals"][before:]
    assert summary.calls == len(arrivals) == 100  # each distinct request once, on either actor
    sources = [json.loads(line)["source"] for line in (tmp_path / "ray.jsonl").open()]
    assert sources.count("executed") == 100
    assert sources.count("duplicate") == 30
    report = json.loads(outcome.summary_path.read_text())
    assert report["total_rows"] == 131
    # 100 calls at 30 a second: a budget of one second's worth at once, then the rate. In any
    # one-second window at most the burst plus the rate (and one for the window's edge);
    # a bucket per actor would let twice as many through.
    for i, at in enumerate(arrivals):
        assert sum(1 for other in arrivals[i:] if other - at < 1.0) <= 61
    assert arrivals[-1] - arrivals[0] >= (100 - 30) / 30 - 0.1


def write_csv(path: Path, count: int) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "text", "priority"])
        for i in range(count):
            text = f"ticket {i}, with a comma" if i % 5 else f"ticket {i}\nover two lines"
            writer.writerow([f"c{i}", text, "" if i == 3 else str(i % 3)])
        writer.writerow([])  # a blank line: not a record
    return path


def test_csv_in_parquet_out_on_ray_gives_the_local_rows(
    cluster: None, root: Path, settings: dict[str, str], tmp_path: Path
) -> None:
    """Cells as text (quoted commas and line breaks kept, an empty cell absent), converted by
    the same mapping as locally; Parquet written beside the JSONL."""
    import pyarrow.parquet

    source = write_csv(tmp_path / "in.csv", 24)
    mapping = ["priority=inputs.priority:int"]
    local_run(root, source, tmp_path / "local.jsonl", settings, mapping)
    run_ray_batch(
        RayBatch(
            root=str(root),
            package="support",
            contract="classify",
            input=str(source),
            output=str(tmp_path / "ray.parquet"),
            runtime="openai",
            actors=1,
            batch_size=8,
            mapping=mapping,
            env=settings,
        )
    )
    expected = rows(tmp_path / "local.jsonl")
    assert len(expected) == 24
    assert all(row["ok"] for row in expected.values())
    assert rows(tmp_path / "ray.parquet.jsonl") == expected
    assert pyarrow.parquet.read_table(tmp_path / "ray.parquet").num_rows == 24


def test_parquet_in_on_ray_gives_the_local_rows(
    cluster: None, root: Path, settings: dict[str, str], tmp_path: Path
) -> None:
    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table(
        {"id": [f"p{i}" for i in range(24)], "text": [f"parquet {i % 7}" for i in range(24)]}
    )
    source = tmp_path / "in.parquet"
    pyarrow.parquet.write_table(table, source, row_group_size=8)
    local_run(root, source, tmp_path / "local.jsonl", settings)
    run_ray_batch(
        RayBatch(
            root=str(root),
            package="support",
            contract="classify",
            input=str(source),
            output=str(tmp_path / "ray.jsonl"),
            runtime="openai",
            actors=1,
            batch_size=8,
            env=settings,
        )
    )
    assert rows(tmp_path / "ray.jsonl") == rows(tmp_path / "local.jsonl")


def test_an_actor_refuses_a_package_with_another_identity(
    cluster: None, root: Path, settings: dict[str, str], server: Any, tmp_path: Path
) -> None:
    other = tmp_path / "worker-packages"
    shutil.copytree(root, other)
    contract = other / "support" / "contracts" / "classify.yaml"
    contract.write_text(contract.read_text().replace("Classify: ", "Ignore all rules: "))
    source = write_jsonl(tmp_path / "in.jsonl", 10, distinct=10)
    before = server.stats()["requests"]
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
    assert server.stats()["requests"] == before  # not one row ran
    assert not (tmp_path / "ray.jsonl").exists() or (tmp_path / "ray.jsonl").read_text() == ""


def test_an_actor_with_a_misconfigured_runtime_fails_once_before_any_row(
    cluster: None, root: Path, settings: dict[str, str], server: Any, tmp_path: Path
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", 10, distinct=10)
    before = server.stats()["requests"]
    incomplete = {k: v for k, v in settings.items() if k != "MODEL_ID"}
    with pytest.raises(Exception, match="TQX_RUNTIME_PERMANENT") as raised:
        run_ray_batch(
            RayBatch(
                root=str(root),
                package="support",
                contract="classify",
                input=str(source),
                output=str(tmp_path / "ray.jsonl"),
                runtime="openai",
                actors=1,
                env=incomplete,
            )
        )
    assert "MODEL_ID" in str(raised.value)
    assert server.stats()["requests"] == before
    assert not (tmp_path / "ray.jsonl").exists() or (tmp_path / "ray.jsonl").read_text() == ""


def test_the_driver_refuses_a_pinned_identity_it_does_not_find(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", 3, distinct=3)
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


def test_the_driver_refuses_a_csv_record_ray_cannot_read_as_a_table(
    root: Path, tmp_path: Path
) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text("id,text\na,one\nb,two,three\n")
    with pytest.raises(BatchFileError) as raised:
        run_ray_batch(
            RayBatch(
                root=str(root),
                package="support",
                contract="classify",
                input=str(source),
                output=str(tmp_path / "ray.jsonl"),
            )
        )
    assert raised.value.code == "TQX_BATCH_INPUT_INVALID"
    assert "record 1 (line 3)" in str(raised.value)
    assert "3 cells where the header has 2 columns" in str(raised.value)


def _result(index: int) -> bytes:
    return json.dumps({"index": index, "ok": True, "output": {"label": "x"}}).encode()


def test_the_claim_keeper_gives_each_request_one_owner_and_keeps_results_on_disk() -> None:
    """The keeper's logic, in this process (on Ray it is the same object, as an actor)."""

    async def main() -> None:
        keeper = ClaimKeeper()
        try:
            assert await keeper.claim("a") is True
            assert await keeper.claim("a") is False  # another actor is executing it
            waiting = asyncio.create_task(keeper.wait("a"))
            await asyncio.sleep(0.01)
            assert not waiting.done()
            await keeper.record("a", _result(0))
            waited = await waiting
            assert waited is not None
            assert json.loads(waited)["index"] == 0
            finished = await keeper.claim("a")
            assert isinstance(finished, bytes)
            assert json.loads(finished)["index"] == 0
            assert keeper._running == {}  # finished results are on disk only
            assert await keeper.claim("b") is True
            handed = asyncio.create_task(keeper.wait("b"))
            await asyncio.sleep(0.01)
            await keeper.release("b")  # its owner was cancelled: the waiter owns it now
            assert await handed is None
            assert await keeper.claim("b") is False
            assert await keeper.stats() == {"executed": 3, "running": 1}
        finally:
            await keeper.close()

    asyncio.run(main())


def test_a_claim_whose_owner_is_gone_is_taken_over(monkeypatch: pytest.MonkeyPatch) -> None:
    from templiqx_ray import claims

    monkeypatch.setattr(claims, "LEASE_S", 0.05)

    async def main() -> None:
        keeper = ClaimKeeper()
        try:
            assert await keeper.claim("a") is True
            assert await asyncio.wait_for(keeper.wait("a"), 5) is None
        finally:
            await keeper.close()

    asyncio.run(main())
