"""Batch runs between files (issue #31): datasets, mapping, the durable journal, resuming,
the run ledger, the result cache, Parquet in and out (and without pyarrow)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_application import DeterministicFakeRuntime, TempliqxService
from templiqx_application.batch import BatchOptions, BatchResult
from templiqx_contracts import ExecutionReceipt, ExecutionRequest
from templiqx_local import compose
from templiqx_local.batch import (
    BatchFileError,
    BatchFiles,
    ColumnMapping,
    ResultJournal,
    RunState,
    SqliteResultCache,
    open_dataset,
    output_paths,
    run_batch_files,
)

CONTRACT = """\
api_version: templiqx/v1alpha1
id: label
version: 1.0.0
inputs:
  text: {schema: {type: string, minLength: 1}, required: true}
  vip: {schema: {type: boolean}}
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {kind: text, value: "Label: "}
      - {kind: interpolate, expression: {kind: ref, path: inputs.text}}
      - kind: when
        condition: {kind: ref, path: inputs.vip}
        then:
          - {kind: text, value: " (a VIP customer)"}
output_schema:
  type: object
  required: [label]
  properties: {label: {type: string}}
"""
MANIFEST = """\
api_version: templiqx/v1alpha1
package: app
version: 0.1.0
contracts: [label]
"""


class Counting(DeterministicFakeRuntime):
    """The fake, counting the requests it answers."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        self.calls.append(str(request.interaction.messages[-1].content))
        return super().execute(request)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "packages" / "app"
    (folder / "contracts").mkdir(parents=True)
    (folder / "templiqx.yaml").write_text(MANIFEST)
    (folder / "contracts" / "label.yaml").write_text(CONTRACT)
    return tmp_path / "packages"


def service(root: Path, runtime: DeterministicFakeRuntime | None = None) -> TempliqxService:
    return compose(root, runtime=runtime)


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def dataset(n: int, *, vip_every: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "id": f"t{i}",
            "text": f"ticket {i % 40}",
            "vip": bool(vip_every) and i % vip_every == 0,
            "output": {"label": f"L{i % 40}"},
        }
        for i in range(n)
    ]


def read_results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def files(tmp_path: Path, source: Path, **changes: Any) -> BatchFiles:
    return BatchFiles(
        package="app", contract="label", input=source, output=tmp_path / "out.jsonl", **changes
    )


# --- datasets and mapping ----------------------------------------------------------------------


def test_jsonl_rows_flat_shaped_and_broken(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": 7, "text": "a"}\n'
        "\n"
        '{"inputs": {"text": "b"}, "context": {"c": 1}, "id": "x", "expected": null}\n'
        "not json\n"
        "[1, 2]\n"
    )
    data = open_dataset(source)
    rows = list(data)
    assert data.count() == 4
    assert [r.index for r in rows] == [0, 1, 2, 3]
    assert rows[0].inputs == {"text": "a"}
    assert rows[0].id == "7"
    assert rows[1].inputs == {"text": "b"}
    assert rows[1].context == {"c": 1}
    assert rows[1].expected is None
    assert rows[2].problem is not None
    assert rows[2].problem.code == "TQX_BATCH_ROW_INVALID"
    assert rows[3].problem is not None
    assert "not list" in rows[3].problem.message


def test_csv_rows_are_text_unless_mapped(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text(
        "ticket,body,seats,tier,gold\r\n"
        't1,"hello, world",3,gold,"{""label"":""x""}"\r\n'
        "t2,,x,,\r\n"
        "t3,extra,1,a,b,c\r\n"
    )
    mapping = [
        "ticket=id",
        "body=inputs.text",
        "seats=inputs.seats:int",
        "tier=context.user.tier",
        "gold=expected:json",
    ]
    rows = list(open_dataset(source, mapping=mapping))
    assert rows[0].id == "t1"
    assert rows[0].inputs == {"text": "hello, world", "seats": 3}
    assert rows[0].context == {"user": {"tier": "gold"}}
    assert rows[0].expected == {"label": "x"}
    assert rows[1].problem is not None  # "x" is not an int
    assert "seats" in rows[1].problem.message
    assert rows[2].problem is not None  # more cells than columns
    assert open_dataset(source).count() == 3


def test_csv_empty_cells_are_absent(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("text,note\nhello,\n")
    (row,) = open_dataset(source)
    assert row.inputs == {"text": "hello"}
    (kept,) = open_dataset(source, mapping=["note=inputs.note:str"])
    assert kept.inputs == {"text": "hello", "note": ""}


@pytest.mark.parametrize(
    "spec",
    ["no-equals", "a=outputs", "a=inputs.", "a=inputs.x:decimal", "=inputs.x"],
)
def test_bad_mappings_are_named(spec: str) -> None:
    with pytest.raises(BatchFileError) as raised:
        ColumnMapping.parse([spec])
    assert raised.value.code == "TQX_BATCH_MAPPING_INVALID"
    assert raised.value.help


def test_a_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BatchFileError) as raised:
        open_dataset(tmp_path / "missing.jsonl")
    assert raised.value.code == "TQX_BATCH_INPUT_INVALID"
    odd = tmp_path / "data.txt"
    odd.write_text("x")
    with pytest.raises(BatchFileError, match="extension") as raised:
        open_dataset(odd)
    assert "--input-format" in str(raised.value.help)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(BatchFileError, match="no header"):
        list(open_dataset(empty))


def test_parquet_rows_keep_their_types(tmp_path: Path) -> None:
    import datetime

    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table(
        {
            "id": ["a", "b"],
            "text": ["one", "two"],
            "seats": [1, 2],
            "day": [datetime.date(2026, 1, 2), None],
        }
    )
    source = tmp_path / "in.parquet"
    pyarrow.parquet.write_table(table, source)
    data = open_dataset(source, mapping=["day=context.day"])
    assert data.count() == 2
    rows = list(data)
    assert rows[0].inputs == {"text": "one", "seats": 1}
    assert rows[0].context == {"day": "2026-01-02"}
    assert rows[1].context == {"day": None}


def test_without_pyarrow_parquet_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.parquet"
    source.write_bytes(b"PAR1")
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(BatchFileError) as raised:
        open_dataset(source)
    assert raised.value.code == "TQX_BATCH_PARQUET_UNAVAILABLE"
    assert "pip install 'templiqx-local[parquet]'" in str(raised.value.help)
    jsonl = write_jsonl(tmp_path / "in.jsonl", [{"text": "a"}])
    with pytest.raises(BatchFileError) as raised:
        run_batch_files(
            compose(tmp_path),
            BatchFiles(package="app", contract="label", input=jsonl, output=tmp_path / "o.parquet"),
        )
    assert raised.value.code == "TQX_BATCH_PARQUET_UNAVAILABLE"
    assert not (tmp_path / "o.parquet").exists()


# --- the journal -------------------------------------------------------------------------------


def _result(index: int) -> BatchResult:
    return BatchResult(index=index, ok=True, output={"n": index}, source="executed")


def test_the_journal_cuts_a_torn_tail_and_refuses_a_corrupt_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    journal = ResultJournal(path)
    for index in (0, 2, 1):
        journal.append(_result(index))
    journal.close()
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"index": 3, "ok": tr')
    again = ResultJournal(path)
    assert again.cut_bytes == len(b'{"index": 3, "ok": tr')
    assert sorted(i for i in range(5) if i in again.done) == [0, 1, 2]
    assert [r.index for r in again.results()] == [0, 2, 1]
    again.close()
    assert path.read_bytes() == whole
    path.write_bytes(b"garbage\n" + whole)
    with pytest.raises(BatchFileError) as raised:
        ResultJournal(path)
    assert raised.value.code == "TQX_BATCH_OUTPUT_CORRUPT"


def test_one_output_one_writer(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    first = ResultJournal(path)
    with pytest.raises(BatchFileError) as raised:
        ResultJournal(path)
    assert raised.value.code == "TQX_BUSY"
    first.close()
    ResultJournal(path).close()


# --- whole runs --------------------------------------------------------------------------------


def test_a_run_writes_one_result_per_row_and_a_summary(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(100))
    runtime = Counting()
    outcome = run_batch_files(service(root, runtime), files(tmp_path, source))
    results = read_results(tmp_path / "out.jsonl")
    assert sorted(r["index"] for r in results) == list(range(100))
    assert len(runtime.calls) == 40  # 40 distinct requests
    assert outcome.summary.by_source == {"duplicate": 60, "executed": 40}
    report = json.loads((tmp_path / "out.jsonl.summary.json").read_text())
    assert report["rows"] == 100
    assert report["total_rows"] == 100
    assert report["ok"] is True
    assert set(results[0]) == {
        "index", "id", "contract", "request_fingerprint", "ok", "output", "diagnostics",
        "usage", "latency_ms", "attempts", "source", "eval",
    }  # fmt: skip


def test_an_existing_output_is_never_overwritten_by_accident(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(5))
    run_batch_files(service(root), files(tmp_path, source))
    before = (tmp_path / "out.jsonl").read_bytes()
    with pytest.raises(BatchFileError) as raised:
        run_batch_files(service(root), files(tmp_path, source))
    assert raised.value.code == "TQX_BATCH_OUTPUT_EXISTS"
    assert (tmp_path / "out.jsonl").read_bytes() == before
    outcome = run_batch_files(service(root), files(tmp_path, source, overwrite=True))
    assert outcome.written == 5
    assert len(read_results(tmp_path / "out.jsonl")) == 5


def test_resume_finishes_a_cut_run_exactly(root: Path, tmp_path: Path) -> None:
    records = dataset(120)
    source = write_jsonl(tmp_path / "in.jsonl", records)
    whole = tmp_path / "whole"
    whole.mkdir()
    run_batch_files(service(root), files(whole, source))
    expected = sorted(read_results(whole / "out.jsonl"), key=lambda r: r["index"])
    run_batch_files(service(root), files(tmp_path, source))
    output = tmp_path / "out.jsonl"
    data = output.read_bytes()
    output.write_bytes(data[: len(data) // 2 + 7])  # as if killed half way, mid-line
    runtime = Counting()
    outcome = run_batch_files(service(root, runtime), files(tmp_path, source, resume=True))
    results = sorted(read_results(output), key=lambda r: r["index"])
    assert [r["index"] for r in results] == list(range(120))

    def comparable(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k not in ("latency_ms", "source", "attempts")}

    assert [comparable(r) for r in results] == [comparable(r) for r in expected]
    # the cut rows' requests were all finished before: the ledger answers, nothing is re-run
    assert runtime.calls == []
    assert outcome.cut_bytes > 0
    assert outcome.previously_done > 0
    assert outcome.summary.rows == 120
    assert outcome.summary.skipped == outcome.previously_done


def test_resume_refuses_a_different_run(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(5))
    run_batch_files(service(root), files(tmp_path, source))
    write_jsonl(source, dataset(6))
    with pytest.raises(BatchFileError) as raised:
        run_batch_files(service(root), files(tmp_path, source, resume=True))
    assert raised.value.code == "TQX_BATCH_RESUME_MISMATCH"
    assert "input" in str(raised.value)
    write_jsonl(source, dataset(5))
    with pytest.raises(BatchFileError, match="mapping"):
        run_batch_files(
            service(root), files(tmp_path, source, resume=True, mapping=["text=inputs.text"])
        )
    contract = root / "app" / "contracts" / "label.yaml"
    contract.write_text(contract.read_text().replace("Label: ", "Label it: "))
    with pytest.raises(BatchFileError, match="package_identity"):
        run_batch_files(service(root), files(tmp_path, source, resume=True))


def test_resume_without_an_output_starts_one(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(3))
    outcome = run_batch_files(service(root), files(tmp_path, source, resume=True))
    assert outcome.written == 3


def test_the_cache_reexecutes_only_the_requests_an_edit_changed(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(40, vip_every=4))
    cache = tmp_path / "cache.db"
    first = Counting()
    run_batch_files(service(root, first), files(tmp_path, source, cache=cache))
    assert len(first.calls) == 40
    contract = root / "app" / "contracts" / "label.yaml"
    contract.write_text(contract.read_text().replace("(a VIP customer)", "(VIP)"))
    second = Counting()
    outcome = run_batch_files(
        service(root, second), files(tmp_path, source, cache=cache, overwrite=True)
    )
    assert len(second.calls) == 10  # the VIP rows: their messages changed
    assert all("(VIP)" in call for call in second.calls)
    assert outcome.summary.by_source == {"cache": 30, "executed": 10}
    assert SqliteResultCache(cache).get("templiqx.fake/0.2.0", "nope") is None


def test_the_ledger_answers_a_finished_request_after_a_crash(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(3))
    run_batch_files(service(root), files(tmp_path, source))
    paths = output_paths(files(tmp_path, source))
    state = RunState(paths.state)
    assert state.header() is not None
    state.close()
    paths.journal.write_text("")  # every line lost, the ledger kept
    runtime = Counting()
    run_batch_files(service(root, runtime), files(tmp_path, source, resume=True))
    assert runtime.calls == []
    assert len(read_results(paths.journal)) == 3


def test_parquet_output_holds_the_journal(root: Path, tmp_path: Path) -> None:
    import pyarrow.parquet

    source = write_jsonl(tmp_path / "in.jsonl", dataset(30))
    out = tmp_path / "out.parquet"
    run_batch_files(
        service(root),
        BatchFiles(package="app", contract="label", input=source, output=out),
    )
    table = pyarrow.parquet.read_table(out)
    journal = read_results(tmp_path / "out.parquet.jsonl")
    assert table.num_rows == 30
    rows = {row["index"]: row for row in table.to_pylist()}
    for line in journal:
        row = rows[line["index"]]
        assert row["ok"] == line["ok"]
        assert row["request_fingerprint"] == line["request_fingerprint"]
        assert msgspec.json.decode(row["output"]) == line["output"]


def test_a_refused_run_leaves_no_output(root: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", dataset(3))
    contract = root / "app" / "contracts" / "label.yaml"
    text = contract.read_text()
    contract.write_text(text.replace("then:", "than:"))
    broken = run_batch_files(service(root), files(tmp_path, source))
    assert {d.code for d in broken.summary.diagnostics} == {"TQX_PARSE_YAML"}
    assert not (tmp_path / "out.jsonl").exists()
    assert not (tmp_path / "out.jsonl.tqx-batch").exists()
    contract.write_text(text)  # fixed: the same command now runs
    assert run_batch_files(service(root), files(tmp_path, source)).written == 3
    (tmp_path / "out.jsonl").unlink()
    RunState.remove(tmp_path / "out.jsonl.tqx-batch")
    outcome = run_batch_files(
        service(root),
        BatchFiles(
            package="app",
            contract="label",
            input=source,
            output=tmp_path / "out.jsonl",
            options=BatchOptions(package_identity="0" * 64),
        ),
    )
    assert [d.code for d in outcome.summary.diagnostics] == ["TQX_BATCH_IDENTITY_MISMATCH"]
    assert not (tmp_path / "out.jsonl").exists()


def test_an_eval_dataset_is_scored(root: Path, tmp_path: Path) -> None:
    cases = [
        {"text": "a", "vip": False, "output": {"label": "x"}, "expected": {"label": "x"}},
        {"text": "b", "vip": True, "output": {"label": "y"}, "expected": {"label": "x"}},
    ]
    source = write_jsonl(tmp_path / "cases.jsonl", cases)
    outcome = run_batch_files(
        service(root), files(tmp_path, source, options=BatchOptions(evaluate=True))
    )
    score = outcome.summary.score
    assert score is not None
    assert (score.passed, score.failed) == (1, 1)
    assert [
        r["eval"]["passed"]
        for r in sorted(read_results(tmp_path / "out.jsonl"), key=lambda r: r["index"])
    ] == [True, False]
