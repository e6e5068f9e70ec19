"""P4: real ``templiqx`` commands as fresh processes against ``python -c pass``.

A person's first contact with the CLI is a handful of short commands, each a new process whose
cost is mostly start-up. Measured, each as typed (human output, not ``--json``):

* ``templiqx --help`` (P4h) — builds the whole click group from the catalog and lists the
  installed runtimes and plugins (entry points);
* ``templiqx discover`` (P4d) — composes the service and reads every manifest under the root;
* ``templiqx validate welcome`` (P4v) — loads and validates the example package (YAML, schemas);
* ``templiqx compile welcome onboarding-summary --values ...`` (P4c) — the help's own example;
* ``templiqx catalog --json`` (P4) — answered from the shipped snapshot (the one fast path).

Two more rows time what no command can avoid, the third-party imports: ``import click,
msgspec`` (what building the command group needs: click, and the catalog's msgspec Structs) and
``import click, msgspec, yaml, jsonschema_rs`` (what loading a contract needs as well). A
command's ratio minus its floor's ratio is templiqx's own share.

Every process runs on the workspace interpreter from a scratch folder holding a copy of the
example package, with templiqx settings removed from the environment. Byte-compiled modules are
cached (as after any install) in a scratch ``PYTHONPYCACHEPREFIX``, and
``PYTHONDONTWRITEBYTECODE`` is removed: without a cache every process would recompile every
module it imports and the commands would be timed compiling Python. All sides run once per
round in an order rotated each round; each ratio is the median of per-round ratios to that
round's ``python -c pass``. Peak memory is each process's own maximum resident set (``wait4``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus import ROOT
from harness import (
    BenchmarkError,
    Comparison,
    ProcessRun,
    Settings,
    Side,
    Timing,
    check,
    peak_rss_of,
    rotate,
    run_process,
)

from templiqx_application.catalog import CATALOG
from templiqx_cli.app import build_group
from templiqx_local import available_runtimes, compose

__all__ = ["run"]

PACKAGE = "welcome"
CONTRACT = "onboarding-summary"
CAPABILITY = "structured_output"
HELP_FLOOR = "import click, msgspec"
LOAD_FLOOR = "import click, msgspec, yaml, jsonschema_rs"


@dataclass(frozen=True)
class Command:
    """One measured command line (after ``templiqx``) and how its result is checked."""

    id: str
    label: str
    args: tuple[str, ...]
    target: float | None
    json_args: tuple[str, ...] | None = None
    """The same command with ``--json``, whose envelope is compared with the service's."""


def _commands(root: Path) -> list[Command]:
    values = str(root / PACKAGE / "evals" / "vip-request.json")
    at_root = ("--root", str(root))
    compile_args = ("compile", PACKAGE, CONTRACT, "--values", values, "--capability", CAPABILITY)
    return [
        Command("P4h", "templiqx --help", ("--help",), 1.3),
        Command(
            "P4d",
            "templiqx discover",
            (*at_root, "discover"),
            None,
            (*at_root, "--json", "discover"),
        ),
        Command(
            "P4v",
            f"templiqx validate {PACKAGE}",
            (*at_root, "validate", PACKAGE),
            1.3,
            (*at_root, "--json", "validate", PACKAGE),
        ),
        Command(
            "P4c",
            f"templiqx compile {PACKAGE} {CONTRACT}",
            (*at_root, *compile_args),
            1.3,
            (*at_root, "--json", *compile_args),
        ),
        Command("P4", "templiqx catalog --json", ("catalog", "--json"), 4.0),
    ]


def _script() -> str:
    script = shutil.which("templiqx", path=str(Path(sys.executable).parent))
    if script is None:
        raise BenchmarkError(
            f"the templiqx console script is not installed beside {sys.executable}"
        )
    return script


def _environment(scratch: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TEMPLIQX_") and key != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "p4-pycache")
    return env


def _expected_envelope(root: Path, command: Command) -> dict[str, Any]:
    """What the service itself answers for ``command`` (composed in this process)."""
    service = compose(root)
    if command.id == "P4d":
        envelope = service.discover_packages()
    elif command.id == "P4v":
        envelope = service.validate_package(PACKAGE)
    else:
        values = json.loads((root / PACKAGE / "evals" / "vip-request.json").read_text("utf-8"))
        envelope = service.compile_contract(
            PACKAGE,
            CONTRACT,
            inputs=values["inputs"],
            context=values["context"],
            capabilities=[CAPABILITY],
        )
    data: dict[str, Any] = json.loads(json.dumps(envelope.to_builtins()))
    return data


def _check_help(done: ProcessRun) -> None:
    text = done.stdout.decode("utf-8")
    check(text.startswith("Usage: templiqx "), f"templiqx --help printed {text[:200]!r}")
    listed = {
        line.split()[0] for line in text.splitlines() if line.startswith("  ") and line.split()
    }
    missing = sorted(set(build_group().commands) - listed)
    check(not missing, f"templiqx --help does not list the commands {missing}")
    runtimes = ", ".join(available_runtimes())
    check(
        runtimes in " ".join(text.split()),
        f"templiqx --help does not name the installed runtimes ({runtimes})",
    )


def _check_json(command: Command, done: ProcessRun, root: Path) -> None:
    check(done.code == 0, f"{command.label} --json exited {done.code}: {done.stderr!r}")
    printed = json.loads(done.stdout)
    expected = _expected_envelope(root, command)
    check(
        printed == expected and printed.get("ok") is True,
        f"{command.label} --json printed another envelope than the service answers:\n"
        f"{done.stdout[:400]!r}",
    )


def _check_catalog(done: ProcessRun) -> None:
    envelope = json.loads(done.stdout)
    names = [entry["name"] for entry in envelope.get("result") or []]
    check(
        envelope.get("ok") is True
        and envelope.get("operation") == "catalog"
        and names == [spec.name for spec in CATALOG],
        f"templiqx catalog --json printed an unexpected envelope: {done.stdout[:200]!r}",
    )


def _verify(command: Command, argv: list[str], env: dict[str, str], cwd: str, root: Path) -> None:
    done = run_process(argv, env=env, cwd=cwd)
    check(done.code == 0, f"{command.label} exited {done.code}: {done.stderr!r}")
    if command.id == "P4h":
        _check_help(done)
    elif command.id == "P4":
        _check_catalog(done)
    else:
        operation = command.args[2]
        first = done.stdout.decode("utf-8").splitlines()[0]
        check(
            first.startswith(f"✓ {operation} "),
            f"{command.label} did not report success: {first!r}",
        )
    if command.json_args is not None:
        _check_json(command, run_process([argv[0], *command.json_args], env=env, cwd=cwd), root)


def _side(label: str, argv: list[str], env: dict[str, str], cwd: str) -> Side:
    def once() -> None:
        done = run_process(argv, env=env, cwd=cwd)
        if done.code != 0:
            raise BenchmarkError(f"{label} exited {done.code}: {done.stderr!r}")

    return Side(label, once)


FLOORS = (
    ("P4f", HELP_FLOOR, "the floor of --help"),
    ("P4g", LOAD_FLOOR, "the floor of discover, validate and compile"),
)
FLOOR_OF = {"P4h": "P4f", "P4d": "P4g", "P4v": "P4g", "P4c": "P4g"}
"""Each command's floor: its ratio (and target) is against that floor's process, per round."""
PIP = "P4p"


def _row(row_id: str, label: str, target: float | None) -> Comparison:
    floor = FLOOR_OF.get(row_id)
    return Comparison(
        id=row_id,
        what=f"{label} (process)",
        baseline="python -c pass" if floor is None else f"{floor}: its imports alone",
        target=target,
        memory_kind="max RSS of each process",
    )


def _pip() -> list[str]:
    """``python -m pip --help`` on the base interpreter (the same Python; the workspace's
    environment has no pip): the everyday yardstick of a Python command line."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return [str(base), "-m", "pip", "--help"]


def run(settings: Settings) -> list[Comparison]:
    scratch = settings.scratch
    root = scratch / "p4-root"
    shutil.copytree(ROOT / "fixtures" / "packages" / PACKAGE, root / PACKAGE)
    env = _environment(scratch)
    cwd = str(scratch)
    script = _script()
    baseline = [sys.executable, "-c", "pass"]
    check(run_process(baseline, env=env, cwd=cwd).code == 0, "python -c pass failed")
    measured: list[tuple[Comparison, list[str]]] = []
    for command in _commands(root):
        argv = [script, *command.args]
        _verify(command, argv, env, cwd, root)
        measured.append((_row(command.id, command.label, command.target), argv))
    for row_id, code, note in FLOORS:
        argv = [sys.executable, "-c", code]
        check(run_process(argv, env=env, cwd=cwd).code == 0, f"python -c {code!r} failed")
        row = _row(row_id, f'python -c "{code}"', None)
        row.metrics["is"] = note
        measured.append((row, argv))
    pip = _pip()
    done = run_process(pip, env=env, cwd=cwd)
    check(
        done.code == 0 and done.stdout.startswith(b"\nUsage:"),
        f"python -m pip --help failed: {done.stderr[:300]!r}",
    )
    row = _row(PIP, "python -m pip --help", None)
    row.metrics["is"] = "the everyday yardstick of a Python command line (base interpreter)"
    measured.append((row, pip))

    sides = [_side("python -c pass", baseline, env, cwd)]
    sides += [_side(row.what, argv, env, cwd) for row, argv in measured]
    base, *others = rotate(sides, rounds=settings.rounds(31, 5), warmup=2)
    base_memory = max(peak_rss_of(baseline, env=env, cwd=cwd) for _ in range(3))
    samples = {row.id: own for (row, _), own in zip(measured, others, strict=True)}
    for (row, argv), own in zip(measured, others, strict=True):
        versus_pass = [a / b for a, b in zip(own, base, strict=True)]
        row.metrics["vs_python_c_pass"] = round(statistics.median(versus_pass), 2)
        floor = FLOOR_OF.get(row.id)
        if floor is None:
            row.record(Timing(own), Timing(base), versus_pass)
            row.baseline_peak_memory = base_memory
        else:  # the ratio to the floor's process in the same round
            under = samples[floor]
            row.record(Timing(own), Timing(under), [a / b for a, b in zip(own, under, strict=True)])
        row.subject_peak_memory = max(peak_rss_of(argv, env=env, cwd=cwd) for _ in range(3))
    rows = {row.id: row for row, _ in measured}
    for row_id, floor_id in FLOOR_OF.items():
        rows[row_id].baseline_peak_memory = rows[floor_id].subject_peak_memory
    help_vs_pip = [a / b for a, b in zip(samples["P4h"], samples[PIP], strict=True)]
    rows[PIP].metrics["templiqx_help_vs_pip_help"] = round(statistics.median(help_vs_pip), 3)
    return list(rows.values())


def subject_for_profile(settings: Settings) -> Callable[[], object]:
    """Start-up is imports: the slowest of each command's, from ``python -X importtime``."""
    root = settings.scratch / "p4-root"
    shutil.copytree(ROOT / "fixtures" / "packages" / PACKAGE, root / PACKAGE)
    env = _environment(settings.scratch)
    script = _script()

    def importtime() -> None:
        for command in _commands(root):
            argv = [sys.executable, "-X", "importtime", script, *command.args]
            run_process(argv, env=env, cwd=str(settings.scratch))  # fills the bytecode cache
            done = run_process(argv, env=env, cwd=str(settings.scratch))
            rows = [
                line.split("|")
                for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "cumulative" not in line
            ]
            rows.sort(key=lambda cells: -int(cells[1]))
            print(f"\n{command.label}\ncumulative us | module")
            for cells in rows[:20]:
                print(f"{int(cells[1]):>13} | {cells[2].rstrip()}")

    return importtime
