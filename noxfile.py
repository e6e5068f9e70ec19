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
    """Every benchmark against the tools users would otherwise pick; writes bench/results.json.

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
def playground(session: nox.Session) -> None:
    """The contract playground's browser tests in headless Chromium (issue #30), alone.

    Not in the default session list (the default ``tests`` session runs them too). It needs
    Debian's ``chromium`` (``apt-get install -y chromium``; Playwright downloads no browser)
    and fails without it; the screenshots go to docs/images (docs/playground.md shows them).
    """
    session.run(
        "pytest",
        str(ROOT / "tests" / "playground"),
        "-q",
        *session.posargs,
        env={"TEMPLIQX_PLAYGROUND_SCREENSHOTS": str(ROOT / "docs" / "images"), "CI": "1"},
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


@nox.session
def newcomer(session: nox.Session) -> None:
    """The newcomer's path in full: fresh clones, the README's commands, the quick start.

    Not in the default session list: besides what the default ``tests`` session already checks
    (tests/packaging/test_readme_commands.py), it runs the README's test command — the whole
    gate — inside the clone the quick start was followed in, which the default run cannot do
    without running itself. Expect it to take as long as the gate, plus a few minutes.
    """
    session.run(
        "pytest",
        str(ROOT / "tests" / "packaging" / "test_readme_commands.py"),
        "-q",
        *session.posargs,
        env={"TEMPLIQX_NEWCOMER_FULL": "1"},
    )


LITELLM_REQUIREMENT = "litellm[proxy]!=1.107.0"
"""What the ``litellm`` session installs (1.107.0 is excluded: that release was compromised)."""


@nox.session
def litellm(session: nox.Session) -> None:
    """The OpenAI runtime against a real LiteLLM proxy with mock models (opt-in, issue #15).

    Not in the default session list: it installs ``litellm[proxy]`` from the package index into
    its own virtual environment (``.nox/litellm-proxy``, kept between runs; never into the
    workspace), starts the proxy on 127.0.0.1 with an ephemeral port and ``mock_response``
    models, and runs ``tests/gateway/litellm_suite.py`` (text, JSON, streaming, 429, 500,
    context window, unknown model, wrong key) through our runtime. ``LITELLM_VENV=DIR`` uses an
    existing environment that has ``litellm[proxy]`` instead.
    """
    venv = Path(os.environ.get("LITELLM_VENV") or ROOT / ".nox" / "litellm-proxy")
    python = venv / "bin" / "python"
    if not python.exists():
        session.run("uv", "venv", "--quiet", str(venv), external=True)
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        str(python),
        LITELLM_REQUIREMENT,
        external=True,
    )
    session.run(
        "pytest",
        str(ROOT / "tests" / "gateway" / "litellm_suite.py"),
        "-q",
        *session.posargs,
        env={"TEMPLIQX_LITELLM_PYTHON": str(python)},
    )


SCHEMATHESIS_VENV = ROOT / ".nox" / "schemathesis"
SCHEMATHESIS_TESTS = ROOT / "packages" / "templiqx-http-server" / "tests"


@nox.session
def schemathesis(session: nox.Session) -> None:
    """Schemathesis against a live templiqx-http-server, every phase (opt-in, issue #26).

    Not in the default session list (the default ``tests`` session runs a short fuzzing pass).
    Schemathesis pins an older jsonschema-rs than templiqx-core uses, so it is installed into
    its own environment (``.nox/schemathesis``, kept between runs) from
    ``packages/templiqx-http-server/tests/schemathesis.txt``; the test starts the server on
    127.0.0.1 with an ephemeral port and checks that no response is a server error or breaks
    the OpenAPI document (``schemathesis.toml`` beside the test).
    """
    python = SCHEMATHESIS_VENV / "bin" / "python"
    if not python.exists():
        session.run("uv", "venv", "--quiet", str(SCHEMATHESIS_VENV), external=True)
    requirement = (SCHEMATHESIS_TESTS / "schemathesis.txt").read_text(encoding="utf-8").strip()
    session.run(
        "uv", "pip", "install", "--quiet", "--python", str(python), requirement, external=True
    )
    session.run(
        "pytest",
        str(SCHEMATHESIS_TESTS / "test_schemathesis.py"),
        "-q",
        *session.posargs,
        env={
            "TEMPLIQX_SCHEMATHESIS": str(SCHEMATHESIS_VENV / "bin" / "schemathesis"),
            "TEMPLIQX_SCHEMATHESIS_FULL": "1",
        },
    )


PHOENIX_REQUIREMENT = "arize-phoenix>=12"
"""What the ``phoenix`` session installs into its own environment."""


@nox.session
def phoenix(session: nox.Session) -> None:
    """templiqx's traces in a real Arize Phoenix (opt-in, issue #32); see docs/observability.md.

    Not in the default session list: it installs ``arize-phoenix`` from the package index into
    its own virtual environment (``.nox/phoenix-server``, kept between runs; never into the
    workspace), syncs the workspace's ``otlp`` group (``opentelemetry-instrument`` and the
    OTLP/HTTP exporter), then runs ``tests/observability/phoenix_suite.py``: Phoenix on
    127.0.0.1 with ephemeral ports, a streamed contract, a failed call and a batch through the
    CLI (and the HTTP server) exporting over OTLP, every span read back from Phoenix's REST API
    and checked. ``PHOENIX_VENV=DIR`` uses an existing environment that has ``arize-phoenix``.
    """
    venv = Path(os.environ.get("PHOENIX_VENV") or ROOT / ".nox" / "phoenix-server")
    python = venv / "bin" / "python"
    if not python.exists():
        session.run("uv", "venv", "--quiet", str(venv), external=True)
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        str(python),
        PHOENIX_REQUIREMENT,
        external=True,
    )
    session.run(
        "uv",
        "run",
        "--frozen",
        "--all-packages",
        "--group",
        "otlp",
        "pytest",
        str(ROOT / "tests" / "observability" / "phoenix_suite.py"),
        "-q",
        "-s",
        *session.posargs,
        env={"TEMPLIQX_PHOENIX_PYTHON": str(python)},
    )


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
