"""Each distribution, installed alone with plain pip into a fresh virtual environment, works.

For every one of the fourteen distributions: ``python -m venv``, then ``pip install --find-links
<built wheels> <distribution>`` — its templiqx dependencies come from the wheels built from this
tree, third-party ones from the package index pip is configured with — then a smoke script
(``smoke/``) runs in the environment with ``python -I`` in an empty folder. The environments are
created and filled in parallel. pip is the one ``ensurepip`` bundles (the pip a fresh ``venv``
would install), unpacked once and run by each environment's interpreter, so no environment spends
time installing pip itself; its download cache is pip's usual one, shared by all.

Also checked: the environment holds exactly the templiqx distributions the installed one needs,
and they are this build's files, not some other copy of the same name and version.
``templiqx-runtime-openai`` additionally gets ``templiqx-cli`` afterwards, and the CLI must list
and select ``--runtime openai``; ``templiqx-mock`` gets ``templiqx-cli`` too, and ``templiqx
demo`` must run from the installed CLI (its example package ships in the wheel).
"""

from __future__ import annotations

import compileall
import ensurepip
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from packaging.requirements import Requirement

if TYPE_CHECKING:
    from tests.packaging.conftest import Build, Dist

HERE = Path(__file__).resolve().parent
SMOKE = HERE / "smoke"
FIXTURES = HERE.parents[1] / "fixtures" / "packages"
PIP_TIMEOUT = 900
SMOKE_TIMEOUT = 120
_NOISE = "is ignored: it is neither a file nor a directory."  # pip: a configured index is absent

# distribution -> (smoke script, then: (extra distribution, smoke script) or None)
PLANS: dict[str, tuple[str, tuple[str, str] | None]] = {
    "templiqx-contracts": ("smoke_contracts.py", None),
    "templiqx-ports": ("smoke_ports.py", None),
    "templiqx-core": ("smoke_core.py", None),
    "templiqx-application": ("smoke_application.py", None),
    "templiqx-local": ("smoke_local.py", None),
    "templiqx-mock": ("smoke_mock.py", ("templiqx-cli", "smoke_cli_demo.py")),
    "templiqx-runtime-openai": (
        "smoke_runtime_openai.py",
        ("templiqx-cli", "smoke_cli_lists_openai.py"),
    ),
    "templiqx-runtime-langfuse": ("smoke_runtime_langfuse.py", None),
    "templiqx-cli": ("smoke_cli.py", None),
    "templiqx-mcp": ("smoke_mcp.py", None),
    "templiqx-http": ("smoke_http.py", None),
    "templiqx-http-server": ("smoke_http_server.py", None),
    "templiqx-ray": ("smoke_ray.py", None),
    "templiqx-conformance": ("smoke_conformance.py", None),
}

_RECORDS = """
import json
from importlib.metadata import distributions

found = {}
for dist in distributions():
    name = dist.metadata["Name"]
    if name.startswith("templiqx-"):
        lines = (dist.read_text("RECORD") or "").splitlines()
        found[name] = sorted(line for line in lines if line.split(",")[0].endswith(".py"))
print(json.dumps(found))
"""


def _unpacked_pip(folder: Path) -> Path:
    """The pip ``ensurepip`` bundles, unpacked and byte-compiled once (pip starts 4x faster)."""
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    assert bundled, "ensurepip bundles no pip wheel in this Python"
    with zipfile.ZipFile(bundled[-1]) as archive:
        archive.extractall(folder)
    compileall.compile_dir(folder, quiet=1)
    return folder / "pip"


@dataclass
class Outcome:
    """What happened to one distribution's environment."""

    name: str
    log: list[str] = field(default_factory=list)
    failure: str | None = None


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a new shell with ``venv`` activated (no workspace venv, no PYTHON*)."""
    workspace_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != workspace_bin]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "UV_", "TEMPLIQX_", "MODEL_", "LANGFUSE_"))
    }
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def _run(outcome: Outcome, argv: list[str], cwd: Path, env: dict[str, str], timeout: int) -> bool:
    """Run one step; a smoke script must also print ``ok`` as its last line."""
    started = time.monotonic()
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    seconds = time.monotonic() - started
    outcome.log.append(f"$ {' '.join(argv)}  (exit {done.returncode}, {seconds:.1f} s)")
    for stream in (done.stdout, done.stderr):
        lines = [line for line in stream.splitlines() if not line.endswith(_NOISE)]
        outcome.log.extend(lines[-40:])
    if done.returncode != 0:
        outcome.failure = f"{Path(argv[-1]).name} exited {done.returncode}"
    elif argv[-1].endswith(".py") and done.stdout.splitlines()[-1:] != ["ok"]:
        outcome.failure = f"{Path(argv[-1]).name} did not print ok"
    return outcome.failure is None


def _wheel_records(build: Build) -> dict[str, list[str]]:
    records: dict[str, list[str]] = {}
    for wheel in build.folder.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            record = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            name = next(
                line.split(": ", 1)[1]
                for line in archive.read(meta).decode().splitlines()
                if line.startswith("Name: ")
            )
            lines = archive.read(record).decode().splitlines()
        records[name] = sorted(line for line in lines if line.split(",")[0].endswith(".py"))
    return records


def _templiqx_closure(build: Build, names: list[str]) -> set[str]:
    """The templiqx distributions ``names`` need, themselves included."""
    requires: dict[str, list[str]] = {}
    for wheel in build.folder.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            lines = archive.read(meta).decode().split("\n\n", 1)[0].splitlines()
        name = next(line.split(": ", 1)[1] for line in lines if line.startswith("Name: "))
        requires[name] = [
            Requirement(line.split(": ", 1)[1]).name
            for line in lines
            if line.startswith("Requires-Dist: ") and "extra ==" not in line
        ]
    seen: set[str] = set()
    todo = list(names)
    while todo:
        current = todo.pop()
        if current in seen or not current.startswith("templiqx-"):
            continue
        seen.add(current)
        todo.extend(requires[current])
    return seen


def _install_and_smoke(name: str, build: Build, base: Path, pip: Path) -> Outcome:
    outcome = Outcome(name)
    venv = base / f"venv-{name}"
    work = base / f"work-{name}"
    work.mkdir()
    env = _clean_env(venv)
    env["SMOKE_FIXTURES"] = str(FIXTURES)
    python = str(venv / "bin" / "python")
    pip_install = [
        python,
        str(pip),
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "--no-compile",
        "--find-links",
        str(build.folder),
    ]
    smoke, then = PLANS[name]
    steps: list[tuple[list[str], int]] = [
        ([sys.executable, "-m", "venv", "--without-pip", str(venv)], 120),
        ([*pip_install, name], PIP_TIMEOUT),
        ([python, "-I", str(SMOKE / smoke)], SMOKE_TIMEOUT),
    ]
    if then is not None:
        extra, extra_smoke = then
        steps.append(([*pip_install, extra], PIP_TIMEOUT))
        steps.append(([python, "-I", str(SMOKE / extra_smoke)], SMOKE_TIMEOUT))
    try:
        for index, (argv, timeout) in enumerate(steps):
            if not _run(outcome, argv, work, env, timeout):
                break
            if index == 1:
                _check_provenance(outcome, build, python, env, work, [name])
                if outcome.failure is not None:
                    break
        if then is not None and outcome.failure is None:
            _check_provenance(outcome, build, python, env, work, [name, then[0]])
    except subprocess.TimeoutExpired as exc:
        outcome.failure = f"timed out: {exc.cmd}"
    return outcome


def _check_provenance(
    outcome: Outcome, build: Build, python: str, env: dict[str, str], work: Path, names: list[str]
) -> None:
    done = subprocess.run(
        [python, "-I", "-c", _RECORDS],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        outcome.failure = f"listing installed distributions failed: {done.stderr}"
        return
    installed: dict[str, list[str]] = json.loads(done.stdout)
    expected = _templiqx_closure(build, names)
    if set(installed) != expected:
        outcome.failure = (
            f"templiqx distributions installed: {sorted(installed)}; expected {sorted(expected)}"
        )
        return
    records = _wheel_records(build)
    foreign = [n for n in installed if installed[n] != records[n]]
    if foreign:
        outcome.failure = f"not this build's files: {foreign}"


@pytest.fixture(scope="session")
def installs(
    build: Build, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Outcome]]:
    """Every distribution installed alone and smoke-checked, all in parallel."""
    base = tmp_path_factory.mktemp("installs")
    pip = _unpacked_pip(base / "pip")
    with ThreadPoolExecutor(max_workers=len(PLANS)) as pool:
        futures = {name: pool.submit(_install_and_smoke, name, build, base, pip) for name in PLANS}
        outcomes = {name: future.result() for name, future in futures.items()}
    yield outcomes
    shutil.rmtree(base, ignore_errors=True)


def test_every_distribution_has_a_smoke_check(all_dists: list[Dist]) -> None:
    assert sorted(PLANS) == [d.name for d in all_dists]
    for smoke, then in PLANS.values():
        assert (SMOKE / smoke).is_file()
        if then is not None:
            assert (SMOKE / then[1]).is_file()


def test_installs_alone_with_pip_and_works(installs: dict[str, Outcome], dist: Dist) -> None:
    outcome = installs[dist.name]
    log = "\n".join(outcome.log)
    assert outcome.failure is None, f"{dist.name}: {outcome.failure}\n{log}"
    assert outcome.log, "the environment was built"
    print(log)
