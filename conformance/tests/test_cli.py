"""The command: a pass/fail table or JSON, exit 0 / 2 / 1, scenario replay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from templiqx_conformance import ConformanceReport, check_names
from templiqx_conformance.cli import main, plugin


def test_run_prints_a_table_and_exits_zero_when_conformant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "conformance_target:target"]) == 0
    out = capsys.readouterr().out
    assert "templiqx conformance 0.2.0: acme-echo 1.0.0" in out
    assert "PASS  failure.projection" in out
    assert out.rstrip().endswith("12 passed, 0 failed, 3 not applicable: conformant")


def test_run_accepts_a_class_and_failure_cases_separately(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "acme_echo:EchoRuntime", "--failures", "conformance_target:failure_cases"])
    assert code == 0
    assert "PASS  failure.projection" in capsys.readouterr().out


def test_run_json_is_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "acme_echo:EchoRuntime", "--json", "--check", "receipt.well_formed"]) == 0
    report = msgspec.json.decode(capsys.readouterr().out, type=ConformanceReport)
    assert [check.name for check in report.checks] == ["receipt.well_formed"]
    assert report.ok


def test_a_failing_check_exits_two_and_names_the_invariant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "variants:lies_about_schema_target"]) == 2
    out = capsys.readouterr().out
    assert "FAIL  receipt.output_schema_valid" in out
    assert "output_schema_valid must agree with the interaction's output schema" in out
    assert "NOT conformant" in out


def test_the_transport_suite_runs_from_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "run",
            "support.mini_openai:MiniOpenAI",
            "--transport",
            "openai",
            "--check",
            "transport.tool_calls",
        ]
    )
    assert code == 0
    assert "over the openai transport" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no_colon"], "is not a reference"),
        (["run", "no_such_module_xyz:f"], "cannot import module"),
        (["run", "acme_echo:Missing"], "has no attribute"),
        (["run", "acme_echo:ADAPTER_ID"], "neither callable nor an AdapterTarget"),
        (["run", "acme_echo:EchoRuntime", "--check", "nope"], "unknown check"),
        (["run", "acme_echo:EchoRuntime", "--failures", "acme_echo:ADAPTER_ID"], "FailureCase"),
    ],
)
def test_a_bad_target_exits_one_with_the_cause(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("templiqx-conformance: ")
    assert message in err


def test_usage_errors_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["run", "x:y", "--transport", "grpc"]) == 2
    assert "unknown transport 'grpc' (choose from openai" in capsys.readouterr().err


def test_list_names_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--transport", "openai", "--json"]) == 0
    rows = msgspec.json.decode(capsys.readouterr().out)
    assert [row["name"] for row in rows] == check_names("openai")
    assert main(["list"]) == 0
    assert "descriptor.well_formed" in capsys.readouterr().out


def test_scenarios_replays_the_reference_goldens(
    reference: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenarios", str(reference / "crm3"), "--json"]) == 0
    report = msgspec.json.decode(capsys.readouterr().out, type=ConformanceReport)
    assert len(report.checks) == 8
    assert report.ok


def test_scenarios_of_a_folder_that_is_not_a_package_exits_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenarios", str(tmp_path)]) == 1
    assert "neither a package folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("run", "prog"), [(main, "templiqx-conformance"), (plugin, "templiqx conformance")]
)
def test_help_names_the_command_as_called_and_shows_examples_that_run(
    run: Callable[[list[str]], int], prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: {prog} [-h] COMMAND ...")
    examples = text[text.index("\nexamples:\n") :].splitlines()[2:]
    examples = [line.strip() for line in examples[: examples.index("")]]
    assert len(examples) == 7
    assert all(line.startswith(f"{prog} ") for line in examples)
    for example in examples:
        words = example[len(prog) + 1 :].split()
        if "my_adapter:" in example or "path/to/" in example:
            continue  # placeholders for the reader's own adapter and package
        assert run(words) == 0, example
    assert run(["run", "--help"]) == 0
    assert f"example: {prog} run " in capsys.readouterr().out


def test_the_plugin_reports_errors_under_its_own_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert plugin(["run", "no_such_module_xyz:f"]) == 1
    assert capsys.readouterr().err.startswith("templiqx conformance: ")
