"""``templiqx batch`` end to end (issue #31): the CLI as a subprocess, the OpenAI runtime against
the loopback model server (``model_server.py``, its own process).

kill -9 in the middle then ``--resume`` gives exactly the rows of an uninterrupted run; 429 with
retry-after backs off and finishes; permanent failures are never retried; Ctrl-C leaves a
resumable output; progress is a bar on a terminal and plain lines when piped; ``test
--dataset`` / ``run-eval --dataset`` score cases.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

CONTRACT = """\
api_version: templiqx/v1alpha1
id: classify
version: 1.0.0
inputs:
  text: {schema: {type: string, minLength: 1}, required: true}
capabilities: [structured_output]
messages:
  - role: system
    content:
      - {kind: text, value: "Classify the support ticket."}
  - role: user
    content:
      - {kind: interpolate, expression: {kind: ref, path: inputs.text}}
output_schema:
  type: object
  additionalProperties: false
  required: [label]
  properties: {label: {type: string}}
"""
MANIFEST = """\
api_version: templiqx/v1alpha1
package: support
version: 0.1.0
contracts: [classify]
"""


def _load_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location("batch_model_server", HERE / "model_server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


model_server = _load_server()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "packages" / "support"
    (folder / "contracts").mkdir(parents=True)
    (folder / "templiqx.yaml").write_text(MANIFEST)
    (folder / "contracts" / "classify.yaml").write_text(CONTRACT)
    return tmp_path / "packages"


def tickets(path: Path, count: int, *, distinct: int | None = None, prefix: str = "") -> Path:
    with open(path, "w") as handle:
        for i in range(count):
            text = f"{prefix}ticket number {i % (distinct or count)}"
            handle.write(json.dumps({"id": f"t{i}", "text": text}) + "\n")
    return path


def child_env(server: Any = None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPLIQX_", "MODEL_", "OPENAI_")) and k not in ("NO_COLOR", "TERM")
    }
    if server is not None:
        env.update(
            {"MODEL_BASE_URL": server.base_url, "MODEL_API_KEY": "sk-test", "MODEL_ID": "loop"}
        )
    env.update(extra)
    return env


def cli(root: Path, *args: str, runtime: str = "openai") -> list[str]:
    return [sys.executable, "-m", "templiqx_cli", "--root", str(root), "--runtime", runtime, *args]


def run(
    argv: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def results(path: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert row["index"] not in found, f"row {row['index']} written twice"
        found[row["index"]] = row
    return found


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("latency_ms", "source", "attempts")}


def wait_for_lines(path: Path, count: int, process: subprocess.Popen[str], limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        if process.poll() is not None:
            said = process.stderr.read() if process.stderr else ""
            pytest.fail(f"the batch ended before {count} rows: {said}")
        time.sleep(0.02)
    pytest.fail(f"fewer than {count} rows after {limit} s")


def test_kill_9_then_resume_gives_exactly_the_uninterrupted_rows(
    root: Path, tmp_path: Path
) -> None:
    source = tickets(tmp_path / "in.jsonl", 240)
    with model_server.ModelServer("--latency-ms", "25") as server:
        env = child_env(server)
        whole = run(
            cli(
                root,
                "batch",
                "support",
                "classify",
                "--input",
                str(source),
                "--output",
                str(tmp_path / "whole.jsonl"),
                "--concurrency",
                "8",
                "--progress",
                "none",
            ),
            env,
        )
        assert whole.returncode == 0, whole.stderr
        expected = results(tmp_path / "whole.jsonl")
        output = tmp_path / "out.jsonl"
        argv = cli(
            root,
            "batch",
            "support",
            "classify",
            "--input",
            str(source),
            "--output",
            str(output),
            "--concurrency",
            "4",
            "--progress",
            "none",
        )
        process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_for_lines(output, 60, process, limit=60)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        assert process.returncode == -signal.SIGKILL
        done_at_kill = len(output.read_text().splitlines())
        assert done_at_kill < 240
        before = server.stats()["requests"]
        resumed = run([*argv, "--resume"], env)
        assert resumed.returncode == 0, resumed.stderr
        after = server.stats()["requests"]
    rows = results(output)
    assert sorted(rows) == list(range(240))
    assert {i: comparable(r) for i, r in rows.items()} == {
        i: comparable(r) for i, r in expected.items()
    }
    # finished rows were not asked again: at most the rows left, never the ones written
    assert after - before <= 240 - done_at_kill
    summary = json.loads((tmp_path / "out.jsonl.summary.json").read_text())
    assert summary["rows"] == 240
    assert summary["skipped"] >= done_at_kill


def test_rate_limits_with_retry_after_back_off_and_finish(root: Path, tmp_path: Path) -> None:
    source = tickets(tmp_path / "in.jsonl", 80)
    with model_server.ModelServer(
        "--latency-ms", "40", "--max-in-flight", "3", "--retry-after-ms", "60"
    ) as server:
        done = run(
            cli(
                root,
                "--json",
                "batch",
                "support",
                "classify",
                "--input",
                str(source),
                "--output",
                str(tmp_path / "out.jsonl"),
                "--concurrency",
                "12",
                "--max-attempts",
                "40",
                "--progress",
                "none",
            ),
            child_env(server),
        )
        stats = server.stats()
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ok"] is True
    assert summary["rows"] == 80
    assert summary["rate_limited"] > 0
    assert summary["rate_limited"] == stats["by_status"]["429"]
    assert summary["concurrency"]["decreases"] >= 1
    assert summary["concurrency"]["lowest"] <= 6  # halved from 12 at least once
    assert stats["answered"] == 80
    rows = results(tmp_path / "out.jsonl")
    assert all(row["ok"] for row in rows.values())
    assert any(row["attempts"] > 1 for row in rows.values())


def test_permanent_failures_are_recorded_once_and_transient_ones_retried(
    root: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    lines = [{"text": "refuse me"}, {"text": "flaky one"}, {"text": "fine"}, {"text": "refuse me"}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with model_server.ModelServer(
        "--permanent-marker", "refuse", "--transient-marker", "flaky", "--transient-times", "2"
    ) as server:
        done = run(
            cli(
                root,
                "--json",
                "batch",
                "support",
                "classify",
                "--input",
                str(source),
                "--output",
                str(tmp_path / "out.jsonl"),
                "--progress",
                "none",
            ),
            child_env(server),
        )
        stats = server.stats()
    assert done.returncode == 2  # a row failed
    rows = results(tmp_path / "out.jsonl")
    assert rows[0]["diagnostics"][0]["code"] == "TQX_RUNTIME_PERMANENT"
    assert rows[0]["attempts"] == 1
    assert rows[3]["source"] == "duplicate"
    assert rows[1]["ok"] is True
    assert rows[1]["attempts"] == 3
    assert stats["by_status"] == {"400": 1, "503": 2, "200": 2}
    summary = json.loads(done.stdout)
    assert summary["by_code"] == {"TQX_RUNTIME_PERMANENT": 2}


def _sigint_default() -> None:
    """In the child, before exec: SIGINT's default disposition, as a terminal gives it (a test
    run started with ``nohup ... &`` has SIGINT ignored, and exec keeps an ignored signal so:
    the CLI would never see the SIGINT sent below)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_leaves_a_resumable_output(root: Path, tmp_path: Path) -> None:
    source = tickets(tmp_path / "in.jsonl", 120)
    output = tmp_path / "out.jsonl"
    with model_server.ModelServer("--latency-ms", "150") as server:
        env = child_env(server)
        argv = cli(
            root,
            "batch",
            "support",
            "classify",
            "--input",
            str(source),
            "--output",
            str(output),
            "--concurrency",
            "4",
            "--progress",
            "lines",
            "--progress-interval",
            "0.2",
        )
        process = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_sigint_default,
        )
        wait_for_lines(output, 8, process, limit=60)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stderr
        assert "--resume" in stdout
        interrupted = results(output)  # every line whole
        assert 8 <= len(interrupted) < 120
        resumed = run([*argv, "--resume"], env)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(results(output)) == list(range(120))


def _on_pty(argv: list[str], env: dict[str, str]) -> tuple[str, str, int]:
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=terminal, env=env)
        os.close(terminal)
        chunks = []
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(controller, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        assert process.stdout is not None
        stdout = process.stdout.read().decode()
        process.wait(timeout=60)
    finally:
        os.close(controller)
    return b"".join(chunks).decode(), stdout, process.returncode


def test_progress_is_a_bar_on_a_terminal_and_lines_when_piped(root: Path, tmp_path: Path) -> None:
    source = tickets(tmp_path / "in.jsonl", 40)
    with model_server.ModelServer("--latency-ms", "30") as server:
        env = child_env(server, TERM="xterm")
        argv = cli(
            root,
            "batch",
            "support",
            "classify",
            "--input",
            str(source),
            "--output",
            str(tmp_path / "tty.jsonl"),
            "--concurrency",
            "2",
        )
        screen, stdout, code = _on_pty(argv, env)
        assert code == 0, screen
        assert "\r\x1b[2K[" in screen  # redrawn in place
        assert "40/40" in screen
        assert "rows/s" in screen
        assert "✓ batch support/classify: 40 rows, 40 ok" in stdout
        piped = run(
            cli(
                root,
                "batch",
                "support",
                "classify",
                "--input",
                str(source),
                "--output",
                str(tmp_path / "piped.jsonl"),
                "--concurrency",
                "2",
                "--progress-interval",
                "0.1",
            ),
            env,
        )
    assert piped.returncode == 0
    lines = piped.stderr.splitlines()
    assert "\r" not in piped.stderr
    assert "\x1b" not in piped.stderr
    assert len(lines) >= 2  # periodic lines, then the last one
    assert lines[-1].startswith("templiqx batch: 40/40 rows (100%), ")
    assert "latency: p50" in piped.stdout


def test_output_exists_resume_mismatch_and_bad_mapping_are_usage_errors(
    root: Path, tmp_path: Path
) -> None:
    source = tickets(tmp_path / "in.jsonl", 3)
    args = [
        "batch",
        "support",
        "classify",
        "--input",
        str(source),
        "--output",
        str(tmp_path / "out.jsonl"),
        "--progress",
        "none",
    ]
    with model_server.ModelServer() as server:
        env = child_env(server)
        assert run(cli(root, *args), env).returncode == 0
        again = run(cli(root, *args), env)
        assert again.returncode == 2
        assert "TQX_BATCH_OUTPUT_EXISTS" in again.stderr
        tickets(source, 4)
        mismatch = run(cli(root, *args, "--resume"), env)
        assert mismatch.returncode == 2
        assert "TQX_BATCH_RESUME_MISMATCH" in mismatch.stderr
        bad = run(cli(root, *args, "--overwrite", "--map", "text"), env)
        assert bad.returncode == 2
        assert "TQX_BATCH_MAPPING_INVALID" in bad.stderr
        missing = run(
            cli(
                root,
                "batch",
                "support",
                "classify",
                "--input",
                str(tmp_path / "nope.jsonl"),
                "--output",
                str(tmp_path / "o.jsonl"),
            ),
            env,
        )
        assert missing.returncode == 1
        assert "TQX_BATCH_INPUT_INVALID" in missing.stderr


def test_test_and_run_eval_score_a_dataset(root: Path, tmp_path: Path) -> None:
    cases = tmp_path / "cases.csv"
    cases.write_text(
        "contract,text,output,expected\n"
        'classify,one,"{""label"":""a""}","{""label"":""a""}"\n'
        'classify,two,"{""label"":""b""}","{""label"":""a""}"\n'
    )
    mapping = ["--map", "output=output:json", "--map", "expected=expected:json"]
    env = child_env()
    scored = run(
        [
            *cli(
                root, "--json", "test", "support", "--dataset", str(cases), *mapping, runtime="fake"
            )
        ],
        env,
    )
    assert scored.returncode == 2, scored.stderr
    report = json.loads(scored.stdout)
    assert report["score"]["cases"] == 2
    assert report["score"]["passed"] == 1
    assert report["score"]["fields"] == {"label": {"matched": 1, "total": 2}}
    one = tmp_path / "one.csv"
    one.write_text('text,output,expected\none,"{""label"":""a""}","{""label"":""a""}"\n')
    written = run(
        [
            *cli(
                root,
                "run-eval",
                "support",
                "classify",
                "--dataset",
                str(one),
                "--output",
                str(tmp_path / "scored.jsonl"),
                *mapping,
                runtime="fake",
            )
        ],
        env,
    )
    assert written.returncode == 0, written.stderr
    assert "score: 1/1 passed (100.0%)" in written.stdout
    assert results(tmp_path / "scored.jsonl")[0]["eval"]["passed"] is True
    plain = run(cli(root, "run-eval", "support", "classify", runtime="fake"), env)
    assert plain.returncode == 2
    assert "FIXTURE_ID" in plain.stderr


def test_a_misconfigured_runtime_refuses_the_run_once_before_any_row(
    root: Path, tmp_path: Path
) -> None:
    """No MODEL_ID: one refusal naming it, no row run, no output left behind (the same
    command runs once the setting is given)."""
    source = tickets(tmp_path / "in.jsonl", 5)
    output = tmp_path / "out.jsonl"
    args = ["batch", "support", "classify", "--input", str(source), "--output", str(output)]
    with model_server.ModelServer() as server:
        env = child_env(server)
        del env["MODEL_ID"]
        refused = run(cli(root, *args, "--progress", "none"), env)
        assert refused.returncode == 2
        said = refused.stdout + refused.stderr
        assert [line for line in said.splitlines() if "TQX_RUNTIME_PERMANENT" in line] == [
            "  TQX_RUNTIME_PERMANENT: runtime failure TQX_RUNTIME_PERMANENT: runtime settings "
            "are missing or invalid: MODEL_ID is not set"
        ]
        assert server.stats()["requests"] == 0
        assert not output.exists()
        assert run(cli(root, *args, "--progress", "none"), child_env(server)).returncode == 0
        assert len(results(output)) == 5
