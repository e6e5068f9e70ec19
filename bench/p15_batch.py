"""P15: batch runs — throughput against a 50 ms model, memory against the dataset's size, Ray.

Three measurements (issue #31 item 7):

* **Throughput** (P15a at concurrency 16, P15b at 64): 2,000 distinct rows (JSONL) against the
  loopback model server (``tests/batch/model_server.py``, its own process, every answer after
  50 ms), run by ``templiqx_local.batch.run_batch_files`` — the path ``templiqx batch`` runs:
  dataset reader, the engine over the OpenAI runtime's async twin, the durable journal and the
  run's SQLite ledger — against a plain ``asyncio`` + ``AsyncOpenAI`` script at the same
  concurrency (a semaphore, ``chat.completions.create`` with the same ``response_format``, the
  answer parsed and written as a JSON line). Both sides run interleaved, round by round; the
  ratio is templiqx's time over the script's (target <= 1.11, i.e. >= 0.9x its throughput), and
  both are reported against the ideal, concurrency / latency rows a second. Every round checks
  its output: 2,000 ok rows whose labels are the server's.
* **Memory** (P15c): the peak resident set of ``templiqx batch`` (a fresh process, the
  deterministic fake answering each row's ``output``, so the model costs nothing) over 10,000
  and over 100,000 rows; the target is a ratio <= 1.2 (rows stream through).
* **Ray** (P15d): the same 2,000 rows through ``templiqx_ray.run_ray_batch`` on a local cluster
  (``ray.init`` with the machine's cores) with 1 and with 2 actors, concurrency 16 each:
  throughput reported, no target (actor start-up is part of each run).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
from corpus import ROOT
from harness import BenchmarkError, Comparison, Settings, Timing, check, peak_rss_of

__all__ = ["run"]

ROWS = 2_000
LATENCY_MS = 50
MEMORY_ROWS = (10_000, 100_000)
API_KEY = "bench-key"
MODEL = "loopback"
PACKAGE = "bench-batch"
CONTRACT = "classify"
THROUGHPUT_TARGET = 1 / 0.9
MEMORY_TARGET = 1.2

_SOURCE = """\
api_version: templiqx/v1alpha1
id: classify
version: 1.0.0
capabilities: [structured_output]
inputs:
  text: {schema: {type: string, minLength: 1}, required: true}
messages:
  - role: system
    content:
      - {kind: text, value: "Label the support ticket."}
  - role: user
    content:
      - {kind: interpolate, expression: {kind: ref, path: inputs.text}}
output_schema:
  type: object
  additionalProperties: false
  required: [label]
  properties:
    label: {type: string}
"""
_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["label"],
    "properties": {"label": {"type": "string"}},
}


def _server_module() -> ModuleType:
    path = ROOT / "tests" / "batch" / "model_server.py"
    spec = importlib.util.spec_from_file_location("p15_model_server", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _package(root: Path) -> Path:
    folder = root / PACKAGE
    if not folder.exists():
        (folder / "contracts").mkdir(parents=True)
        (folder / "contracts" / f"{CONTRACT}.yaml").write_text(_SOURCE)
        (folder / "templiqx.yaml").write_text(
            f"api_version: templiqx/v1alpha1\npackage: {PACKAGE}\nversion: 0.1.0\n"
            f"contracts: [{CONTRACT}]\n"
        )
    return root


def _dataset(path: Path, rows: int, *, with_output: bool = False) -> Path:
    with open(path, "w") as handle:
        for i in range(rows):
            record: dict[str, Any] = {"id": f"t{i}", "text": f"ticket {i}: my invoice is wrong"}
            if with_output:
                record["output"] = {"label": "billing"}
            handle.write(json.dumps(record) + "\n")
    return path


# --- the two sides ------------------------------------------------------------------------


def _templiqx(root: Path, source: Path, output: Path, base_url: str, concurrency: int) -> float:
    from templiqx_application.batch import BatchOptions
    from templiqx_local import compose
    from templiqx_local.batch import BatchFiles, RunState, run_batch_files
    from templiqx_runtime_openai import OpenAIRuntime, OpenAISettings

    output.unlink(missing_ok=True)
    RunState.remove(output.with_name(output.name + ".tqx-batch"))
    runtime = OpenAIRuntime(
        OpenAISettings(base_url=base_url, api_key=API_KEY, model=MODEL, timeout_ms=120_000)
    )
    service = compose(root, runtime=runtime)
    started = time.perf_counter()
    outcome = run_batch_files(
        service,
        BatchFiles(
            package=PACKAGE,
            contract=CONTRACT,
            input=source,
            output=output,
            options=BatchOptions(concurrency=concurrency),
        ),
    )
    elapsed = time.perf_counter() - started
    service.close()
    runtime.close()
    check(outcome.summary.succeeded == ROWS, f"templiqx: {outcome.summary.by_code}")
    labels = [json.loads(line)["output"]["label"] for line in output.read_text().splitlines()]
    check(len(labels) == ROWS and all(len(label) == 12 for label in labels), "templiqx labels")
    return elapsed


async def _script(source: Path, output: Path, base_url: str, concurrency: int) -> None:
    """What a user writes without templiqx: a semaphore around AsyncOpenAI."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=120)
    limit = asyncio.Semaphore(concurrency)
    response_format: Any = {
        "type": "json_schema",
        "json_schema": {"name": "classify", "schema": _SCHEMA, "strict": True},
    }

    async def one(record: dict[str, Any], sink: Any) -> None:
        async with limit:
            answer = await client.chat.completions.create(
                model=MODEL,
                messages=[
                    {"role": "system", "content": "Label the support ticket."},
                    {"role": "user", "content": record["text"]},
                ],
                response_format=response_format,
            )
        content = answer.choices[0].message.content or "{}"
        sink.write(json.dumps({"id": record["id"], "output": json.loads(content)}) + "\n")

    records = [json.loads(line) for line in source.read_text().splitlines()]
    with open(output, "w") as sink:
        await asyncio.gather(*(one(record, sink) for record in records))
    await client.close()


def _sdk(source: Path, output: Path, base_url: str, concurrency: int) -> float:
    started = time.perf_counter()
    asyncio.run(_script(source, output, base_url, concurrency))
    elapsed = time.perf_counter() - started
    labels = [json.loads(line)["output"]["label"] for line in output.read_text().splitlines()]
    check(len(labels) == ROWS and all(len(label) == 12 for label in labels), "script labels")
    return elapsed


def _throughput(settings: Settings, concurrency: int, row_id: str) -> Comparison:
    row = Comparison(
        id=row_id,
        what=f"batch of {ROWS:,} rows, concurrency {concurrency}, 50 ms model (loopback)",
        baseline=f"asyncio + AsyncOpenAI script, concurrency {concurrency}",
        target=round(THROUGHPUT_TARGET, 3),
        unit="s/batch",
    )
    scratch = settings.scratch / f"p15-{concurrency}"
    scratch.mkdir(parents=True, exist_ok=True)
    root = _package(scratch / "packages")
    source = _dataset(scratch / "rows.jsonl", ROWS)
    ours: list[float] = []
    theirs: list[float] = []
    ratios: list[float] = []
    rounds = settings.rounds(3, quick=1)
    with _server_module().ModelServer("--latency-ms", str(LATENCY_MS)) as server:
        _templiqx(root, source, scratch / "warm.jsonl", server.base_url, concurrency)  # warm-up
        for _ in range(rounds):
            mine = _templiqx(root, source, scratch / "out.jsonl", server.base_url, concurrency)
            other = _sdk(source, scratch / "sdk.jsonl", server.base_url, concurrency)
            ours.append(mine)
            theirs.append(other)
            ratios.append(mine / other)
    row.record(Timing(ours), Timing(theirs), ratios)
    ideal = concurrency / (LATENCY_MS / 1000)
    mine_rate = ROWS / Timing(ours).median
    their_rate = ROWS / Timing(theirs).median
    row.metrics = {
        "rows_per_s": round(mine_rate, 1),
        "script_rows_per_s": round(their_rate, 1),
        "ideal_rows_per_s": round(ideal, 1),
        "of_ideal": round(mine_rate / ideal, 3),
        "script_of_ideal": round(their_rate / ideal, 3),
        "throughput_vs_script": round(mine_rate / their_rate, 3),
    }
    return row


# --- memory --------------------------------------------------------------------------------


def _memory(settings: Settings) -> Comparison:
    row = Comparison(
        id="P15c",
        what="peak RSS of templiqx batch, 100,000 rows over 10,000 (fake runtime)",
        baseline="the same command over 10,000 rows",
        target=MEMORY_TARGET,
        unit="bytes",
        memory_kind="rss",
    )
    scratch = settings.scratch / "p15-memory"
    scratch.mkdir(parents=True, exist_ok=True)
    root = _package(scratch / "packages")
    peaks: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for rows in MEMORY_ROWS:
        source = _dataset(scratch / f"rows-{rows}.jsonl", rows, with_output=True)
        output = scratch / f"out-{rows}.jsonl"
        for leftover in scratch.glob(f"out-{rows}.jsonl*"):
            leftover.unlink()
        argv = [
            sys.executable, "-m", "templiqx_cli", "--root", str(root), "batch", PACKAGE,
            CONTRACT, "--input", str(source), "--output", str(output), "--concurrency", "64",
            "--progress", "none", "--json",
        ]  # fmt: skip
        started = time.perf_counter()
        peaks[rows] = peak_rss_of(argv)
        seconds[rows] = time.perf_counter() - started
        written = output.read_text().count("\n")
        check(written == rows, f"{written} results for {rows} rows")
    small, large = (peaks[n] for n in MEMORY_ROWS)
    row.subject_peak_memory = large
    row.baseline_peak_memory = small
    row.ratio = large / small
    row.rounds = 1
    row.metrics = {
        "peak_rss_10k": small,
        "peak_rss_100k": large,
        "seconds_10k": round(seconds[MEMORY_ROWS[0]], 1),
        "seconds_100k": round(seconds[MEMORY_ROWS[1]], 1),
    }
    return row


# --- Ray -----------------------------------------------------------------------------------


def _ray(settings: Settings) -> Comparison:
    row = Comparison(
        id="P15d",
        what=f"Ray pipeline, {ROWS:,} rows, 50 ms model: 2 actors over 1 (16 calls each)",
        baseline="the same pipeline with 1 actor",
        target=None,
        unit="s/batch",
    )
    os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_agent_register_timeout_ms", "600000")
    import ray

    from templiqx_ray import RayBatch, run_ray_batch

    scratch = settings.scratch / "p15-ray"
    scratch.mkdir(parents=True, exist_ok=True)
    root = _package(scratch / "packages")
    source = _dataset(scratch / "rows.jsonl", ROWS)
    began = time.perf_counter()
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False)
    started_in = time.perf_counter() - began
    times: dict[int, float] = {}
    try:
        with _server_module().ModelServer("--latency-ms", str(LATENCY_MS)) as server:
            env = {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": API_KEY, "MODEL_ID": MODEL}
            for actors in (1, 2):
                output = scratch / f"out-{actors}.jsonl"
                for leftover in scratch.glob(f"out-{actors}.jsonl*"):
                    leftover.unlink()
                started = time.perf_counter()
                outcome = run_ray_batch(
                    RayBatch(
                        root=str(root),
                        package=PACKAGE,
                        contract=CONTRACT,
                        input=str(source),
                        output=str(output),
                        runtime="openai",
                        actors=actors,
                        concurrency=16,
                        batch_size=250,
                        env=env,
                    )
                )
                times[actors] = time.perf_counter() - started
                check(outcome.summary.succeeded == ROWS, f"ray: {outcome.summary.by_code}")
    finally:
        ray.shutdown()
    row.record(Timing([times[2]]), Timing([times[1]]), [times[2] / times[1]])
    row.metrics = {
        "rows_per_s_1_actor": round(ROWS / times[1], 1),
        "rows_per_s_2_actors": round(ROWS / times[2], 1),
        "ideal_rows_per_s_1_actor": 16 / (LATENCY_MS / 1000),
        "ray_init_s": round(started_in, 1),
    }
    return row


def run(settings: Settings) -> list[Comparison]:
    rows = [_throughput(settings, 16, "P15a"), _throughput(settings, 64, "P15b")]
    rows.append(_memory(settings))
    try:
        rows.append(_ray(settings))
    except (BenchmarkError, ImportError, RuntimeError) as exc:
        failed = Comparison(id="P15d", what="Ray pipeline", baseline="-", target=None)
        failed.error = f"{type(exc).__name__}: {exc}"
        rows.append(failed)
    shutil.rmtree(settings.scratch / "p15-memory", ignore_errors=True)
    return rows
