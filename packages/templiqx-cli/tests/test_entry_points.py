"""The entry-point reader of ``--help`` (issue #33) agrees with ``importlib.metadata``."""

from __future__ import annotations

import sys
from importlib.metadata import distribution, entry_points
from pathlib import Path

import pytest

from templiqx_cli.entry_points import _normalized, group_entries, group_names
from templiqx_cli.group import PLUGIN_GROUP
from templiqx_cli.group import entry_points as cli_entry_points

GROUPS = sorted(entry_points().groups)


@pytest.mark.parametrize("group", GROUPS)
def test_every_group_in_this_environment_lists_the_same_names(group: str) -> None:
    expected = sorted({entry.name for entry in entry_points(group=group)})
    assert group_names(group) == expected


def test_entries_carry_their_value_and_their_distribution_summary() -> None:
    found = {entry.name: entry for entry in group_entries("templiqx.runtimes") or []}
    official = {entry.name: entry for entry in entry_points(group="templiqx.runtimes")}
    assert set(found) == set(official)
    for name, entry in found.items():
        assert entry.value == official[name].value
        assert entry.load() is official[name].load()
    plugin = next(entry for entry in cli_entry_points(group=PLUGIN_GROUP) if entry.name)
    dist = distribution("templiqx-conformance")
    assert plugin.summary() == dist.metadata["Summary"]


def test_a_group_nobody_declares_is_empty() -> None:
    assert group_names("templiqx.no-such-group") == []


def test_a_zipped_path_entry_leaves_the_answer_to_importlib_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    monkeypatch.setattr(sys, "path", [str(archive), *sys.path])
    assert group_names("templiqx.runtimes") is None
    names = {entry.name for entry in cli_entry_points(group="templiqx.runtimes")}
    assert names == {entry.name for entry in entry_points(group="templiqx.runtimes")}


def test_the_first_distribution_of_a_name_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for folder, runtime in (("first", "one"), ("second", "two")):
        meta = tmp_path / folder / "Some_Dist-1.0.dist-info"
        meta.mkdir(parents=True)
        (meta / "entry_points.txt").write_text(
            f"# a comment\n[templiqx.test-group]\n{runtime} = pkg.mod:factory\n\n[other]\nx = y\n",
            encoding="utf-8",
        )
    monkeypatch.setattr(sys, "path", [str(tmp_path / "first"), str(tmp_path / "second")])
    assert group_names("templiqx.test-group") == ["one"]
    assert _normalized("Some.Dist--x-1.0.dist-info") == "some_dist"
