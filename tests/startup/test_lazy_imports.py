"""Start-up stays light: packages export lazily and short commands import only what they use.

A ``templiqx`` command is a fresh process whose cost is mostly imports (benchmark P4). These
tests hold the import structure that keeps it small, without timing anything: the package
roots of core, application and local import their modules on first use of a name,
``templiqx --help`` loads no YAML reader, schema engine, service or store, and commands on the
default runtime scan no installed distributions for entry points.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LAZY_PACKAGES = ("templiqx_contracts", "templiqx_core", "templiqx_application", "templiqx_local")
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "packages"


def _fresh(code: str, cwd: Path) -> list[str]:
    """Run ``code`` in a new interpreter; the modules it leaves loaded (its last stdout line)."""
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("TEMPLIQX_")},
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_exported_name_resolves_to_its_defining_object(name: str) -> None:
    package = importlib.import_module(name)
    exported = [item for item in package.__all__ if item != "__version__"]
    assert exported
    for item in exported:
        value = getattr(package, item)
        defining = getattr(value, "__module__", None)
        if isinstance(defining, str) and defining.startswith(name + "."):
            assert getattr(importlib.import_module(defining), item) is value
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
        _ = package.not_exported


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_star_import_binds_every_exported_name(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)  # the statement under test
    assert set(importlib.import_module(name).__all__) <= set(namespace)


def test_the_local_compose_function_wins_over_its_module(tmp_path: Path) -> None:
    loaded = _fresh(
        "import templiqx_local.compose\n"
        "from templiqx_local import compose\n"
        "assert callable(compose) and compose.__name__ == 'compose', compose",
        tmp_path,
    )
    assert "templiqx_local.store" not in loaded


def test_the_catalog_loads_no_service_and_no_parser(tmp_path: Path) -> None:
    loaded = _fresh("from templiqx_application import CATALOG\nassert CATALOG", tmp_path)
    heavy = {"yaml", "jsonschema_rs", "templiqx_application.service", "templiqx_core.parse"}
    assert heavy.isdisjoint(loaded)


def _command(argv: list[str]) -> str:
    return (
        "import contextlib, io\n"
        "from templiqx_cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "assert code == 0, code"
    )


def test_help_loads_neither_the_service_nor_the_yaml_reader_nor_the_schema_engine(
    tmp_path: Path,
) -> None:
    loaded = _fresh(_command(["--help"]), tmp_path)
    assert "click" in loaded  # the probe ran the real command
    heavy = {
        "yaml",
        "jsonschema_rs",
        "templiqx_application.service",
        "templiqx_local.store",
        "templiqx_core.parse",
        "click.shell_completion",
    }
    assert heavy.isdisjoint(loaded)


@pytest.mark.parametrize(
    "argv",
    [["discover"], ["validate", "welcome"]],
    ids=["discover", "validate"],
)
def test_commands_on_the_default_runtime_scan_no_entry_points(
    argv: list[str], tmp_path: Path
) -> None:
    root = tmp_path / "packages"
    shutil.copytree(FIXTURES / "welcome", root / "welcome")
    loaded = _fresh(_command(["--root", str(root), *argv]), tmp_path)
    assert "templiqx_application.service" in loaded  # the probe ran the real command
    assert "importlib.metadata" not in loaded


def test_discover_loads_no_schema_engine(tmp_path: Path) -> None:
    root = tmp_path / "packages"
    shutil.copytree(FIXTURES / "welcome", root / "welcome")
    loaded = _fresh(_command(["--root", str(root), "discover"]), tmp_path)
    assert "jsonschema_rs" not in loaded


def test_blocking_commands_load_no_asyncio(tmp_path: Path) -> None:
    """asyncio (with ssl, ~20 ms) is for the async API and streams; validate never needs it."""
    root = tmp_path / "packages"
    shutil.copytree(FIXTURES / "welcome", root / "welcome")
    loaded = _fresh(_command(["--root", str(root), "validate", "welcome"]), tmp_path)
    assert "templiqx_application.service" in loaded  # the probe ran the real command
    assert "asyncio" not in loaded
    assert "templiqx_application.stream_runs" not in loaded


def test_help_reads_entry_points_without_importlib_metadata(tmp_path: Path) -> None:
    """``--help`` lists the runtimes and plugins from the metadata files (issue #33), and
    imports nothing to print an envelope or run a worker."""
    loaded = _fresh(_command(["--help"]), tmp_path)
    assert "templiqx_cli.group" in loaded  # the probe ran the real command
    light = {
        "importlib.metadata",
        "email",
        "zipfile",
        "pathlib",
        "templiqx_local",
        "templiqx_cli.output",
        "templiqx_cli.hints",
        "templiqx_cli.snippets",
        "concurrent.futures",
        "shutil",  # click's help formatter imports it for the width, which the group sets
    }
    assert light.isdisjoint(loaded), sorted(light & set(loaded))


def test_validate_starts_no_worker_machinery_and_edits_no_manifest(tmp_path: Path) -> None:
    root = tmp_path / "packages"
    shutil.copytree(FIXTURES / "welcome", root / "welcome")
    loaded = _fresh(_command(["--root", str(root), "validate", "welcome"]), tmp_path)
    assert "templiqx_application.service" in loaded  # the probe ran the real command
    assert "concurrent.futures" not in loaded
    assert "templiqx_local.manifest_edit" not in loaded


def test_a_command_imports_only_its_own_operation_module(tmp_path: Path) -> None:
    """The service imports an operation's module on its first call: ``validate`` loads no
    execution, eval, authoring or artifact code, ``compile`` no validation or eval code."""
    root = tmp_path / "packages"
    shutil.copytree(FIXTURES / "welcome", root / "welcome")
    validated = _fresh(_command(["--root", str(root), "validate", "welcome"]), tmp_path)
    assert "templiqx_application.validation" in validated  # the probe ran the real command
    others = {
        "templiqx_application.execution",
        "templiqx_application.evals",
        "templiqx_application.authoring",
        "templiqx_application.artifacts",
    }
    assert others.isdisjoint(validated), sorted(others & set(validated))
    values = str(root / "welcome" / "evals" / "vip-request.json")
    argv = ["--root", str(root), "compile", "welcome", "onboarding-summary", "--values", values]
    compiled = _fresh(_command([*argv, "--capability", "structured_output"]), tmp_path)
    assert "templiqx_application.execution" in compiled  # the probe ran the real command
    others = {"templiqx_application.validation", "templiqx_application.evals"}
    assert others.isdisjoint(compiled), sorted(others & set(compiled))


def test_reading_commands_import_no_archive_or_token_modules(tmp_path: Path) -> None:
    """``shutil`` (with ``bz2`` and ``lzma``) is for removing a package's folder,
    ``secrets`` (with ``random``'s C state, ``base64``, ``hmac``) was only for temporary names,
    and the partial-JSON parser is for streams: a command that reads packages imports none."""
    root = tmp_path / "packages"
    shutil.copytree(FIXTURES / "welcome", root / "welcome")
    for argv in (["discover"], ["validate", "welcome"]):
        loaded = _fresh(_command(["--root", str(root), *argv]), tmp_path)
        assert "templiqx_local.store" in loaded  # the probe ran the real command
        heavy = {"shutil", "secrets", "lzma", "bz2", "templiqx_contracts.partial_json"}
        assert heavy.isdisjoint(loaded), (argv, sorted(heavy & set(loaded)))
