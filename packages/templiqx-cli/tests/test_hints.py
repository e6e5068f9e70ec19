"""What people see on stderr for a failed envelope: failed cases, their own files, hints.

Each test also checks that ``--json`` prints the same envelope and nothing on stderr: the
human additions never change what the other surfaces compare.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from templiqx_cli import main

CONTRACT = "onboarding-summary"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run ``argv`` for people and with ``--json``; the exit code and the human stderr."""
    code = main(argv)
    human = capsys.readouterr()
    assert main(["--json", *argv]) == code
    machine = capsys.readouterr()
    assert machine.err == ""
    assert json.loads(machine.out) == json.loads(human.out)
    return code, human.err


def test_a_missing_package_names_the_root_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _run(["validate", "welcome"], capsys)
    assert code == 2
    lines = err.splitlines()
    assert lines[1] == "TQX_NOT_FOUND error -: not found: welcome"
    assert lines[2].startswith("  help: There is no package folder 'welcome' under the packages")
    assert lines[-1] == (
        "hint: no package folder 'welcome' in the packages root '.' (the default; no --root "
        "given); pass --root DIR naming the folder that holds the package folders"
    )
    Path("pkgs").mkdir()
    code, err = _run(["--root", "pkgs", "diff", "welcome", "a", "other", "b"], capsys)
    assert code == 2
    assert err.splitlines()[-1].startswith(
        "hint: no package folder 'welcome' in the packages root 'pkgs' (--root); pass --root DIR"
    )


def test_failed_cases_show_why_they_failed(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--root", str(packages_root), "test", "welcome", "--capability", "structured_output"]
    code, err = _run(argv, capsys)
    assert code == 2
    lines = err.splitlines()
    assert lines[1] == "TQX_TEST_FAILED error /cases: 1 fixture(s) failed"
    assert lines[2] == "failed case account-digest/quiet-week:"
    assert lines[3] == (
        "  TQX_CAPABILITY_UNSUPPORTED error /capabilities: target lacks required capability 'text'"
    )
    assert lines[4] == "    at welcome/contracts/account-digest.yaml"
    assert lines[5].startswith("    help: ")
    assert lines[-1] == (
        "hint: the contract requires 'text', which this command did not offer: "
        "add --capability text"
    )
    argv = ["--root", str(packages_root), "run-eval", "welcome", "account-digest", "quiet-week"]
    code, err = _run(argv, capsys)
    assert code == 2
    assert "failed case account-digest/quiet-week:" in err.splitlines()
    assert err.splitlines()[-1].endswith("add --capability text")


def test_a_missing_capability_suggests_the_option(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    for command in ("compile", "render", "execute"):
        argv = ["--root", str(packages_root), command, "welcome", CONTRACT, "--values", str(values)]
        code, err = _run(argv, capsys)
        assert code == 2
        assert err.splitlines()[-1] == (
            "hint: the contract requires 'structured_output', which this command did not "
            "offer: add --capability structured_output"
        ), command


def test_nothing_on_stderr_once_the_capability_is_offered(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    argv = ["--root", str(packages_root), "compile", "welcome", CONTRACT, "--values", str(values)]
    code, err = _run([*argv, "--capability", "structured_output"], capsys)
    assert (code, err) == (0, "")


def test_a_put_error_is_located_in_the_users_file(
    tmp_path: Path, packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.yaml"
    source.write_text("api_version: templiqx/v1alpha1\nid: bad\nversion: [1.0\n")
    code, err = _run(["--root", str(packages_root), "put", "welcome", "bad", str(source)], capsys)
    assert code == 2
    lines = err.splitlines()
    assert lines[1].startswith("TQX_PARSE_YAML error -: invalid YAML: ")
    assert lines[2] == f"  at {source}:4:1 (the contract text given for welcome/contracts/bad.yaml)"
    assert lines[3].startswith("  help: Fix the YAML syntax at the reported line and column")
    source.write_text("api_version: templiqx/v1alpha1\nid: bad\nversion: 1.0.0\nbogus: 1\n")
    code, err = _run(["--root", str(packages_root), "put", "welcome", "bad", str(source)], capsys)
    assert err.splitlines()[3] == (
        "  help: Use the strict Templiqx YAML schema; unknown fields are rejected."
    )


def test_a_missing_fixture_output_says_which_option_gives_it(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    argv = ["--root", str(packages_root), "execute", "welcome", CONTRACT, "--values", str(values)]
    code, err = _run([*argv, "--capability", "structured_output"], capsys)
    assert code == 2
    lines = err.splitlines()
    assert (
        lines[1] == "TQX_DATA_INVALID error -: invalid data: fake runtime requires fixture_output"
    )
    assert "--fixture-output FILE" in lines[2]
