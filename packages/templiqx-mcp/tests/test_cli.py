"""The command line: options, usage errors, a root that must exist, Ctrl-C and a closed pipe.

Every case runs ``python -m templiqx_mcp`` in an empty working directory, so "nothing created"
means the folder is still empty afterwards. The Ctrl-C cases run the server on a pseudo-terminal
(:func:`pty.fork`), so the terminal itself turns Ctrl-C into SIGINT and Ctrl-D into end of input.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from templiqx_mcp.cli import parser, setting_from

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "tty", "version": "1"},
    },
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPLIQX_")}
    env.update(extra)
    return env


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "templiqx_mcp", *args],
        input=b"",
        capture_output=True,
        cwd=cwd,
        env=_env(**env),
        timeout=60,
        check=False,
    )


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    folder = tmp_path / "cwd"
    folder.mkdir()
    return folder


def test_version_and_help_answer_without_composing(empty: Path) -> None:
    for flag in ("--version", "-V"):
        done = _run([flag], empty)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"templiqx-mcp 0.2.0\n", b"")
    helped = _run(["-h"], empty)
    assert helped.returncode == 0
    assert b"--lock-timeout SECONDS" in helped.stdout
    assert list(empty.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--foo"], {}, "unrecognized arguments: --foo"),
        (["--root"], {}, "argument --root: expected one argument"),
        ([], {}, "no packages root: pass --root DIR (or set TEMPLIQX_PACKAGES_ROOT)"),
        (["--root", "a", "b"], {}, "give the packages root once"),
        (["a", "b", "--workspace", "c"], {}, "give the workspace once"),
        (["a", "b", "c"], {}, "unrecognized arguments: c"),
        (["--lock-timeout", "0", "a"], {}, "argument --lock-timeout: must be more than 0"),
        (["--lock-timeout", "x", "a"], {}, "argument --lock-timeout: not a number of seconds"),
        (["--roo", "a"], {}, "unrecognized arguments: --roo"),  # no abbreviations
    ],
)
def test_usage_errors_exit_2_and_create_nothing(
    empty: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    done = _run(args, empty, **env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    stderr = done.stderr.decode()
    assert stderr.startswith("usage: templiqx-mcp ")
    assert f"templiqx-mcp: error: {message}" in stderr
    assert list(empty.iterdir()) == []


def test_a_missing_root_exits_1_and_is_never_created(empty: Path) -> None:
    for args, env in (
        (["--root", "packages"], {}),
        (["packages"], {}),
        ([], {"TEMPLIQX_PACKAGES_ROOT": "packages"}),
    ):
        done = _run(args, empty, **env)
        assert done.returncode == 1
        assert done.stdout == b""
        assert done.stderr.decode().startswith(
            "templiqx-mcp: compose local Templiqx service: invalid path: packages root "
            f"'{empty / 'packages'}' does not exist [TQX_PATH_INVALID]\n  help: "
        )
        assert list(empty.iterdir()) == []


def test_options_and_positionals_mean_the_same() -> None:
    cli = parser()
    by_option = setting_from(
        cli.parse_args(["--root", "/r", "--workspace", "/w", "--runtime", "mock"]), {}
    )
    by_position = setting_from(cli.parse_args(["/r", "/w"]), {"TEMPLIQX_RUNTIME": "mock"})
    assert by_option == by_position
    assert by_option.workspace_is_default is False
    default = setting_from(cli.parse_args([]), {"TEMPLIQX_PACKAGES_ROOT": "/r"})
    assert default.workspace_root == "/r/.templiqx-workspace"
    assert default.workspace_is_default is True
    assert default.runtime == "fake"


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {needle!r} in {seen[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closed: the child is gone
                break
            if not chunk:
                break
            seen += chunk
    return seen


def _sigint_default() -> None:
    """In a child, before exec: SIGINT's default disposition, as a terminal gives it (a test
    run started with ``nohup ... &`` has it ignored, and exec keeps an ignored signal so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _on_a_terminal(root: Path, keys: bytes) -> tuple[int, float, bytes]:
    """Start the server on a pty, initialize it, type ``keys``; (exit status, seconds, output)."""
    pid, master = pty.fork()
    if pid == 0:  # the child: the server, with the pty as its controlling terminal
        _sigint_default()
        os.execve(
            sys.executable,
            [sys.executable, "-m", "templiqx_mcp", "--root", str(root)],
            _env(),
        )
    status: int | None = None
    try:
        os.write(master, json.dumps(INITIALIZE).encode() + b"\n")
        output = _read_until(master, b'"serverInfo"', timeout=60)
        typed = time.monotonic()
        os.write(master, keys)
        while status is None and time.monotonic() < typed + 30:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
            elif select.select([master], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):  # the terminal closed as the server exited
                    output += os.read(master, 65536)
        assert status is not None, "the server did not exit"
        return status, time.monotonic() - typed, output
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)


def test_ctrl_c_on_a_terminal_exits_130_promptly(packages_root: Path) -> None:
    code, seconds, output = _on_a_terminal(packages_root, b"\x03")
    assert code == 130
    assert seconds < 5
    assert b"Traceback" not in output


def test_ctrl_d_on_a_terminal_ends_the_input(packages_root: Path) -> None:
    code, seconds, output = _on_a_terminal(packages_root, b"\x04")
    assert code == 0
    assert seconds < 5
    assert b"Traceback" not in output


def _pipe_server(root: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """A server on pipes, past its ``initialize``."""
    server = subprocess.Popen(
        [sys.executable, "-m", "templiqx_mcp", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=_env(),
        preexec_fn=_sigint_default,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    server.stdin.flush()
    assert b'"serverInfo"' in server.stdout.readline()
    return server


def test_sigint_exits_130_when_served_over_pipes(packages_root: Path, tmp_path: Path) -> None:
    server = _pipe_server(packages_root, tmp_path)
    started = time.monotonic()
    server.send_signal(signal.SIGINT)
    _, stderr = server.communicate(timeout=30)
    assert server.returncode == 130
    assert time.monotonic() - started < 5
    assert b"Traceback" not in stderr


def test_a_closed_pipe_ends_the_server_quietly(packages_root: Path, tmp_path: Path) -> None:
    server = _pipe_server(packages_root, tmp_path)
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdout.close()  # the client stops reading
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    for _ in range(3):  # the first answer that hits the closed pipe ends the server
        try:
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
        except BrokenPipeError:
            break
        time.sleep(0.2)
    assert server.wait(timeout=30) == 0
    assert server.stderr is not None
    stderr = server.stderr.read()
    assert b"Traceback" not in stderr
    assert b"Error" not in stderr
