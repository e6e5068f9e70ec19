"""Shared fixtures of the packaging tests: the eleven distributions, built once per session.

``uv build --all-packages`` writes a wheel and an sdist of every workspace member into a
temporary folder; every packaging test reads that one build.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

# distribution -> (project folder, import name); the twelve the project publishes.
DISTRIBUTIONS: dict[str, tuple[Path, str]] = {
    "templiqx-contracts": (REPO / "packages" / "templiqx-contracts", "templiqx_contracts"),
    "templiqx-ports": (REPO / "packages" / "templiqx-ports", "templiqx_ports"),
    "templiqx-core": (REPO / "packages" / "templiqx-core", "templiqx_core"),
    "templiqx-application": (REPO / "packages" / "templiqx-application", "templiqx_application"),
    "templiqx-local": (REPO / "packages" / "templiqx-local", "templiqx_local"),
    "templiqx-mock": (REPO / "packages" / "templiqx-mock", "templiqx_mock"),
    "templiqx-runtime-openai": (
        REPO / "packages" / "templiqx-runtime-openai",
        "templiqx_runtime_openai",
    ),
    "templiqx-runtime-langfuse": (
        REPO / "packages" / "templiqx-runtime-langfuse",
        "templiqx_runtime_langfuse",
    ),
    "templiqx-cli": (REPO / "packages" / "templiqx-cli", "templiqx_cli"),
    "templiqx-mcp": (REPO / "packages" / "templiqx-mcp", "templiqx_mcp"),
    "templiqx-ray": (REPO / "packages" / "templiqx-ray", "templiqx_ray"),
    "templiqx-conformance": (REPO / "conformance", "templiqx_conformance"),
}


VERSION = "0.2.0"


@dataclass(frozen=True)
class Dist:
    """One distribution of the project (the value of the ``dist`` parameter)."""

    name: str
    folder: Path
    module: str

    @property
    def stem(self) -> str:
        """The file-name form of the name (``templiqx_cli``)."""
        return self.name.replace("-", "_")

    @property
    def project(self) -> dict[str, Any]:
        """The ``[project]`` table of its pyproject.toml."""
        data = tomllib.loads((self.folder / "pyproject.toml").read_text(encoding="utf-8"))
        project: dict[str, Any] = data["project"]
        return project


ALL = [Dist(name, folder, module) for name, (folder, module) in sorted(DISTRIBUTIONS.items())]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test taking ``dist`` runs once per distribution."""
    if "dist" in metafunc.fixturenames:
        metafunc.parametrize("dist", ALL, ids=[d.name for d in ALL])


@dataclass(frozen=True)
class Build:
    """One build of every distribution."""

    folder: Path

    def wheel(self, dist: Dist) -> Path:
        found = sorted(self.folder.glob(f"{dist.stem}-*.whl"))
        assert len(found) == 1, f"expected one wheel of {dist.name}, found {found}"
        return found[0]

    def sdist(self, dist: Dist) -> Path:
        found = sorted(self.folder.glob(f"{dist.stem}-*.tar.gz"))
        assert len(found) == 1, f"expected one sdist of {dist.name}, found {found}"
        return found[0]


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """A wheel and an sdist of every distribution (``uv build --all-packages``)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH: install it with `python3 -m pip install uv`")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [uv, "build", "--all-packages", "--quiet", "--out-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"uv build failed:\n{done.stderr[-4000:]}"
    return Build(out)


@pytest.fixture(scope="session")
def all_dists() -> list[Dist]:
    """The eleven distributions, sorted by name."""
    return list(ALL)
