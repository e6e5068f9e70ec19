"""What people see for a failed envelope: each diagnostic, failed cases, their own files, hints.

Each test also runs the command with ``--json``: same exit code, one compact envelope, nothing on
stderr — the human additions never change what the other surfaces compare. Diagnostics are
expected exactly as ``render_diagnostic`` shows them (its own tests say how that looks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from templiqx_cli import main
from templiqx_cli.output import render_diagnostic
from templiqx_cli.snippets import SourceFiles
from templiqx_contracts import Diagnostic

CONTRACT = "onboarding-summary"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, Any]]:
    """Run ``argv`` for people and with ``--json``: the exit code, the human text, the envelope."""
    code = main(argv)
    human = capsys.readouterr()
    assert human.err == ""
    assert main(["--json", *argv]) == code
    machine = capsys.readouterr()
    assert machine.err == ""
    envelope: dict[str, Any] = json.loads(machine.out)
    return code, human.out, envelope


def _shown(diagnostic: dict[str, Any], files: Mapping[str, str] | None = None) -> str:
    return render_diagnostic(msgspec.convert(diagnostic, Diagnostic), files)


def test_a_missing_package_names_the_root_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, envelope = _run(["validate", "welcome"], capsys)
    assert code == 2
    assert out.splitlines()[0] == "✗ validate welcome: 1 error"
    assert _shown(envelope["diagnostics"][0]) in out
    assert "help: There is no package folder 'welcome' under the packages" in out
    assert out.splitlines()[-1] == (
        "hint: no package folder 'welcome' in the packages root '.' (the default; no --root "
        "given); pass --root DIR naming the folder that holds the package folders"
    )
    Path("pkgs").mkdir()
    code, out, _ = _run(["--root", "pkgs", "diff", "welcome", "a", "other", "b"], capsys)
    assert code == 2
    assert out.splitlines()[-1].startswith(
        "hint: no package folder 'welcome' in the packages root 'pkgs' (--root); pass --root DIR"
    )


def test_failed_cases_show_why_they_failed(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--root", str(packages_root), "test", "welcome", "--capability", "structured_output"]
    code, out, envelope = _run(argv, capsys)
    assert code == 2
    lines = out.splitlines()
    assert lines[:4] == [
        "✗ test welcome: 2 passed, 1 failed",
        "  ✓ onboarding-summary/vip-business-nl",
        "  ✓ onboarding-summary/starter-en",
        "  ✗ account-digest/quiet-week",
    ]
    failed = envelope["result"]["cases"][2]
    shown = _shown(failed["diagnostics"][0], SourceFiles(str(packages_root)))  # with its snippet
    case_block = "\n".join("      " + line for line in shown.split("\n"))
    assert case_block in out
    assert _shown(envelope["diagnostics"][0]) in out  # TQX_TEST_FAILED
    assert lines[-1] == (
        "hint: the contract requires 'text', which this command did not offer: "
        "add --capability text"
    )
    argv = ["--root", str(packages_root), "run-eval", "welcome", "account-digest", "quiet-week"]
    code, out, _ = _run([*argv, "--capability", "structured_output"], capsys)
    assert code == 2
    assert out.splitlines()[:2] == [
        "✗ run-eval welcome/account-digest/quiet-week: failed",
        "  ✗ account-digest/quiet-week",
    ]
    assert out.splitlines()[-1].endswith("add --capability text")


def test_a_missing_capability_suggests_the_option(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    # execute, test and run-eval offer the runtime's capabilities when none are given.
    for command in ("compile", "render"):
        argv = ["--root", str(packages_root), command, "welcome", CONTRACT, "--values", str(values)]
        code, out, _ = _run(argv, capsys)
        assert code == 2
        assert out.splitlines()[-1] == (
            "hint: the contract requires 'structured_output', which this command did not "
            "offer: add --capability structured_output"
        ), command


def test_a_misspelt_capability_is_corrected_the_right_way_round(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #28: typed on the command line, the misspelt name is the one to correct (the
    did-you-mean used to be reversed); never a hint to add it."""
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    argv = ["--root", str(packages_root), "compile", "welcome", CONTRACT, "--values", str(values)]
    code, out, envelope = _run([*argv, "--capability", "structured_outptu"], capsys)
    assert code == 2
    (problem,) = envelope["diagnostics"]
    assert problem["code"] == "TQX_CAPABILITY_UNSUPPORTED"
    assert (
        "where 'structured_outptu' looks like a misspelling of 'structured_output'"
        in (problem["message"])
    )
    assert out.splitlines()[-1] == (
        "hint: --capability structured_outptu looks like a misspelling of 'structured_output', "
        "which the contract requires: pass --capability structured_output instead"
    )
    assert "add --capability" not in out


def test_a_misspelt_capability_in_the_contract_is_caught_by_validate_and_never_offered(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #28: ``capabilities: [structured_outptu]`` passed ``validate``, and compiling
    suggested ``add --capability structured_outptu``."""
    path = packages_root / "welcome" / "contracts" / f"{CONTRACT}.yaml"
    text = path.read_text(encoding="utf-8")
    assert "capabilities: [structured_output]\n" in text
    path.write_text(text.replace("[structured_output]\n", "[structured_outptu]\n"))
    code, out, envelope = _run(["--root", str(packages_root), "validate", "welcome"], capsys)
    assert code == 2
    (problem,) = envelope["diagnostics"]
    assert (problem["code"], problem["json_pointer"]) == (
        "TQX_CAPABILITY_UNKNOWN",
        "/capabilities/0",
    )
    assert "did you mean 'structured_output'?" in problem["message"]
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    argv = ["--root", str(packages_root), "compile", "welcome", CONTRACT, "--values", str(values)]
    code, out, envelope = _run(argv, capsys)
    assert code == 2
    assert [d["code"] for d in envelope["diagnostics"]] == ["TQX_CAPABILITY_UNKNOWN"]
    assert "structured_outptu" not in "\n".join(
        line for line in out.splitlines() if line.startswith("hint:")
    )


def test_no_diagnostics_and_no_hints_once_the_capability_is_offered(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    argv = ["--root", str(packages_root), "compile", "welcome", CONTRACT, "--values", str(values)]
    code, out, envelope = _run([*argv, "--capability", "structured_output"], capsys)
    assert (code, envelope["diagnostics"]) == (0, [])
    assert "hint:" not in out
    assert "TQX_" not in out


def test_a_put_error_is_located_in_the_users_file(
    tmp_path: Path, packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.yaml"
    source.write_text("api_version: templiqx/v1alpha1\nid: bad\nversion: [1.0\n")
    argv = ["--root", str(packages_root), "put", "welcome", "bad", str(source)]
    code, out, envelope = _run(argv, capsys)
    assert code == 2
    files = {"welcome/contracts/bad.yaml": str(source)}
    shown = _shown(envelope["diagnostics"][0], files)
    assert str(source) in shown
    assert shown in out
    source.write_text("api_version: templiqx/v1alpha1\nid: bad\nversion: 1.0.0\nbogus: 1\n")
    code, out, envelope = _run(argv, capsys)
    assert code == 2
    assert "help: Use the strict Templiqx YAML schema; unknown fields are rejected." in out


def test_a_missing_fixture_output_says_which_option_gives_it(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = packages_root / "welcome" / "evals" / "vip-request.json"
    argv = ["--root", str(packages_root), "execute", "welcome", CONTRACT, "--values", str(values)]
    code, out, envelope = _run([*argv, "--capability", "structured_output"], capsys)
    assert code == 2
    assert envelope["diagnostics"][0]["message"] == (
        "invalid data: fake runtime requires fixture_output"
    )
    assert _shown(envelope["diagnostics"][0]) in out
    assert "--fixture-output FILE" in out
