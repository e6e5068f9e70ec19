"""``create_runtime()``: the ``mock`` entry point configured from the environment."""

from __future__ import annotations

import json
import pickle
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import Complete, Delta, ExecutionRequest, Failed, StreamEvent, fingerprint
from templiqx_mock import (
    MockConfigurationError,
    ScenarioError,
    ScriptedRuntime,
    create_runtime,
    runtime_from_path,
)
from templiqx_ports import PortError, RuntimeFailureError

MakeRequest = Callable[..., ExecutionRequest]
BLI_61_OUTPUT_FP = "66d6c3fbb03611b4b22deabbe9ef669e5ad69f59c1e90be4dee92d9c3a5188de"


def test_entry_point_is_registered() -> None:
    (point,) = [p for p in entry_points(group="templiqx.runtimes") if p.name == "mock"]
    assert point.value == "templiqx_mock:create_runtime"
    assert point.load() is create_runtime


def test_entry_point_factory_builds_from_the_environment(
    crm3: Path, monkeypatch: pytest.MonkeyPatch, make_request: MakeRequest
) -> None:
    manifest = crm3 / "scenarios" / "intake-document-01" / "manifest.json"
    monkeypatch.setenv("TEMPLIQX_MOCK_SCENARIO", str(manifest))
    monkeypatch.delenv("TEMPLIQX_MOCK_PACE_MS", raising=False)
    (point,) = [p for p in entry_points(group="templiqx.runtimes") if p.name == "mock"]
    runtime = point.load()()
    assert isinstance(runtime, ScriptedRuntime)
    # Without a fixture output the manifest's expected_output file is the output.
    receipt = runtime.execute(make_request())
    assert receipt.output_fingerprint == BLI_61_OUTPUT_FP
    assert receipt.output_schema_valid is True
    # A request fixture output still wins, as in the reference.
    assert runtime.execute(make_request({"own": 1})).output == {"own": 1}
    assert runtime.stats().elapsed_ms == 50


def test_unset_or_blank_scenario_names_the_variable() -> None:
    for environ in ({}, {"TEMPLIQX_MOCK_SCENARIO": "   "}):
        with pytest.raises(MockConfigurationError) as caught:
            create_runtime(environ)
        assert "TEMPLIQX_MOCK_SCENARIO is not set" in str(caught.value)
        assert str(caught.value).startswith("invalid mock runtime configuration: ")
        assert caught.value.code == "TQX_DATA_INVALID"
        assert isinstance(caught.value, PortError)


def test_missing_manifest_names_the_variable_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(MockConfigurationError) as caught:
        create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(missing)})
    text = str(caught.value)
    assert f"TEMPLIQX_MOCK_SCENARIO='{missing}'" in text
    assert "No such file or directory" in text
    assert caught.value.code == "TQX_IO"


def test_invalid_manifest_names_the_variable(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"api_version": "x"}), encoding="utf-8")
    with pytest.raises(MockConfigurationError) as caught:
        create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(path)})
    assert "TEMPLIQX_MOCK_SCENARIO=" in str(caught.value)
    assert "invalid JSON mock scenario" in str(caught.value)
    assert caught.value.code == "TQX_DATA_INVALID"
    assert isinstance(caught.value.__cause__, ScenarioError)


@pytest.mark.parametrize("value", ["abc", "-5", "1.5", "٣"])
def test_bad_pace_names_the_variable(crm3: Path, value: str) -> None:
    manifest = crm3 / "scenarios" / "intake-document-01" / "manifest.json"
    with pytest.raises(MockConfigurationError) as caught:
        create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(manifest), "TEMPLIQX_MOCK_PACE_MS": value})
    assert f"TEMPLIQX_MOCK_PACE_MS={value!r}" in str(caught.value)


def test_pace_from_the_environment_paces_the_stream(
    welcome_stream: Path, make_request: MakeRequest
) -> None:
    runtime = create_runtime(
        {"TEMPLIQX_MOCK_SCENARIO": str(welcome_stream), "TEMPLIQX_MOCK_PACE_MS": "400"}
    )
    cancel = threading.Event()
    events: list[StreamEvent] = []

    def sink(event: StreamEvent) -> None:
        events.append(event)
        cancel.set()

    with pytest.raises(RuntimeFailureError):
        runtime.execute_streaming(make_request(), sink, cancel=cancel)
    assert [type(e) for e in events] == [Delta, Failed]
    unpaced = create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(welcome_stream)})
    collected: list[StreamEvent] = []
    unpaced.execute_streaming(make_request(), collected.append)
    assert len(collected) == 19
    assert isinstance(collected[-1], Complete)


def _write(folder: Path, manifest: dict[str, Any], output: Any | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if output is not None:
        (folder / "out.json").write_text(json.dumps(output), encoding="utf-8")
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path


def test_expected_output_must_match_its_fingerprint(
    tmp_path: Path, steps_manifest: Callable[..., dict[str, Any]], make_request: MakeRequest
) -> None:
    good = steps_manifest(
        expected_output="out.json", expected_output_fingerprint=fingerprint({"a": 1})
    )
    path = _write(tmp_path / "good", good, {"a": 1})
    assert runtime_from_path(path).execute(make_request()).output == {"a": 1}
    path = _write(tmp_path / "bad", good, {"a": 2})
    with pytest.raises(MockConfigurationError) as caught:
        create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(path)})
    assert "expected_output out.json has fingerprint" in str(caught.value)
    assert "expected_output_fingerprint" in str(caught.value)


@pytest.mark.parametrize("relative", ["/etc/passwd", "..\\out.json", ""])
def test_expected_output_path_must_be_relative(
    tmp_path: Path, steps_manifest: Callable[..., dict[str, Any]], relative: str
) -> None:
    path = _write(tmp_path, steps_manifest(expected_output=relative))
    with pytest.raises(ScenarioError, match="expected_output must be a path relative"):
        runtime_from_path(path)


def test_expected_output_must_be_json(
    tmp_path: Path, steps_manifest: Callable[..., dict[str, Any]]
) -> None:
    path = _write(tmp_path, steps_manifest(expected_output="out.json"))
    (tmp_path / "out.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(MockConfigurationError, match="invalid JSON mock scenario"):
        create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(path)})


def test_yaml_manifest_from_the_environment(tmp_path: Path, make_request: MakeRequest) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "api_version: templiqx.mock/v1alpha1\n"
        "id: yaml\n"
        "contract: greeting\n"
        "kind: failure\n"
        "receipt_payload_policy: no_successful_receipt\n"
        "steps:\n"
        "  - {id: rr, kind: request_received}\n"
        "  - id: down\n"
        "    kind: runtime_failure\n"
        "    failure: {code: TQX_RUNTIME_UNAVAILABLE, detail: gateway down}\n",
        encoding="utf-8",
    )
    runtime = create_runtime({"TEMPLIQX_MOCK_SCENARIO": str(path)})
    with pytest.raises(RuntimeFailureError, match="TQX_RUNTIME_UNAVAILABLE: gateway down"):
        runtime.execute(make_request())


def test_configuration_errors_pickle() -> None:
    error = MockConfigurationError("m", code="TQX_IO")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert copy.code == "TQX_IO"
