"""R9: a long-running MCP server stays under a memory ceiling while it is fed hostile contracts.

Issue #18 item 2: the ``validate_contract`` result cache (256 entries) and the compiled-schema
cache (1,024) were keyed by the whole msgpack document, so four 1 MB ``put_contract`` calls
left a long-running MCP server at 2.4 GB for good. Here one real ``templiqx-mcp`` process
(``python -m templiqx_mcp ROOT`` over raw pipes) receives :data:`CALLS` hostile
``put_contract`` calls, each different from the last so no cache can hit: string alias bombs
past ``MAX_EXPANDED_BYTES``, contracts holding 15 MB of aliased text just under it, 8 MiB
documents, contracts whose schemas are 1 MB each, and billion laughs. Every call must be
answered with a refusal; the server's resident set is read from ``/proc/<pid>/status``.

Ceilings: the server's peak resident set (``VmHWM``, over its whole life) at most
:data:`PEAK_CEILING_MIB`, and its resident set after the calls at most
:data:`GROWTH_CEILING_MIB` above the warmed-up server's.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import reliability_kit as kit
from mcp_pipe import McpPipe, start

SUITE = "R9"
CALLS = kit.scaled(40, 100)
PEAK_CEILING_MIB = 256.0
GROWTH_CEILING_MIB = 64.0
MEGABYTE = 1_000_000

HEADER = "api_version: templiqx/v1alpha1\nid: hostile\nversion: {version}\n"
MESSAGE = "  - {role: user, content: [{kind: text, value: *s}]}\n"


def _text(index: int, size: int = MEGABYTE) -> str:
    stamp = f"call{index}-"
    return stamp + "y" * (size - len(stamp))


def alias_bomb(index: int) -> str:
    """1 MB of text aliased 1,000 times: refused while reading."""
    return (
        HEADER.format(version="1.0.0")
        + f"description: &s {_text(index)}\nmessages:\n{MESSAGE * 1000}"
        + "output_schema: {type: string}\n"
    )


def near_budget(index: int) -> str:
    """15 MB of aliased text, just under the budget; read, validated and refused (version)."""
    return (
        HEADER.format(version="not-semver")
        + f"description: &s {_text(index)}\ncapabilities: [text]\nmessages:\n{MESSAGE * 14}"
        + "output_schema: {type: string}\n"
    )


def big_document(index: int) -> str:
    """One 8 MB string, under MAX_DOCUMENT_BYTES; read, validated and refused."""
    return (
        HEADER.format(version="not-semver")
        + f"description: {_text(index, 8 * MEGABYTE)}\n"
        + "messages: [{role: user, content: [{kind: text, value: hi}]}]\n"
        + "output_schema: {type: string}\n"
    )


def big_schemas(index: int) -> str:
    """Three distinct 1 MB schemas: compiled (the schema cache) and refused."""
    fields = "".join(
        f"  f{n}: {{schema: {{type: string, description: {_text(index * 10 + n)}}}}}\n"
        for n in range(3)
    )
    return (
        HEADER.format(version="not-semver")
        + f"inputs:\n{fields}"
        + "messages: [{role: user, content: [{kind: text, value: hi}]}]\n"
        + "output_schema: {type: string}\n"
    )


def laughs(index: int) -> str:
    lines = [f"l0: &l0 [{', '.join([f'lol{index}'] * 10)}]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, 9)]
    return "\n".join(lines) + "\n"


KINDS: list[Callable[[int], str]] = [alias_bomb, near_budget, big_document, big_schemas, laughs]


def _status_mib(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for entry in status:
            if entry.startswith(field + ":"):
                return int(entry.split()[1]) / 1024
    raise AssertionError(f"{field} not in /proc/{pid}/status")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[McpPipe]:
    root = tmp_path / "root"
    kit.fresh_welcome(root)
    running = start(root, {}, tmp_path)
    try:
        yield running
    finally:
        running.close(5.0)


@pytest.fixture(autouse=True)
def _figures() -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "hostile put_contract calls", ">=", CALLS)
    figures.expect(SUITE, "calls not answered with a refusal", "==", 0)
    figures.expect(SUITE, "server peak resident set", "<=", PEAK_CEILING_MIB, " MiB")
    figures.expect(SUITE, "resident-set growth after the calls", "<=", GROWTH_CEILING_MIB, " MiB")
    figures.expect(SUITE, "server tracebacks", "==", 0)


def _put(server: McpPipe, source: str) -> list[str]:
    arguments = {"package": "welcome", "contract": "hostile", "source": source}
    response = server.call("put_contract", arguments, timeout=60.0)
    if response is None or "result" not in response:
        return []
    envelope = response["result"].get("structuredContent") or {}
    if envelope.get("ok") is not False:
        return []
    return [d["code"] for d in envelope.get("diagnostics", []) if d["severity"] == "error"]


def test_memory_stays_under_the_ceiling(server: McpPipe) -> None:
    figures = kit.FIGURES
    pid = server.process.pid
    for index, kind in enumerate(KINDS * 2):  # warm-up: every kind twice
        assert _put(server, kind(-1 - index)), f"warm-up {kind.__name__} was not refused"
    warmed = _status_mib(pid, "VmRSS")
    for index in range(CALLS):
        kind = KINDS[index % len(KINDS)]
        codes = _put(server, kind(index))
        figures.add(SUITE, "hostile put_contract calls")
        if not codes or not all(kit.CODE.fullmatch(code) for code in codes):
            figures.add(SUITE, "calls not answered with a refusal")
        figures.peak(SUITE, "server peak resident set", round(_status_mib(pid, "VmHWM"), 1))
    growth = _status_mib(pid, "VmRSS") - warmed
    figures.peak(SUITE, "resident-set growth after the calls", round(max(growth, 0.0), 1))
    figures.peak(SUITE, "resident set after warm-up (context)", round(warmed, 1), " MiB")
    assert server.wait_for(server.request("ping"), 10.0) is not None
    assert server.close(10.0) == 0
    if b"Traceback" in server.stderr.read_bytes():
        figures.add(SUITE, "server tracebacks")
    assert figures.get(SUITE, "calls not answered with a refusal") == 0
    assert figures.get(SUITE, "server peak resident set") <= PEAK_CEILING_MIB
    assert growth <= GROWTH_CEILING_MIB, f"grew {growth:.0f} MiB"
    assert figures.get(SUITE, "server tracebacks") == 0


def test_the_memory_reading_sees_a_planted_allocation(tmp_path: Path) -> None:
    script = "import sys, time; b = bytearray(200 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"
    script += "; print('ready', flush=True); time.sleep(30)"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        assert _status_mib(process.pid, "VmHWM") >= 200
        assert _status_mib(process.pid, "VmRSS") >= 200
    finally:
        process.kill()
        process.wait()
