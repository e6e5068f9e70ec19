"""templiqx-local composition: compose() and load_runtime()."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from templiqx_application import DeterministicFakeRuntime, TempliqxService
from templiqx_contracts import decode_json
from templiqx_local import RuntimeSelectionError, available_runtimes, compose, load_runtime
from templiqx_mock import ScriptedRuntime
from templiqx_ports import InvalidPathError


def test_compose_defaults(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with pytest.raises(InvalidPathError, match=r"packages root .* does not exist"):
        compose(root)
    assert not root.exists()
    root.mkdir()
    service = compose(root)
    assert isinstance(service, TempliqxService)
    assert service.runtime_descriptor.id == "templiqx.fake"
    assert os.listdir(root) == []  # composing writes nothing, not even the workspace
    assert service.list_workspace_artifacts("demo").result == []
    assert os.listdir(root) == []
    created = service.create_package("demo", "0.1.0")
    assert created.ok
    assert [m.package for m in service.discover_packages().result] == ["demo"]
    (root / ".templiqx-workspace" / "demo").mkdir(parents=True)
    (root / ".templiqx-workspace" / "demo" / "out.txt").write_text("x")
    assert [a.path for a in service.list_workspace_artifacts("demo").result] == ["out.txt"]


def test_compose_with_workspace_and_runtime(reference: Path, tmp_path: Path) -> None:
    runtime = ScriptedRuntime.success()
    service = compose(reference, tmp_path / "ws", runtime)
    assert not (tmp_path / "ws").exists()
    request = decode_json((reference / "crm3/evals/bli-61-request.json").read_bytes())
    output = decode_json((reference / "crm3/evals/bli-61-output.json").read_bytes())
    envelope = service.execute_contract(
        "crm3",
        "bli-61-date-term-extraction",
        inputs=request["inputs"],
        context=request["context"],
        capabilities=["structured_output"],
        fixture_output=output,
    )
    assert envelope.ok
    assert envelope.result.adapter == service.runtime_descriptor
    assert runtime.stats().attempts == 1


def test_compose_may_create_the_root_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "new" / "root"
    service = compose(root, create_root=True)
    assert root.is_dir()
    assert service.create_package("demo", "0.1.0").ok


def test_load_runtime_by_entry_point_name() -> None:
    assert {"fake", "mock"} <= set(available_runtimes())
    assert isinstance(load_runtime("fake"), DeterministicFakeRuntime)
    with pytest.raises(RuntimeSelectionError, match="unknown runtime 'nope'; installed runtimes: "):
        load_runtime("nope")


def test_load_runtime_reports_factory_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEMPLIQX_MOCK_SCENARIO", raising=False)
    with pytest.raises(RuntimeSelectionError, match="runtime 'mock' could not be created"):
        load_runtime("mock")
