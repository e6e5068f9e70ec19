"""P5: 1,000 ``compile_contract`` calls through the MCP server against the same SDK doing nothing.

Subject: ``python -m templiqx_mcp ROOT WORKSPACE`` over stdio, driven by the official ``mcp``
client (one initialized session, calls awaited one after another). Baseline (P5, issue #33):
``mcp_minimal_server.py``, a low-level server on the same SDK listing the same tools and
answering every call with the very result ``templiqx-mcp`` gave (checked equal, field for
field) without doing any work — so the ratio is what templiqx-mcp adds beyond its SDK, the
compile included. Reported beside it (P5i): the same 1,000 calls on a ``TempliqxService``
composed over the same root in this process. The three sides run once per round, the order
rotated each round. Both compile the
reference ``bli-62`` contract with its recorded request; both keep the contract's load between
calls (prepared contracts) and re-read its files each call to notice edits, as the server
does. Before timing, the MCP result's structured envelope is checked to equal the in-process
envelope.

Memory: the server's own peak RSS (``VmHWM`` while it runs) and, for the in-process side, the
peak Python heap of one batch.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from harness import (
    BenchmarkError,
    Comparison,
    Settings,
    Timing,
    check,
    peak_python_memory,
)
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from templiqx_application import TempliqxService
from templiqx_local import compose

__all__ = ["run"]

PACKAGE = "crm3"
CONTRACT = "bli-62-document-drafting"
CAPABILITIES = ["structured_output"]
CALLS = 1000


def _arguments(reference: Path) -> dict[str, Any]:
    request = json.loads((reference / "crm3/evals/bli-62-request.json").read_text("utf-8"))
    return {
        "package": PACKAGE,
        "contract": CONTRACT,
        "inputs": request["inputs"],
        "context": request["context"],
        "capabilities": CAPABILITIES,
    }


def _in_process(service: TempliqxService, arguments: dict[str, Any], calls: int) -> None:
    for _ in range(calls):
        envelope = service.compile_contract(
            PACKAGE,
            CONTRACT,
            inputs=arguments["inputs"],
            context=arguments["context"],
            capabilities=CAPABILITIES,
        )
        if not envelope.ok:
            raise BenchmarkError(f"in-process compile_contract failed: {envelope.diagnostics}")


async def _over_mcp(session: ClientSession, arguments: dict[str, Any], calls: int) -> None:
    for _ in range(calls):
        result = await session.call_tool("compile_contract", arguments)
        data = result.structured_content
        if result.is_error or not isinstance(data, dict) or data.get("ok") is not True:
            raise BenchmarkError(f"compile_contract over MCP failed: {result.content}")


def _server_pids() -> list[int]:
    """Our child processes running the MCP server (to read their memory while they run)."""
    found = []
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if ppid == me and b"templiqx_mcp" in cmdline:
            found.append(int(entry.name))
    return found


def _vm_hwm(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


async def _measure(
    settings: Settings, row: Comparison, in_process: Comparison, wire_row: Comparison
) -> None:
    reference, scratch = settings.reference, settings.scratch
    arguments = _arguments(reference)
    service = compose(reference, scratch / "p5-workspace-local")
    expected = service.compile_contract(
        PACKAGE,
        CONTRACT,
        inputs=arguments["inputs"],
        context=arguments["context"],
        capabilities=CAPABILITIES,
    )
    check(expected.ok, f"in-process compile_contract failed: {expected.diagnostics}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPLIQX_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "templiqx_mcp", str(reference), str(scratch / "p5-workspace-mcp")],
        env=env,
        cwd=str(scratch),
    )
    answers = scratch / "p5-minimal-answers.json"
    script = str(Path(__file__).with_name("mcp_minimal_server.py"))
    minimal = StdioServerParameters(
        command=sys.executable, args=[script, str(answers)], env=env, cwd=str(scratch)
    )
    minimal_wire = StdioServerParameters(
        command=sys.executable, args=[script, str(answers), "templiqx"], env=env, cwd=str(scratch)
    )
    calls = 100 if settings.quick else CALLS
    with (scratch / "p5-server.log").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            first = await session.call_tool("compile_contract", arguments)
            check(
                not first.is_error and first.structured_content == expected.to_builtins(),
                "compile_contract over MCP returned a different envelope than in-process:\n"
                f"{first.structured_content}",
            )
            answers.write_text(
                json.dumps({"tools": _dump(tools), "result": _dump(first)}), encoding="utf-8"
            )
            async with (
                stdio_client(minimal, errlog=errlog) as (floor_read, floor_write),
                ClientSession(floor_read, floor_write) as floor,
                stdio_client(minimal_wire, errlog=errlog) as (wire_read, wire_write),
                ClientSession(wire_read, wire_write) as wired,
            ):
                for other in (floor, wired):
                    await other.initialize()
                    check(
                        _dump(await other.list_tools()) == _dump(tools)
                        and _dump(await other.call_tool("compile_contract", arguments))
                        == _dump(first),
                        "the minimal SDK server does not answer what templiqx-mcp answers",
                    )
                await _over_mcp(session, arguments, 50)  # warm-up
                await _over_mcp(floor, arguments, 50)
                await _over_mcp(wired, arguments, 50)
                _in_process(service, arguments, 50)
                ours: list[float] = []
                sdk: list[float] = []
                sdk_wire: list[float] = []
                local: list[float] = []
                sides = ("mcp", "minimal", "wire", "local")
                for index in range(settings.rounds(7, 2)):
                    shift = index % len(sides)
                    for side in sides[shift:] + sides[:shift]:
                        start = time.perf_counter()
                        if side == "mcp":
                            await _over_mcp(session, arguments, calls)
                            ours.append((time.perf_counter() - start) / calls)
                        elif side == "minimal":
                            await _over_mcp(floor, arguments, calls)
                            sdk.append((time.perf_counter() - start) / calls)
                        elif side == "wire":
                            await _over_mcp(wired, arguments, calls)
                            sdk_wire.append((time.perf_counter() - start) / calls)
                        else:
                            _in_process(service, arguments, calls)
                            local.append((time.perf_counter() - start) / calls)
                pids = _server_pids()
                peaks = [peak for pid in pids if (peak := _vm_hwm(pid)) is not None]
                row.subject_peak_memory = in_process.subject_peak_memory = (
                    max(peaks) if peaks else None
                )
    wire_row.record(
        Timing(ours), Timing(sdk_wire), [a / b for a, b in zip(ours, sdk_wire, strict=True)]
    )
    wire_row.metrics["overhead_over_it_ms"] = round(
        (statistics.median(ours) - statistics.median(sdk_wire)) * 1e3, 3
    )
    row.record(Timing(ours), Timing(sdk), [a / b for a, b in zip(ours, sdk, strict=True)])
    in_process.record(
        Timing(ours), Timing(local), [a / b for a, b in zip(ours, local, strict=True)]
    )
    in_process.baseline_peak_memory = peak_python_memory(
        lambda: _in_process(service, arguments, 100)
    )
    for target in (row, in_process):
        target.metrics["calls_per_round"] = calls
        target.metrics["mcp_calls_per_s"] = round(1 / statistics.median(ours), 1)
    row.metrics["overhead_over_sdk_ms"] = round(
        (statistics.median(ours) - statistics.median(sdk)) * 1e3, 3
    )
    row.metrics["in_process_compile_ms"] = round(statistics.median(local) * 1e3, 3)


def run(settings: Settings) -> list[Comparison]:
    row = Comparison(
        id="P5",
        what="1,000 compile_contract via templiqx-mcp (stdio)",
        baseline="minimal server, same mcp SDK, same answer, no work",
        target=1.3,
        memory_kind="server max RSS",
    )
    in_process = Comparison(
        id="P5i",
        what="the same calls via templiqx-mcp",
        baseline="same calls in-process",
        target=None,
        memory_kind="server max RSS / in-process Python heap",
    )
    wire_row = Comparison(
        id="P5w",
        what="the same calls via templiqx-mcp",
        baseline="the minimal server over templiqx-mcp's own stdio wire",
        target=None,
        memory_kind="server max RSS",
    )
    anyio.run(_measure, settings, row, in_process, wire_row)
    return [row, wire_row, in_process]


_RAW = ("--format", "raw", "-o")


async def _spy_on_server(settings: Settings, seconds: int) -> Path:
    """Call compile_contract over MCP while py-spy samples the server; the raw samples file."""
    arguments = _arguments(settings.reference)
    out = settings.scratch / "p5-server-py-spy.txt"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "templiqx_mcp", str(settings.reference), str(settings.scratch / "p5-spy")],
        cwd=str(settings.scratch),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await _over_mcp(session, arguments, 50)
        (pid,) = _server_pids()
        spy_bin = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
        spy = subprocess.Popen(
            [
                spy_bin,
                "record",
                "-p",
                str(pid),
                "-d",
                str(seconds),
                "-r",
                "500",
                "--gil",
                *_RAW,
                str(out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        while spy.poll() is None:
            await _over_mcp(session, arguments, 20)
        if spy.returncode != 0 or not out.exists():
            assert spy.stderr is not None
            raise BenchmarkError(f"py-spy failed: {spy.stderr.read().decode(errors='replace')}")
    return out


def _summarise(samples: Path, top: int = 40) -> None:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in samples.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = [
            frame.split(":")[0] + ")" if ":" in frame else frame for frame in stack.split(";")
        ]
        total += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            inclusive[frame] += int(count)
    print(f"MCP server, samples holding the GIL: {total}")
    for title, counter in (("own", own), ("inclusive", inclusive)):
        print(f"\n{title}:")
        for frame, count in counter.most_common(top):
            print(f"{count / total:7.1%}  {frame}")


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """The server side: py-spy samples the MCP server (GIL holders only) during calls."""
    return lambda: _summarise(anyio.run(_spy_on_server, settings, 8))
