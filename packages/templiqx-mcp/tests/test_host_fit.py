"""What an agent host needs (issue #16): small answers, bounded waits, no starvation, no writes.

Each test starts its own server: with the official client where the question is what a client
sees, with the raw driver where the question is the bytes on the wire.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from templiqx_application import CATALOG

FIVE_MB = 5_000_000
SMALL_RESULT = 4096  # bytes of one JSON-RPC answer line


@contextmanager
def held_lock(root: Path, package: str) -> Iterator[None]:
    """The package's lock held by "another process" (an independent ``flock``)."""
    folder = root / ".templiqx-package-locks"
    folder.mkdir(exist_ok=True)
    fd = os.open(folder / f"{package}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _tree(folder: Path) -> dict[str, tuple[float, int] | None]:
    return {
        str(path.relative_to(folder)): None
        if path.is_dir()
        else (path.stat().st_mtime, path.stat().st_size)
        for path in sorted(folder.rglob("*"))
    }


def test_error_results_for_a_5mb_bad_source_stay_small(served: Any, packages_root: Path) -> None:
    server = served
    sources = {
        1: "x" * FIVE_MB,  # one plain string
        2: '"' + "y" * FIVE_MB + '"',  # one quoted string
        3: "id: welcome\ndescription: [" + "z" * FIVE_MB,  # broken YAML
    }
    for request_id, source in sources.items():
        server.call(
            request_id, "put_contract", {"package": "welcome", "contract": "big", "source": source}
        )
    for request_id in sources:
        reply = server.answer(request_id, timeout=120)
        size = len(json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode())
        assert size < SMALL_RESULT, (request_id, size)
        envelope = reply["result"]["structuredContent"]
        assert envelope["ok"] is False
        expected = "TQX_PARSE_YAML" if request_id == 3 else "TQX_PARSE_WRONG_TYPE"
        assert envelope["diagnostics"][0]["code"] == expected
    server.call(
        9,
        "compile_contract",
        {
            "package": "welcome",
            "contract": "account-digest",
            "inputs": {"account": ["v" * FIVE_MB], "open_tickets": 1},
            "capabilities": ["text"],
        },
    )
    value = server.answer(9, timeout=120)
    assert len(json.dumps(value).encode()) < SMALL_RESULT
    (diagnostic,) = value["result"]["structuredContent"]["diagnostics"]
    assert diagnostic["code"] == "TQX_VALUE_SCHEMA"


def test_annotations_follow_the_runtime(open_session: Any, packages_root: Path) -> None:
    scenario = packages_root / "welcome" / "scenarios" / "stream-vip" / "manifest.json"
    found: dict[str, Any] = {}

    async def drive() -> None:
        for runtime, env in (
            ("fake", {}),
            ("mock", {"TEMPLIQX_RUNTIME": "mock", "TEMPLIQX_MOCK_SCENARIO": str(scenario)}),
        ):
            async with open_session("--root", str(packages_root), env=env) as session:
                found[runtime] = {t.name: t.annotations for t in (await session.list_tools()).tools}

    anyio.run(drive)
    for spec in CATALOG:
        for runtime in ("fake", "mock"):  # both offline: replayed or given answers
            hints = found[runtime][spec.name]
            assert hints.read_only_hint is spec.read_only
            assert hints.destructive_hint is spec.destructive
            assert hints.idempotent_hint is spec.idempotent
            assert hints.open_world_hint is False, (runtime, spec.name)
    writes = {name for name, hints in found["fake"].items() if not hints.read_only_hint}
    assert writes == {
        "create_package",
        "update_package",
        "delete_package",
        "sign_package",
        "put_contract",
        "delete_contract",
        "delete_workspace_artifact",
    }


def test_a_lock_held_elsewhere_ends_in_a_busy_diagnostic(
    open_session: Any, packages_root: Path
) -> None:
    envelopes: dict[str, Any] = {}

    async def drive() -> None:
        async with open_session("--root", str(packages_root), "--lock-timeout", "0.3") as session:
            identity = await session.call_tool("export_package_identity", {"package": "welcome"})
            token = identity.structured_content["fingerprints"]["manifest"]
            with held_lock(packages_root, "welcome"):
                started = time.monotonic()
                busy = await session.call_tool(
                    "update_package",
                    {"package": "welcome", "expected_fingerprint": token, "version": "9.9.9"},
                )
                envelopes["seconds"] = time.monotonic() - started
                envelopes["busy"] = busy.structured_content
            retried = await session.call_tool(
                "update_package",
                {"package": "welcome", "expected_fingerprint": token, "version": "9.9.9"},
            )
            envelopes["retried"] = retried.structured_content

    anyio.run(drive)
    busy = envelopes["busy"]
    assert busy["ok"] is False
    (diagnostic,) = busy["diagnostics"]
    assert diagnostic["code"] == "TQX_BUSY"
    assert diagnostic["message"].startswith("busy: 'welcome' is locked by another writer")
    assert "retry" in diagnostic["help"]
    assert 0.3 <= envelopes["seconds"] < 10
    assert envelopes["retried"]["ok"] is True


def test_one_stuck_package_does_not_hold_up_the_others(
    open_session: Any, packages_root: Path
) -> None:
    shutil.copytree(packages_root / "welcome", packages_root / "other")
    manifest = packages_root / "other" / "templiqx.yaml"
    manifest.write_text(manifest.read_text().replace("package: welcome", "package: other"))
    timings: dict[str, Any] = {}

    async def drive() -> None:
        async with open_session("--root", str(packages_root), "--lock-timeout", "20") as session:
            with held_lock(packages_root, "welcome"):
                async with anyio.create_task_group() as group:
                    for index in range(24):  # more than the whole pool of worker threads
                        group.start_soon(
                            session.call_tool,
                            "put_contract",
                            {"package": "welcome", "contract": f"c{index}", "source": "id: x\n"},
                        )
                    await anyio.sleep(0.5)  # the writes are queued and blocked on the lock
                    started = time.monotonic()
                    other = await session.call_tool("validate_package", {"package": "other"})
                    listed = await session.call_tool("discover_packages", {})
                    timings["other"] = time.monotonic() - started
                    timings["ok"] = (
                        other.structured_content["ok"],
                        listed.structured_content["ok"],
                    )
                    group.cancel_scope.cancel()  # stop waiting for the stuck writes

    anyio.run(drive)
    assert timings["ok"] == (True, True)
    assert timings["other"] < 5, "served while the stuck package's calls wait"


READ_ONLY_CALLS: dict[str, dict[str, Any]] = {
    "catalog": {},
    "discover_packages": {},
    "export_package_identity": {"package": "welcome"},
    "verify_package_trust": {"package": "welcome"},
    "inspect_contract": {"package": "welcome", "contract": "account-digest"},
    "validate_contract": {"package": "welcome", "contract": "account-digest"},
    "validate_package": {"package": "welcome"},
    "compile_contract": {
        "package": "welcome",
        "contract": "account-digest",
        "inputs": {"account": "Acme", "open_tickets": 1},
        "capabilities": ["text"],
    },
    "render_contract": {
        "package": "welcome",
        "contract": "account-digest",
        "inputs": {"account": "Acme", "open_tickets": 1},
        "capabilities": ["text"],
    },
    "execute_contract": {
        "package": "welcome",
        "contract": "account-digest",
        "inputs": {"account": "Acme", "open_tickets": 1},
        "capabilities": ["text"],
        "fixture_output": "Acme is fine.",
        "stream": True,
    },
    "list_workspace_artifacts": {"package": "welcome"},
    "read_artifact": {"package": "welcome", "path": "report.txt"},
    "test_package": {"package": "welcome", "capabilities": ["text", "structured_output"]},
    "list_evals": {"package": "welcome"},
    "run_eval": {
        "package": "welcome",
        "contract": "account-digest",
        "fixture_id": "quiet-week",
        "capabilities": ["text"],
    },
    "diff_contract": {
        "left_package": "welcome",
        "left_contract": "account-digest",
        "right_package": "welcome",
        "right_contract": "onboarding-summary",
    },
    "explain_contract": {"package": "welcome", "contract": "account-digest"},
}


def test_read_only_calls_create_no_files(
    open_session: Any, packages_root: Path, tmp_path: Path
) -> None:
    assert set(READ_ONLY_CALLS) == {spec.name for spec in CATALOG if spec.read_only}
    before = _tree(tmp_path)
    answers: dict[str, Any] = {}

    async def drive() -> None:
        async with open_session("--root", str(packages_root)) as session:
            for name, arguments in READ_ONLY_CALLS.items():
                result = await session.call_tool(name, arguments)
                answers[name] = result.structured_content

    anyio.run(drive)
    assert answers["read_artifact"]["diagnostics"][0]["code"] == "TQX_NOT_FOUND"
    assert answers["list_workspace_artifacts"]["ok"] is True
    assert answers["list_workspace_artifacts"]["result"] == []
    assert answers["run_eval"]["ok"] is True
    after = {k: v for k, v in _tree(tmp_path).items() if not k.startswith("server.log")}
    assert after == {k: v for k, v in before.items() if not k.startswith("server.log")}
    assert not (packages_root / ".templiqx-workspace").exists()
    assert not (packages_root / ".templiqx-package-locks").exists()


def test_put_contract_over_mcp_keeps_a_hand_formatted_manifest(
    open_session: Any, packages_root: Path
) -> None:
    manifest = packages_root / "welcome" / "templiqx.yaml"
    original = manifest.read_text()
    source = (packages_root / "welcome" / "contracts" / "account-digest.yaml").read_text()
    source = source.replace("id: account-digest", "id: weekly-digest")

    async def drive() -> None:
        async with open_session("--root", str(packages_root)) as session:
            put = await session.call_tool(
                "put_contract",
                {"package": "welcome", "contract": "weekly-digest", "source": source},
            )
            assert put.structured_content["ok"] is True, put.structured_content

    anyio.run(drive)
    before, after = original.splitlines(), manifest.read_text().splitlines()
    added = [line for line in after if line not in before]
    assert len(added) == 1
    assert "weekly-digest" in added[0]
    assert [line for line in after if line in before] == before, "every other line kept, in order"
