"""Every ``--help`` example runs as written from a clone's root, and succeeds.

The examples run in one sequence, in a folder holding a copy of the repository's ``fixtures/``
(what a clone's root offers), so later ones see what earlier ones wrote (``create demo`` before
``put demo …``). Only the placeholders a reader fills in are replaced: ``<FP>`` by the
fingerprint the command's help says to use, ``<SHA256>`` by the artifact's SHA-256. The one
thing no command can make — a workspace artifact — is written before ``read-artifact``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from templiqx_cli import main
from templiqx_cli.app import build_group

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
ROOT = "fixtures/packages"
ARTIFACT = b"notes for the welcome package\n"


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["--root", ROOT, "--json", *argv]) == 0
    envelope: dict[str, object] = json.loads(capsys.readouterr().out)
    return envelope


def _fingerprint(argv: list[str], key: str) -> Callable[[pytest.CaptureFixture[str]], str]:
    def read(capsys: pytest.CaptureFixture[str]) -> str:
        fingerprints = _json(argv, capsys)["fingerprints"]
        assert isinstance(fingerprints, dict)
        return str(fingerprints[key])

    return read


def _artifact_sha(capsys: pytest.CaptureFixture[str]) -> str:
    return hashlib.sha256(ARTIFACT).hexdigest()


def _write_artifact() -> None:
    folder = Path(ROOT) / ".templiqx-workspace" / "welcome"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_bytes(ARTIFACT)


MANIFEST_FP = _fingerprint(["export-package-identity", "demo"], "manifest")
CONTRACT_FP = _fingerprint(["inspect", "demo", "account-digest"], "contract")

# (command, what <FP>/<SHA256> stand for, what to prepare first), in the order they run.
SEQUENCE: list[
    tuple[str, Callable[[pytest.CaptureFixture[str]], str] | None, Callable[[], None] | None]
] = [
    ("catalog", None, None),
    ("discover", None, None),
    ("create", None, None),
    ("put", None, None),
    ("inspect", None, None),
    ("validate", None, None),
    ("compile", None, None),
    ("render", None, None),
    ("execute", None, None),
    ("batch", None, None),
    ("export-package-identity", None, None),
    ("update-package", MANIFEST_FP, None),
    ("sign-package", MANIFEST_FP, None),
    ("verify-package-trust", None, None),
    ("test", None, None),
    ("list-evals", None, None),
    ("run-eval", None, None),
    ("diff", None, None),
    ("explain", None, None),
    ("help", None, None),
    ("read-artifact", None, _write_artifact),
    ("list-workspace-artifacts", None, None),
    ("delete-workspace-artifact", _artifact_sha, None),
    ("delete", CONTRACT_FP, None),
    ("delete-package", MANIFEST_FP, None),
]


def _examples(command: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main([command, "--help"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    title = "Example:" if "Example:" in lines else "Examples:"
    block = lines[lines.index(title) + 1 :]
    return block[: block.index("")] if "" in block else block


def _split(line: str) -> tuple[dict[str, str], list[str]]:
    """The ``NAME=value`` settings in front of a command line, and its words."""
    words = shlex.split(line, comments=True)
    settings: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isupper():
        name, value = words.pop(0).split("=", 1)
        settings[name] = value
    return settings, words


def _run_example(line: str, monkeypatch: pytest.MonkeyPatch) -> int:
    settings, words = _split(line)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    assert words[0] == "templiqx", line
    return main(words[1:])


def test_every_command_example_is_in_the_sequence(capsys: pytest.CaptureFixture[str]) -> None:
    group = build_group()
    commands = {
        name
        for name in group.list_commands(click.Context(group))
        if name in group.commands
        and any(_split(line)[1][:1] == ["templiqx"] for line in _examples(name, capsys))
    }
    # `demo` installs uv and runs from a clone: the demo's own tests cover it.
    assert commands == {command for command, _, _ in SEQUENCE}


def test_the_help_examples_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    for name in ("TEMPLIQX_PACKAGE_SIGNING_KEY", "TEMPLIQX_PACKAGE_STRICT"):
        monkeypatch.delenv(name, raising=False)
    ran = 0
    for command, placeholder, prepare in SEQUENCE:
        if prepare is not None:
            prepare()
        for line in _examples(command, capsys):
            if placeholder is not None:
                value = placeholder(capsys)
                line = line.replace("<FP>", value).replace("<SHA256>", value)
            assert "<" not in line, f"unfilled placeholder in: {line}"
            code = _run_example(line, monkeypatch)
            out = capsys.readouterr()
            assert code == 0, f"{line}\n{out.err}"
            ran += 1
    # validate, verify-package-trust and batch show two examples, help three
    assert ran == len(SEQUENCE) + 5
    assert not (tmp_path / "fixtures" / "packages" / "demo").exists(), "the sequence cleans up"


def test_help_json_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #28: ``templiqx help --json`` (and ``templiqx --json help``) print data, not text."""
    assert main(["help", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["program"] == "templiqx"
    names = [command["name"] for command in data["commands"]]
    assert {"validate", "execute", "demo", "help"} <= set(names)
    assert [o["name"] for o in data["options"]][:3] == ["--root", "--json", "--runtime"]
    assert "fake" in data["runtimes"]
    assert main(["--json", "help", "execute"]) == 0
    execute = json.loads(capsys.readouterr().out)
    assert execute["usage"] == "templiqx execute [OPTIONS] PACKAGE CONTRACT"
    assert [a["name"] for a in execute["arguments"]] == ["PACKAGE", "CONTRACT"]
    flags = {o["name"]: o for o in execute["options"]}
    assert flags["--values"]["metavar"] == "FILE"
    assert flags["--stream"]["takes_value"] is False
    assert flags["--capability"]["repeatable"] is True
    assert "\b" not in execute["help"]
