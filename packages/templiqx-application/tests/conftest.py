"""Fixtures of the templiqx-application tests.

Reference packages are read in place through the ``reference`` fixture; a test that writes
copies what it needs into ``tmp_path`` first. Small packages of the tests' own are written by
:func:`write_package`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from templiqx_application import TempliqxService
from templiqx_contracts import OperationEnvelope
from templiqx_local import FilesystemArtifactWorkspace, FilesystemPackageStore
from templiqx_ports import RuntimeAdapter

CAPS = ["structured_output"]

GREETING = """\
api_version: templiqx/v1alpha1
id: {id}
version: 1.0.0
description: Greets someone.
inputs:
  name:
    schema: {{type: string, minLength: 1}}
    required: true
capabilities: [structured_output]
messages:
  - role: user
    content:
      - {{kind: text, value: "Hello "}}
      - kind: interpolate
        expression: {{kind: ref, path: inputs.name}}
output_schema:
  type: object
  additionalProperties: false
  required: [greeting]
  properties:
    greeting: {{type: string}}
runtime_policy: {{temperature: 0}}
evals:
  - id: ada
    inputs: {{name: Ada}}
    fake_output: {{greeting: Hello Ada}}
"""


def greeting_source(contract_id: str = "hello") -> str:
    """A small valid contract with one passing eval."""
    return GREETING.format(id=contract_id)


def write_package(
    root: Path,
    name: str,
    *,
    contracts: Mapping[str, str] | None = None,
    files: Mapping[str, str | bytes] | None = None,
    **manifest: Any,
) -> Path:
    """Write a package folder: manifest fields as keywords, contract sources, other files."""
    folder = root / name
    for sub in ("contracts", "components", "evals", "migrations", "templates", "translations"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    contracts = dict(contracts or {})
    data: dict[str, Any] = {
        "api_version": "templiqx/v1alpha1",
        "package": name,
        "version": "0.1.0",
        "contracts": list(contracts),
    }
    data.update(manifest)
    (folder / "templiqx.yaml").write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    for contract_id, source in contracts.items():
        (folder / "contracts" / f"{contract_id}.yaml").write_text(source, "utf-8")
    for path, content in (files or {}).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, "utf-8")
    return folder


def codes(envelope: OperationEnvelope) -> list[str]:
    """The diagnostic codes of an envelope, in order."""
    return [d.code for d in envelope.diagnostics]


def fixed_clock() -> datetime:
    """A clock inside the reference authorized contexts' validity window."""
    return datetime(2027, 1, 1, tzinfo=UTC)


ServiceFactory = Callable[..., TempliqxService]
PackageWriter = Callable[..., Path]


@pytest.fixture
def write_pkg() -> PackageWriter:
    """:func:`write_package`."""
    return write_package


@pytest.fixture
def greeting() -> Callable[..., str]:
    """:func:`greeting_source`."""
    return greeting_source


@pytest.fixture
def make_service(tmp_path: Path) -> ServiceFactory:
    """Build a service over a packages root, with a fresh workspace under ``tmp_path``."""

    def build(root: Path, runtime: RuntimeAdapter | None = None, **kwargs: Any) -> TempliqxService:
        kwargs.setdefault("clock", fixed_clock)
        return TempliqxService(
            FilesystemPackageStore(root),
            FilesystemArtifactWorkspace(tmp_path / "workspace"),
            runtime,
            **kwargs,
        )

    return build


@pytest.fixture
def packages_root(reference: Path) -> Path:
    """The reference's example packages (read only)."""
    return reference / "packages"


@pytest.fixture
def copied_packages(reference: Path, tmp_path: Path) -> Path:
    """A writable copy of the reference's example packages."""
    target = tmp_path / "packages"
    shutil.copytree(reference / "packages", target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    target.chmod(0o755)
    return target


@pytest.fixture
def scratch_root(tmp_path: Path) -> Path:
    """An empty packages root."""
    root = tmp_path / "root"
    root.mkdir()
    return root
