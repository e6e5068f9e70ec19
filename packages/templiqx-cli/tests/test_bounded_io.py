"""Every file the CLI reads is read with a bound, and output that cannot be written ends in one line
(issue #18 items 5 and 6).

Regressions: ``--values /dev/zero`` ended in a raw ``MemoryError`` traceback, a 300 MB
``--values`` file cost 8 s and 622 MB before the limit refused it, and ``templiqx catalog
>/dev/full`` or a closed stdout printed full tracebacks with venv paths.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from templiqx_cli import main
from templiqx_cli.inputs import (
    MAX_JSON_BYTES,
    MAX_SOURCE_BYTES,
    MAX_VALUES_BYTES,
    CliError,
    read_json,
    read_text,
    read_values,
)

CONTRACT = "account-digest"
VALUES = '{"inputs": {"account": "Acme", "open_tickets": 2}}'


def test_the_limits() -> None:
    assert MAX_SOURCE_BYTES == 8 * 1024 * 1024
    assert MAX_JSON_BYTES == 8 * 1024 * 1024
    assert MAX_VALUES_BYTES == 16 * 1024 * 1024


def _one_line(error: CliError) -> str:
    text = error.render()
    assert "\n" not in text
    assert text.endswith("[TQX_DATA_INVALID]")
    return text


@pytest.mark.parametrize(
    ("read", "name"),
    [
        (read_values, "MAX_VALUES_BYTES"),
        (read_json, "MAX_JSON_BYTES"),
        (read_text, "MAX_SOURCE_BYTES"),
    ],
)
def test_dev_zero_is_refused_at_the_limit(read: object, name: str) -> None:
    started = time.perf_counter()
    with pytest.raises(CliError) as raised:
        read("/dev/zero")  # type: ignore[operator]
    assert time.perf_counter() - started < 1.0
    assert f"({name}); pass a smaller file" in _one_line(raised.value)


def test_a_huge_regular_file_is_refused_from_its_size(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as out:
        out.truncate(300_000_000)  # sparse: costs neither disk nor memory
    started = time.perf_counter()
    with pytest.raises(CliError) as raised:
        read_values(str(huge))
    assert time.perf_counter() - started < 0.1  # not read at all
    assert "the file is 300000000 bytes, more than the 16777216-byte limit" in _one_line(
        raised.value
    )


def test_the_limit_is_exact(tmp_path: Path) -> None:
    source = tmp_path / "source.yaml"
    source.write_bytes(b"a" * MAX_SOURCE_BYTES)
    assert len(read_text(str(source))) == MAX_SOURCE_BYTES
    source.write_bytes(b"a" * (MAX_SOURCE_BYTES + 1))
    with pytest.raises(CliError, match="MAX_SOURCE_BYTES"):
        read_text(str(source))


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _feed(path: Path, data: bytes, repeat: int = 1) -> threading.Thread:
    def write() -> None:
        try:
            with path.open("wb") as out:
                for _ in range(repeat):
                    out.write(data)
        except BrokenPipeError:
            pass  # the reader stopped at its limit

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_read_with_the_same_bound(fifo: Path) -> None:
    writer = _feed(fifo, VALUES.encode())
    assert read_values(str(fifo)) == {"inputs": {"account": "Acme", "open_tickets": 2}}
    writer.join(5)
    writer = _feed(fifo, b" " * 1_000_000, repeat=100)  # 100 MB of spaces, endlessly fed
    with pytest.raises(CliError, match="MAX_VALUES_BYTES"):
        read_values(str(fifo))
    writer.join(5)


def test_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(VALUES.encode())))
    assert read_values("-") == {"inputs": {"account": "Acme", "open_tickets": 2}}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * (MAX_SOURCE_BYTES + 1))))
    with pytest.raises(CliError) as raised:
        read_text("-")
    assert _one_line(raised.value).startswith("templiqx: read standard input: the input holds")
    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(CliError, match="standard input: it is closed"):
        read_text("-")


def test_put_reads_its_source_from_standard_input(
    packages_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (packages_root / "welcome" / "contracts" / f"{CONTRACT}.yaml").read_text()
    copy = source.replace(f"id: {CONTRACT}", "id: copy")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(copy.encode())))
    assert main(["--json", "--root", str(packages_root), "put", "welcome", "copy", "-"]) == 0
    assert (packages_root / "welcome" / "contracts" / "copy.yaml").is_file()
    capsys.readouterr()


def test_values_from_dev_zero_is_one_line_and_exit_1(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--root", str(packages_root), "compile", "welcome", CONTRACT, "--values", "/dev/zero"]
    assert main(argv) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        "templiqx: read /dev/zero: the input holds more than the 16777216-byte limit "
        "(MAX_VALUES_BYTES); pass a smaller file [TQX_DATA_INVALID]\n"
    )


# --- output errors (real processes: the failures are on the process's own descriptors) -------


def _templiqx(*args: str, **popen: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "templiqx_cli", *args],
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
        **popen,
    )


def _single_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text
    assert text.count("\n") == 1, text
    return text


@pytest.mark.parametrize(
    "args", [("catalog",), ("--json", "catalog"), ("validate", "welcome")], ids=str
)
def test_a_full_disk_is_one_line_and_exit_1(packages_root: Path, args: tuple[str, ...]) -> None:
    with open("/dev/full", "wb") as full:
        done = _templiqx("--root", str(packages_root), *args, stdout=full)
    assert done.returncode == 1
    assert _single_line(done.stderr) == (
        "templiqx: write standard output: No space left on device (os error 28)\n"
    )


def test_a_reader_that_went_away_is_one_line_and_exit_1(packages_root: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write gets EPIPE
    try:
        done = _templiqx("--root", str(packages_root), "validate", "welcome", stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert (
        _single_line(done.stderr) == "templiqx: write standard output: Broken pipe (os error 32)\n"
    )


def test_a_closed_stdout_is_one_line_and_exit_1(packages_root: Path) -> None:
    root = str(packages_root)
    command = [sys.executable, "-m", "templiqx_cli", "--root", root, "put", "welcome", "x", "-"]
    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" >&-', "sh", *command],
        stderr=subprocess.PIPE,
        input=b"never read",
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    text = _single_line(done.stderr)
    assert text == "templiqx: standard output is closed; nothing was run\n"
    assert not (packages_root / "welcome" / "contracts" / "x.yaml").exists()
