"""R3: processes racing compare-and-swap writes, and writers killed with SIGKILL mid-write.

**Race.** ``PROCESSES`` worker processes (``r3_worker.py``) each run ``ROUNDS`` rounds against
one packages root: read the current token, then ``put_contract``, ``delete_contract`` or
``update_package`` with it. Every write is unique (its description names the worker and the
round), so each successful write is an edge ``from -> to`` between unique states, and the
history must be a single chain:

* no two successful writes start from the same state (that would be a lost update);
* every state a write produced is either the final state or the start of exactly one later
  write (no write was silently overwritten);
* the final contract and manifest on disk are the ends of those chains;
* every read sees a complete contract or none (a parse error would be a torn file), and every
  refused write is refused with ``TQX_CAS_CONFLICT`` or ``TQX_NOT_FOUND``.

**Kill.** Writers loop on large writes; one is killed with SIGKILL at a random moment, the
others must keep making progress (its ``flock`` died with it), then all are killed. After every
kill the store must be valid: ``validate_package`` is clean, the contract and the manifest parse
(old or new bytes, never a mix), no lock is left held, and a new write succeeds.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import r3_worker
import reliability_kit as kit

from templiqx_core.parse import parse_contract, parse_manifest
from templiqx_local import compose

SUITE = "R3"
PROCESSES = kit.scaled(4, 8)
ROUNDS = kit.scaled(25, 100)
KILLS = kit.scaled(4, 25)
KILL_WRITERS = 4
PAD = 300_000
WORKER = Path(r3_worker.__file__)
ABSENT = r3_worker.ABSENT
REFUSALS = {"TQX_CAS_CONFLICT", "TQX_NOT_FOUND"}
TAG = re.compile(r"(init|w\d+-r\d+)( p+)?")


@dataclass
class Store:
    root: Path
    initial_token: str
    initial_description: str


def _make_store(base: Path) -> Store:
    root = base / "root"
    service = compose(root, create_root=True)
    assert service.invoke("create_package", {"name": "race", "version": "1.0.0"}).ok
    put = service.invoke(
        "put_contract",
        {"package": "race", "contract": "c", "source": r3_worker.contract_source("init")},
    )
    assert put.ok, put.diagnostics
    identity = service.invoke("export_package_identity", {"package": "race"})
    return Store(root, put.fingerprints["contract"], identity.result.manifest.description)


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path


def _spawn(store: Store, base: Path, count: int, rounds: int, pad: int) -> list[Worker]:
    go = base / f"go-{time.monotonic_ns()}"
    workers = []
    for index in range(count):
        log = base / f"worker-{index}-{go.name}.jsonl"
        argv = [str(store.root), str(index), str(rounds), str(random.randrange(1 << 30))]
        process = subprocess.Popen(
            [sys.executable, str(WORKER), *argv, str(log), str(go), str(pad)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        workers.append(Worker(process, log))
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.ready.{index}").exists() for index in range(count)):
        dead = [w for w in workers if w.process.poll() is not None]
        assert not dead, dead[0].process.stderr.read().decode() if dead[0].process.stderr else ""
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.01)
    go.touch()
    return workers


def _records(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _chain(edges: list[tuple[str, str]], start: str, end: str, label: str) -> int:
    """Count lost updates in a history of successful writes ``from -> to`` (0 when linear)."""
    lost = 0
    starts = Counter(src for src, _ in edges if src != ABSENT)
    lost += sum(count - 1 for count in starts.values() if count > 1)
    produced = [dst for _, dst in edges if dst != ABSENT]
    for state in produced:
        if state != end and starts[state] != 1:
            lost += 1  # written, then overwritten by a write that never saw it
    creates = sum(1 for src, _ in edges if src == ABSENT)
    deletes = sum(1 for _, dst in edges if dst == ABSENT)
    balance = (start != ABSENT) - (end != ABSENT) + creates - deletes
    if balance != 0:
        lost += abs(balance)
    if end != ABSENT and end != start and end not in produced:
        lost += 1
    if lost:
        print(f"{label}: {lost} anomalies in {len(edges)} writes")
    return lost


def test_the_chain_check_finds_lost_updates() -> None:
    """The detector itself: linear histories pass, forked or overwritten ones do not."""
    assert _chain([("a", "b"), ("b", ABSENT), (ABSENT, "c")], "a", "c", "ok") == 0
    assert _chain([], "a", "a", "empty") == 0
    assert _chain([("a", "b"), ("a", "c")], "a", "c", "fork") > 0  # both based on a
    assert _chain([("a", "b"), ("c", "d")], "a", "d", "gap") > 0  # b overwritten unseen
    assert _chain([("a", ABSENT), (ABSENT, "b"), (ABSENT, "c")], "a", "c", "double create") > 0
    assert _chain([("a", "b")], "a", "x", "unexplained final state") > 0


def test_racing_cas_writers_lose_no_update(tmp_path: Path) -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "racing processes", ">=", PROCESSES)
    figures.expect(SUITE, "rounds per process", ">=", ROUNDS)
    figures.expect(SUITE, "lost updates", "==", 0)
    figures.expect(SUITE, "torn or partial reads", "==", 0)
    figures.expect(SUITE, "unexpected refusals", "==", 0)
    store = _make_store(tmp_path)
    workers = _spawn(store, tmp_path, PROCESSES, ROUNDS, 0)
    try:
        for worker in workers:
            worker.process.wait(timeout=300)
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait()
    for worker in workers:
        assert worker.process.returncode == 0, worker.process.stderr.read().decode()  # type: ignore[union-attr]

    ends = [r for w in workers for r in _records(w.log) if r["phase"] == "end"]
    figures.add(SUITE, "racing processes", PROCESSES)
    figures.add(SUITE, "rounds per process", min(Counter(r["worker"] for r in ends).values()))
    contract_edges: list[tuple[str, str]] = []
    update_edges: list[tuple[str, str]] = []
    for record in ends:
        if record["op"] == "read":
            figures.add(SUITE, "torn or partial reads")
            continue
        figures.add(SUITE, "CAS writes attempted")
        if record["ok"]:
            figures.add(SUITE, "CAS writes committed")
            edge = (record["from"], record["to"])
            (update_edges if record["op"] == "update" else contract_edges).append(edge)
        elif set(record["codes"]) <= REFUSALS:
            figures.add(SUITE, "CAS writes refused (stale token)")
        else:
            figures.add(SUITE, "unexpected refusals")

    service = compose(store.root)
    assert service.invoke("validate_package", {"package": "race"}).ok
    inspected = service.invoke("inspect_contract", {"package": "race", "contract": "c"})
    final_contract = inspected.fingerprints["contract"] if inspected.ok else ABSENT
    identity = service.invoke("export_package_identity", {"package": "race"})
    final_description = identity.result.manifest.description
    lost = _chain(contract_edges, store.initial_token, final_contract, "contract")
    lost += _chain(update_edges, store.initial_description, final_description, "manifest")
    figures.add(SUITE, "lost updates", lost)
    assert lost == 0
    assert figures.get(SUITE, "torn or partial reads") == 0
    assert figures.get(SUITE, "unexpected refusals") == 0
    assert contract_edges, "the race committed no contract writes"
    assert update_edges, "the race committed no manifest writes"


def _lock_is_free(root: Path) -> bool:
    lock = root / ".templiqx-package-locks" / "race.lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _store_problems(store: Store) -> list[str]:
    """Why the store is not valid after a kill (empty when it is)."""
    problems = []
    package = store.root / "race"
    manifest, diagnostics = parse_manifest((package / "templiqx.yaml").read_bytes())
    if manifest is None:
        problems.append(f"manifest does not parse: {diagnostics}")
    contract_file = package / "contracts" / "c.yaml"
    if contract_file.exists():
        contract, diagnostics = parse_contract(contract_file.read_bytes())
        if contract is None or TAG.fullmatch(contract.description) is None:
            problems.append(f"contract is torn: {diagnostics}")
    elif manifest is not None and "c" in manifest.contracts:
        problems.append("the manifest lists a contract whose file is missing")
    service = compose(store.root)
    validated = service.invoke("validate_package", {"package": "race"})
    if not validated.ok:
        problems.append(f"validate_package: {validated.diagnostics}")
    if not _lock_is_free(store.root):
        problems.append("the package lock is still held after every writer died")
    inspected = service.invoke("inspect_contract", {"package": "race", "contract": "c"})
    arguments = {"package": "race", "contract": "c", "source": r3_worker.contract_source("init")}
    if inspected.ok:
        arguments["expected_fingerprint"] = inspected.fingerprints["contract"]
    elif [d.code for d in inspected.diagnostics] != ["TQX_NOT_FOUND"]:
        problems.append(f"inspect_contract: {inspected.diagnostics}")
    written = service.invoke("put_contract", arguments)
    if not written.ok:
        problems.append(f"a write after the kill failed: {written.diagnostics}")
    return problems


def _in_flight(worker: Worker) -> bool:
    records = _records(worker.log)
    return bool(records) and records[-1]["phase"] == "begin"


def test_kill_9_mid_write_leaves_a_valid_store(tmp_path: Path) -> None:
    figures = kit.FIGURES
    figures.expect(SUITE, "writers killed with SIGKILL", ">=", KILLS * KILL_WRITERS)
    figures.expect(SUITE, "invalid stores after a kill", "==", 0)
    figures.expect(SUITE, "survivors stalled after a kill", "==", 0)
    store = _make_store(tmp_path)
    seen: set[Path] = set()
    for _ in range(KILLS):
        workers = _spawn(store, tmp_path, KILL_WRITERS, 0, PAD)
        try:
            time.sleep(random.uniform(0.05, 0.6))
            victim = random.choice(workers)
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait()
            figures.add(SUITE, "writers killed with SIGKILL")
            figures.add(SUITE, "kills landing inside an operation", int(_in_flight(victim)))
            # The survivors keep committing: the victim's lock died with it.
            before = sum(len(_records(w.log)) for w in workers if w is not victim)
            deadline = time.monotonic() + 10
            while sum(len(_records(w.log)) for w in workers if w is not victim) <= before + 2:
                if time.monotonic() > deadline:
                    figures.add(SUITE, "survivors stalled after a kill")
                    break
                time.sleep(0.02)
            time.sleep(random.uniform(0.0, 0.3))
        finally:
            for worker in workers:
                if worker.process.poll() is None:
                    worker.process.send_signal(signal.SIGKILL)
                    worker.process.wait()
                    figures.add(SUITE, "writers killed with SIGKILL")
                    figures.add(SUITE, "kills landing inside an operation", int(_in_flight(worker)))
        leftovers = set((store.root / "race").rglob(".templiqx-tmp.*")) - seen
        seen |= leftovers
        figures.add(SUITE, "interrupted writes left as hidden temp files", len(leftovers))
        problems = _store_problems(store)
        if problems:
            figures.add(SUITE, "invalid stores after a kill")
        assert not problems, problems
    assert figures.get(SUITE, "survivors stalled after a kill") == 0
