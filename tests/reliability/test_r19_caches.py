"""R19: caches count what they hold; long-running servers stay under 256 MiB.

Issue #29: the prepared-contract cache was bounded by source bytes while an 8 KB contract whose
aliases expanded kept ~64 MiB (63 distinct compiles over MCP: 4 GB, then ``TQX_INTERNAL``
``MemoryError``); the compiled-schema cache weighed msgpack bytes while jsonschema-rs validators
are ~140 times larger (1,000 read-only ``validate_contract`` calls on distinct 23 KB contracts:
2.5 GB kept); and refused contracts' schemas stayed cached (R9's scenario with enum-of-objects
schemas: peak 536 MiB, +458 MiB kept). Every cache now weighs its entries by a conservative
estimate of their memory, all of them share a process-wide ceiling (``MAX_CACHED_BYTES``,
128 MiB) and nothing is cached for a refused contract:

* in process: :data:`VALIDATIONS` distinct contracts with enum-of-objects schemas validated, and
  :data:`COMPILES` distinct node-heavy contracts compiled: the process keeps at most
  :data:`RETAINED_MIB` more than before, and the caches' weight stays under the ceiling;
* one real ``templiqx-mcp`` server: :data:`REFUSALS` refused ``put_contract`` calls with
  enum-of-objects schemas, then :data:`COMPILES` distinct node-heavy contracts stored and
  compiled: its resident set stays at most :data:`SERVER_CEILING_MIB`, and the refusals leave
  at most :data:`GROWTH_MIB` behind.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import reliability_kit as kit
from mcp_pipe import McpPipe, start

from templiqx_contracts.lru import cache_ceiling, cached_bytes
from templiqx_local import compose

SUITE = "R19"
VALIDATIONS = kit.scaled(150, 1000)
COMPILES = 63
REFUSALS = kit.scaled(60, 200)
RETAINED_MIB = 192.0
SERVER_CEILING_MIB = 256.0
GROWTH_MIB = 64.0


def enum_contract(index: int, valid: bool = True) -> str:
    """~23 KB: an output schema whose enum holds 700 distinct objects (a ~3 MB validator)."""
    members = ", ".join(f"{{k: {index}, v: {n}}}" for n in range(700))
    return (
        f"api_version: templiqx/v1alpha1\nid: enum{index}\n"
        f"version: {'1.0.0' if valid else 'not-semver'}\ncapabilities: [text]\n"
        "messages: [{role: user, content: [{kind: text, value: hi}]}]\n"
        f"output_schema: {{type: object, enum: [{members}]}}\n"
    )


def heavy_contract(index: int) -> str:
    """~100 KB and 30,000 values in its runtime policy: ~5 MB once loaded."""
    return (
        f"api_version: templiqx/v1alpha1\nid: heavy{index}\nversion: 1.0.0\n"
        "capabilities: [text]\n"
        "messages: [{role: user, content: [{kind: text, value: hi}]}]\n"
        "output_schema: {type: string}\n"
        f"runtime_policy:\n  call: {index}\n  junk: [" + ",".join(["{}"] * 30_000) + "]\n"
    )


@pytest.fixture(scope="module", autouse=True)
def _figures() -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "distinct contracts through the caches", ">=", VALIDATIONS + COMPILES)
    figures.expect(SUITE, "in-process memory kept afterwards", "<=", RETAINED_MIB, " MiB")
    figures.expect(SUITE, "largest cache weight over the ceiling", "==", 0, " MiB")
    figures.expect(SUITE, "server peak resident set", "<=", SERVER_CEILING_MIB, " MiB")
    figures.expect(SUITE, "server growth after the refusals", "<=", GROWTH_MIB, " MiB")
    figures.expect(SUITE, "calls answered wrongly", "==", 0)
    figures.expect(SUITE, "server tracebacks", "==", 0)


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for entry in status:
            if entry.startswith("VmRSS:"):
                return int(entry.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _over_ceiling() -> None:
    over = max(0, cached_bytes() - cache_ceiling()) / (1 << 20)
    kit.FIGURES.peak(SUITE, "largest cache weight over the ceiling", round(over, 1))
    assert over == 0


def test_in_process_caches_hold_what_they_count(tmp_path: Path) -> None:
    root = tmp_path / "root"
    package = kit.fresh_welcome(root)
    for index in range(VALIDATIONS):
        (package / "contracts" / f"enum{index}.yaml").write_text(enum_contract(index))
    for index in range(COMPILES):
        (package / "contracts" / f"heavy{index}.yaml").write_text(heavy_contract(index))
    service = compose(root)
    gc.collect()
    before = _rss_mib()
    for index in range(VALIDATIONS):
        envelope = service.validate_contract("welcome", f"enum{index}")
        kit.FIGURES.add(SUITE, "distinct contracts through the caches")
        if not envelope.ok:
            kit.FIGURES.add(SUITE, "calls answered wrongly")
        _over_ceiling()
    for index in range(COMPILES):
        envelope = service.compile_contract("welcome", f"heavy{index}", capabilities=["text"])
        kit.FIGURES.add(SUITE, "distinct contracts through the caches")
        if not envelope.ok:
            kit.FIGURES.add(SUITE, "calls answered wrongly")
        _over_ceiling()
    del envelope
    gc.collect()
    kept = _rss_mib() - before
    kit.FIGURES.peak(SUITE, "in-process memory kept afterwards", round(max(kept, 0.0), 1))
    kit.FIGURES.peak(
        SUITE,
        "cache weight held afterwards (context)",
        round(cached_bytes() / (1 << 20), 1),
        " MiB",
    )
    assert kit.FIGURES.get(SUITE, "calls answered wrongly") == 0
    assert kept <= RETAINED_MIB, f"kept {kept:.0f} MiB"


def _status_mib(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for entry in status:
            if entry.startswith(field + ":"):
                return int(entry.split()[1]) / 1024
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def _envelope(server: McpPipe, name: str, arguments: dict[str, object]) -> dict[str, object]:
    response = server.call(name, arguments, timeout=120.0)
    assert response is not None, f"{name}: no answer"
    assert "result" in response, f"{name}: {response}"
    envelope: dict[str, object] = response["result"]["structuredContent"]
    return envelope


def test_a_long_running_server_stays_under_its_ceiling(tmp_path: Path) -> None:
    figures = kit.FIGURES
    root = tmp_path / "root"
    kit.fresh_welcome(root)
    server = start(root, {}, tmp_path)
    pid = server.process.pid
    try:
        for index in range(3):  # warm-up: the allocator's arenas exist afterwards
            arguments = {
                "package": "welcome",
                "contract": "hostile",
                "source": enum_contract(-1 - index, valid=False),
            }
            assert _envelope(server, "put_contract", arguments)["ok"] is False
        warmed = _status_mib(pid, "VmRSS")
        for index in range(REFUSALS):
            arguments = {
                "package": "welcome",
                "contract": "hostile",
                "source": enum_contract(index, valid=False),
            }
            if _envelope(server, "put_contract", arguments)["ok"] is not False:
                figures.add(SUITE, "calls answered wrongly")
            figures.peak(SUITE, "server peak resident set", round(_status_mib(pid, "VmHWM"), 1))
        growth = _status_mib(pid, "VmRSS") - warmed
        figures.peak(SUITE, "server growth after the refusals", round(max(growth, 0.0), 1))
        figures.peak(SUITE, "server resident set after warm-up (context)", round(warmed, 1), " MiB")
        for index in range(COMPILES):
            contract = f"heavy{index}"
            stored = {"package": "welcome", "contract": contract, "source": heavy_contract(index)}
            compiled = {"package": "welcome", "contract": contract, "capabilities": ["text"]}
            if not _envelope(server, "put_contract", stored)["ok"]:
                figures.add(SUITE, "calls answered wrongly")
            if not _envelope(server, "compile_contract", compiled)["ok"]:
                figures.add(SUITE, "calls answered wrongly")
            figures.peak(SUITE, "server peak resident set", round(_status_mib(pid, "VmHWM"), 1))
        figures.peak(
            SUITE,
            "server resident set at the end (context)",
            round(_status_mib(pid, "VmRSS"), 1),
            " MiB",
        )
    finally:
        server.close(10.0)
    if b"Traceback" in server.stderr.read_bytes():
        figures.add(SUITE, "server tracebacks")
    assert figures.get(SUITE, "calls answered wrongly") == 0
    assert figures.get(SUITE, "server tracebacks") == 0
    assert growth <= GROWTH_MIB, f"the refusals left {growth:.0f} MiB"
    assert figures.get(SUITE, "server peak resident set") <= SERVER_CEILING_MIB
