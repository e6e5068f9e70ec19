"""Project automation. Run everything with ``uv run --frozen --all-packages nox``.

The sessions run inside the uv workspace environment that ``uv run`` has already synced from
``uv.lock``, so nox creates no virtualenvs of its own.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "boundaries", "tests", "build"]
nox.options.error_on_missing_interpreters = True

DISTRIBUTIONS = sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml")) + sorted(
    p.parent for p in ROOT.glob("conformance/pyproject.toml")
)
SOURCE_DIRS = [str(d / "src") for d in DISTRIBUTIONS]


@nox.session
def tests(session: nox.Session) -> None:
    """pytest over every distribution and the cross-distribution tests."""
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on every distribution's src/."""
    session.run("mypy", "--strict", *SOURCE_DIRS)


@nox.session
def boundaries(session: nox.Session) -> None:
    """Layer rules: import-linter contracts plus grep gates that fail closed."""
    if shutil.which("lint-imports") is None:
        session.error(
            "lint-imports (import-linter) is not installed: the boundary gate fails closed"
        )
    session.run("lint-imports")
    session.run("python", str(ROOT / "tools" / "check_boundaries.py"))


@nox.session
def build(session: nox.Session) -> None:
    """A wheel and an sdist for every distribution, into dist/."""
    out = ROOT / "dist"
    if out.exists():
        shutil.rmtree(out)
    for dist in DISTRIBUTIONS:
        session.run("uv", "build", "--quiet", "--out-dir", str(out), str(dist))
    wheels = sorted(out.glob("*.whl"))
    sdists = sorted(out.glob("*.tar.gz"))
    if len(wheels) != len(DISTRIBUTIONS) or len(sdists) != len(DISTRIBUTIONS):
        session.error(
            f"expected {len(DISTRIBUTIONS)} wheels and sdists, "
            f"built {len(wheels)} and {len(sdists)}"
        )
    session.log(f"built {len(wheels)} wheels and {len(sdists)} sdists in {out}")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks P1-P6 against the tools users would otherwise pick; writes bench/results.json.

    Not in the default session list: it takes minutes and its targets are ratios measured on
    this machine, not pass/fail tests. It syncs the ``bench`` dependency group first.
    """
    session.run(
        "uv",
        "run",
        "--frozen",
        "--all-packages",
        "--group",
        "bench",
        "python",
        str(ROOT / "bench" / "run.py"),
        *session.posargs,
    )


@nox.session
def reliability(session: nox.Session) -> None:
    """Reliability and security suites R1-R7 (issue #9); prints the measured figures table.

    Counts are CI-sized unless ``TEMPLIQX_RELIABILITY_FULL=1`` is set, which selects the full
    ones (100,000 R1 inputs, 8 processes x 100 rounds in R3, 10,000 R5 messages, ...; about
    twenty minutes on two cores). The default ``tests`` session runs the same suites CI-sized.
    ``TEMPLIQX_RELIABILITY_REPORT=path.json`` also writes the figures as JSON.
    """
    full = os.environ.get("TEMPLIQX_RELIABILITY_FULL") == "1"
    session.log(f"reliability suites with {'full' if full else 'CI-sized'} counts")
    session.run("pytest", str(ROOT / "tests" / "reliability"), "-q", *session.posargs)


@nox.session(name="mcp_inspector")
def mcp_inspector(session: nox.Session) -> None:
    """templiqx-mcp driven by the MCP Inspector CLI (issue #16); see docs/mcp.md.

    Not in the default session list: it needs Node.js (``npx``) and fetches the Inspector from
    the npm registry the first time. ``TEMPLIQX_INSPECTOR`` overrides the package spec
    (default ``@modelcontextprotocol/inspector@2.12.0``).
    """
    if shutil.which("npx") is None:
        session.error("npx (Node.js) is not installed: the Inspector session cannot run")
    session.run("python", str(ROOT / "tests" / "inspector" / "inspector_check.py"))
