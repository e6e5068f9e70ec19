"""Scenario files are read within documented limits (regressions found by the reliability
suite, issue #9 R7): oversized files are refused unread, deep nesting and alias bombs are
refused with messages naming the limit, and nothing but a ScenarioError escapes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from templiqx_mock import (
    ALIAS_EXPANSION_FACTOR,
    MAX_EXPANDED_BYTES,
    MAX_NESTING_DEPTH,
    MAX_SCENARIO_BYTES,
    ScenarioError,
    ScenarioManifest,
    load_inventory,
    read_json_file,
    runtime_from_path,
)
from templiqx_mock.yaml_reader import YAMLReadError, read_yaml


def test_limits_are_documented_constants() -> None:
    assert MAX_SCENARIO_BYTES == 8 * 1024 * 1024
    assert MAX_NESTING_DEPTH == 128
    assert ALIAS_EXPANSION_FACTOR == 100
    assert MAX_EXPANDED_BYTES == 16 * 1024 * 1024


def _laughs(levels: int = 9) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * 10) + "]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def _refused(path: Path, limit: str) -> ScenarioError:
    started = time.perf_counter()
    with pytest.raises(ScenarioError) as raised:
        runtime_from_path(path)
    assert time.perf_counter() - started < 1.0
    assert raised.value.code == "TQX_DATA_INVALID"
    assert f"({limit})" in str(raised.value)
    return raised.value


@pytest.mark.parametrize("name", ["huge.json", "huge.yaml"])
def test_an_oversized_file_is_refused_unread(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with path.open("wb") as out:
        out.truncate(MAX_SCENARIO_BYTES + 1)  # sparse: costs neither disk nor memory
    error = _refused(path, "MAX_SCENARIO_BYTES")
    assert f"is {MAX_SCENARIO_BYTES + 1} bytes" in str(error)


@pytest.mark.parametrize(
    ("text", "as_yaml"),
    [
        ("[" * 10_000 + "]" * 10_000, False),
        ('{"a":' * 10_000 + "1" + "}" * 10_000, False),
        ("[" * 129 + "]" * 129, False),
        ("[" * 10_000 + "]" * 10_000, True),
        ("- " * 10_000 + "x\n", True),
        ("[" * 129 + "]" * 129, True),
    ],
)
def test_deep_nesting_is_refused(tmp_path: Path, text: str, as_yaml: bool) -> None:
    path = tmp_path / ("deep.yaml" if as_yaml else "deep.json")
    path.write_text(text)
    _refused(path, "MAX_NESTING_DEPTH")


def test_nesting_at_the_limit_is_not_a_depth_error() -> None:
    text = "[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH
    for load in (ScenarioManifest.from_json, ScenarioManifest.from_yaml):
        with pytest.raises(ScenarioError) as raised:
            load(text)
        assert "MAX_NESTING_DEPTH" not in str(raised.value)  # a shape error, not a depth error


def test_a_billion_laughs_manifest_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_laughs())
    _refused(path, "ALIAS_EXPANSION_FACTOR")


def test_a_string_alias_bomb_manifest_is_refused(tmp_path: Path) -> None:
    # 1 MB of YAML and ~1,000 nodes (under the node budget), a gigabyte once expanded.
    path = tmp_path / "strings.yaml"
    aliases = "".join("  - *s\n" for _ in range(1000))
    path.write_text(f"description: &s {'x' * 1_000_000}\nsteps:\n{aliases}")
    error = _refused(path, "MAX_EXPANDED_BYTES")
    assert "at line 1 column 14" in str(error)  # the repeated text (aliases share its node)


def test_the_text_budget_is_exact() -> None:
    size = (MAX_EXPANDED_BYTES - 4) // 4  # four copies plus the keys `aa` and `bb`
    at_budget = f"aa: &a {'x' * size}\nbb: [*a, *a, *a]\n"
    assert len(read_yaml(at_budget)["bb"]) == 3
    with pytest.raises(YAMLReadError, match="MAX_EXPANDED_BYTES"):
        read_yaml(at_budget.replace("x", "xx", 1))
    accented = "é" * (MAX_EXPANDED_BYTES // 8 + 1)  # counted in UTF-8 bytes, not characters
    with pytest.raises(YAMLReadError, match="MAX_EXPANDED_BYTES"):
        read_yaml(f"a: &a {accented}\nb: [*a, *a, *a]\n")


def test_in_memory_documents_are_size_checked() -> None:
    huge = '{"a": "' + "x" * MAX_SCENARIO_BYTES + '"}'
    for load in (ScenarioManifest.from_json, ScenarioManifest.from_yaml):
        with pytest.raises(ScenarioError) as raised:
            load(huge)
        assert "(MAX_SCENARIO_BYTES)" in str(raised.value)


def test_expected_output_and_inventory_files_are_bounded(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(ScenarioError, match="MAX_NESTING_DEPTH"):
        read_json_file(deep)
    with pytest.raises(ScenarioError, match="MAX_NESTING_DEPTH"):
        load_inventory(deep, "pkg")


def test_a_nul_in_a_scenario_path_is_a_scenario_error(tmp_path: Path) -> None:
    # Regression (issue #9 R1): a NUL in expected_output made runtime_from_path raise ValueError.
    welcome = Path(__file__).resolve().parents[3] / "fixtures" / "packages" / "welcome"
    manifest = json.loads((welcome / "scenarios" / "stream-vip" / "manifest.json").read_text())
    manifest["expected_output"] = "out\u0000put.json"
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    with pytest.raises(ScenarioError, match="expected_output must be a path relative") as raised:
        runtime_from_path(path)
    assert raised.value.code == "TQX_DATA_INVALID"
    with pytest.raises(ScenarioError, match="must not contain NUL"):
        runtime_from_path(str(tmp_path / "bad\x00name.json"))
