"""P9: ``templiqx-mcp`` cold start, to ``initialize`` answered and to ``tools/list`` answered.

An MCP client (an IDE, an agent) starts the server as a child process and waits for it to answer
``initialize`` before it offers any tool; a slow start is a slow first turn. Measured from
spawning the ``templiqx-mcp`` console script (a fresh process over a copy of the example
package) to reading its ``initialize`` result on stdout (P9i), and on to reading the result of
the ``tools/list`` sent right after the ``initialized`` notification (P9l). The messages are
written to the pipe straight after spawning, as a client does, so the server reads them as soon
as it can. The baseline is ``python -c "import mcp"``: importing the official SDK the server is
built on, a floor no server on that SDK goes below (the SDK's own ``mcp`` package imports its
client, server and types).

Before timing, one run is checked: the ``initialize`` result names the server and a protocol
version, and ``tools/list`` lists exactly one tool per catalog operation. Every timed run checks
that both answers are results with the right ids. Peak memory: the server's ``VmHWM`` read after
``tools/list`` is answered, and the baseline's max RSS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from corpus import ROOT
from harness import (
    BenchmarkError,
    Comparison,
    Settings,
    Timing,
    check,
    peak_rss_of,
    run_process,
)
from mcp.types import LATEST_PROTOCOL_VERSION

from templiqx_application import CATALOG

__all__ = ["run"]

PACKAGE = "welcome"


def _message(payload: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **payload}).encode("utf-8") + b"\n"


INITIALIZE = _message(
    {
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "templiqx-bench", "version": "0"},
        },
    }
)
INITIALIZED = _message({"method": "notifications/initialized"})
TOOLS_LIST = _message({"id": 2, "method": "tools/list", "params": {}})


def _script() -> str:
    script = shutil.which("templiqx-mcp", path=str(Path(sys.executable).parent))
    if script is None:
        raise BenchmarkError(
            f"the templiqx-mcp console script is not installed beside {sys.executable}"
        )
    return script


def _environment(scratch: Path) -> dict[str, str]:
    """No templiqx settings; byte-compiled modules cached in scratch (as after an install)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TEMPLIQX_") and key != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "p9-pycache")
    return env


def _answer(stdout: IO[bytes], request_id: int) -> dict[str, Any]:
    """The next JSON-RPC response on ``stdout`` (notifications before it are skipped)."""
    while True:
        line = stdout.readline()
        if not line:
            raise BenchmarkError(f"templiqx-mcp closed its stdout before answering {request_id}")
        message: dict[str, Any] = json.loads(line)
        if "id" not in message:
            continue
        if message.get("id") != request_id or "result" not in message:
            raise BenchmarkError(f"templiqx-mcp answered {request_id} with {line[:300]!r}")
        return message["result"]  # type: ignore[no-any-return]


class _Start:
    """One cold start: seconds to each answer, the answers and the server's peak memory."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        log = Path(cwd) / "p9-server.log"  # a file: a full stderr pipe would stall the server
        with log.open("wb") as errors:
            self._run(argv, env, cwd, errors)
        self.stderr = log.read_bytes()

    def _run(self, argv: list[str], env: dict[str, str], cwd: str, errors: IO[bytes]) -> None:
        started = time.perf_counter()
        server = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env, cwd=cwd
        )
        assert server.stdin is not None
        assert server.stdout is not None
        try:
            server.stdin.write(INITIALIZE)
            server.stdin.flush()
            self.initialize = _answer(server.stdout, 1)
            self.to_initialize = time.perf_counter() - started
            server.stdin.write(INITIALIZED + TOOLS_LIST)
            server.stdin.flush()
            self.tools = _answer(server.stdout, 2)
            self.to_tools = time.perf_counter() - started
            self.peak_memory = _vm_hwm(server.pid)
        finally:
            server.stdin.close()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            server.stdout.close()


def _vm_hwm(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _verify(start: _Start) -> None:
    info = start.initialize.get("serverInfo") or {}
    check(
        isinstance(info.get("name"), str)
        and isinstance(start.initialize.get("protocolVersion"), str),
        f"initialize answered without serverInfo/protocolVersion: {start.initialize}",
    )
    names = sorted(tool["name"] for tool in start.tools.get("tools", []))
    check(
        names == sorted(spec.name for spec in CATALOG),
        f"tools/list listed {names}, not the catalog's operations",
    )


def run(settings: Settings) -> list[Comparison]:
    scratch = settings.scratch
    root = scratch / "p9-root"
    shutil.copytree(ROOT / "fixtures" / "packages" / PACKAGE, root / PACKAGE)
    env = _environment(scratch)
    cwd = str(scratch)
    argv = [_script(), str(root), str(scratch / "p9-workspace")]
    baseline = [sys.executable, "-c", "import mcp"]

    def base_once() -> float:
        done = run_process(baseline, env=env, cwd=cwd)
        if done.code != 0:
            raise BenchmarkError(f"python -c 'import mcp' exited {done.code}: {done.stderr!r}")
        return done.seconds

    first = _Start(argv, env, cwd)  # also fills the bytecode cache
    _verify(first)
    base_once()

    base: list[float] = []
    to_initialize: list[float] = []
    to_tools: list[float] = []
    peaks: list[int] = []
    for index in range(settings.rounds(11, 3)):
        if index % 2:
            base.append(base_once())
        start = _Start(argv, env, cwd)
        to_initialize.append(start.to_initialize)
        to_tools.append(start.to_tools)
        if start.peak_memory is not None:
            peaks.append(start.peak_memory)
        if not index % 2:
            base.append(base_once())

    rows = []
    base_memory = max(peak_rss_of(baseline, env=env, cwd=cwd) for _ in range(3))
    for row_id, what, samples in (
        ("P9i", "templiqx-mcp cold start to initialize answered", to_initialize),
        ("P9l", "templiqx-mcp cold start to tools/list answered", to_tools),
    ):
        row = Comparison(
            id=row_id,
            what=what,
            baseline='python -c "import mcp"',
            target=None,
            memory_kind="server VmHWM after tools/list / max RSS of the baseline",
        )
        row.record(
            Timing(samples), Timing(base), [a / b for a, b in zip(samples, base, strict=True)]
        )
        row.subject_peak_memory = max(peaks) if peaks else None
        row.baseline_peak_memory = base_memory
        rows.append(row)
    return rows


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """Start-up is imports: the slowest of the server's, from ``python -X importtime``."""
    root = settings.scratch / "p9-root"
    shutil.copytree(ROOT / "fixtures" / "packages" / PACKAGE, root / PACKAGE)
    env = _environment(settings.scratch)
    argv = [sys.executable, "-X", "importtime", _script(), str(root), str(settings.scratch / "w")]

    def importtime() -> None:
        _Start(argv, env, str(settings.scratch))  # fills the bytecode cache
        start = _Start(argv, env, str(settings.scratch))
        rows = [
            line.split("|")
            for line in start.stderr.decode().splitlines()
            if line.startswith("import time:") and "cumulative" not in line
        ]
        rows.sort(key=lambda cells: -int(cells[1]))
        print(f"initialize answered after {start.to_initialize * 1000:.0f} ms (with -X importtime)")
        print("cumulative us | module")
        for cells in rows[:30]:
            print(f"{int(cells[1]):>13} | {cells[2].rstrip()}")

    return importtime
