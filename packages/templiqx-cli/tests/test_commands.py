"""The generated commands: names, arguments and help, and the global options anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest

from templiqx_application import CATALOG, OperationSpec, ParameterSpec
from templiqx_cli import main
from templiqx_cli.app import build_group
from templiqx_cli.commands import OperationCall, operation_command

# surfaces.md §5: catalog operation -> CLI command (validate serves two operations).
EXPECTED_COMMANDS = {
    "catalog": "catalog",
    "discover_packages": "discover",
    "create_package": "create",
    "update_package": "update-package",
    "delete_package": "delete-package",
    "export_package_identity": "export-package-identity",
    "sign_package": "sign-package",
    "verify_package_trust": "verify-package-trust",
    "inspect_contract": "inspect",
    "put_contract": "put",
    "delete_contract": "delete",
    "validate_contract": "validate",
    "validate_package": "validate",
    "compile_contract": "compile",
    "render_contract": "render",
    "execute_contract": "execute",
    "list_workspace_artifacts": "list-workspace-artifacts",
    "read_artifact": "read-artifact",
    "delete_workspace_artifact": "delete-workspace-artifact",
    "test_package": "test",
    "list_evals": "list-evals",
    "run_eval": "run-eval",
    "diff_contract": "diff",
    "explain_contract": "explain",
}

USAGE = {
    "create": "create [OPTIONS] NAME",
    "put": "put [OPTIONS] PACKAGE CONTRACT SOURCE",
    "validate": "validate [OPTIONS] PACKAGE [CONTRACT]",
    "execute": "execute [OPTIONS] PACKAGE CONTRACT",
    "run-eval": "run-eval [OPTIONS] PACKAGE CONTRACT FIXTURE_ID",
    "diff": "diff [OPTIONS] LEFT_PACKAGE LEFT_CONTRACT RIGHT_PACKAGE RIGHT_CONTRACT",
    "delete-workspace-artifact": "delete-workspace-artifact [OPTIONS] PACKAGE PATH",
}


def test_every_catalog_operation_has_its_command() -> None:
    group = build_group()
    ctx = click.Context(group)
    names = group.list_commands(ctx)
    for spec in CATALOG:
        assert EXPECTED_COMMANDS[spec.name] in names, spec.name
    assert set(names) >= {"demo", "help", "batch"}
    own = set(group.commands)
    assert own == {EXPECTED_COMMANDS[spec.name] for spec in CATALOG} | {"demo", "help", "batch"}


@pytest.mark.parametrize(
    "command", sorted(set(EXPECTED_COMMANDS.values()) | {"demo", "help", "batch"})
)
def test_help_explains_arguments_with_an_example(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    lines = [line.strip() for line in text.splitlines()]
    title = "Example:" if "Example:" in lines else "Examples:"
    example = lines[lines.index(title) + 1]
    assert example.startswith(("templiqx ", "TEMPLIQX_", "python3 -m pip install uv")), example
    options = text[text.index("Options:") :]
    assert "-h, --help" in options
    for flag in ("--root DIR", "--json", "--runtime NAME"):  # listed once, in templiqx --help
        assert flag not in options
    if command != "help":
        assert "Global options --root DIR, --json and --runtime NAME" in " ".join(text.split())
    if command in USAGE:
        assert f"Usage: templiqx {USAGE[command]}" in " ".join(text.split())
    params = build_group().commands[command].params
    positionals = [str(p.metavar).strip("[]") for p in params if isinstance(p, click.Argument)]
    if positionals:
        described = lines[lines.index("Arguments:") + 1 : lines.index(title)]
        assert [line.split()[0] for line in described if line] == positionals


def test_option_conventions(capsys: pytest.CaptureFixture[str]) -> None:
    main(["execute", "--help"])
    execute = capsys.readouterr().out
    for option in ("--values FILE", "--fixture-output FILE", "--capability VALUE", "--stream"):
        assert option in execute
    main(["create", "--help"])
    assert "--version VERSION" in capsys.readouterr().out
    main(["update-package", "--help"])
    assert "--expected-fingerprint EXPECTED_FINGERPRINT" in capsys.readouterr().out
    main(["list-workspace-artifacts", "--help"])
    assert "--workspace DIR" in capsys.readouterr().out


def test_version_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == "templiqx 0.2.0\n"
    assert main([]) == 2
    assert capsys.readouterr().out == ""
    assert main(["inspect", "welcome"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert "CONTRACT" in out.err
    assert main(["discover", "--bogus"]) == 2
    assert "--bogus" in capsys.readouterr().err
    assert main(["no-such-command"]) == 2


def test_global_options_before_or_after_the_command(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for argv in (
        ["--root", str(packages_root), "--json", "discover"],
        ["discover", "--root", str(packages_root), "--json"],
        ["--json", "discover", "--root", str(packages_root)],
        ["--root", "elsewhere", "discover", "--root", str(packages_root), "--json"],
    ):
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    assert len(set(outputs)) == 1
    assert json.loads(outputs[0])["result"][0]["package"] == "welcome"


def test_an_operation_without_a_layout_gets_a_conventional_command() -> None:
    spec = OperationSpec(
        name="summarise_package",
        summary="Summarise a package.",
        parameters=[
            ParameterSpec(name="package", type="string", required=True, description="Package."),
            ParameterSpec(name="depth", type="string", required=False, description="Depth."),
            ParameterSpec(
                name="tags", type="string_list", required=False, default=[], description="Tags."
            ),
            ParameterSpec(
                name="verbose", type="boolean", required=False, default=False, description="V."
            ),
            ParameterSpec(name="extra", type="json", required=False, description="Extra."),
        ],
    )
    calls: list[OperationCall] = []

    def runner(options: Any, call: OperationCall) -> int:
        calls.append(call)
        return 0

    command = operation_command(spec, runner)
    assert command.name == "summarise-package"
    with click.Context(command) as ctx:
        params = {p.name: p for p in command.get_params(ctx)}
    assert isinstance(params["arg_package"], click.Argument)
    assert params["arg_tags"].multiple  # type: ignore[attr-defined]
    assert params["arg_verbose"].is_flag  # type: ignore[attr-defined]
    command.main(
        ["p", "--tags", "a", "--tags", "b", "--verbose", "--depth", "2"], standalone_mode=False
    )
    assert calls[0].operation == "summarise_package"
    assert calls[0].build_arguments() == {
        "package": "p",
        "depth": "2",
        "tags": ["a", "b"],
        "verbose": True,
    }


def test_put_takes_a_path_or_dash_for_its_source(
    packages_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from templiqx_cli import commands

    read: list[str] = []
    source = (packages_root / "welcome" / "contracts" / "account-digest.yaml").read_text()

    def read_text(path: str) -> str:
        read.append(path)
        return source

    monkeypatch.setattr(commands, "read_text", read_text)
    argv = ["--root", str(packages_root), "--json", "put", "welcome", "copy", "-"]
    assert main(argv) == 2  # the source's id is account-digest, not copy: an envelope, not usage
    assert read == ["-"], "`-` reaches the reader (which reads standard input for it)"
    assert json.loads(capsys.readouterr().out)["operation"] == "put_contract"
    main(["put", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "SOURCE Path of the contract's YAML file, or - to read it from standard input." in (
        help_text
    )


def test_help_command_and_sections(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help"]) == 0
    top = capsys.readouterr().out
    assert main(["--help"]) == 0
    assert capsys.readouterr().out == top
    titles = [line[:-1] for line in top.splitlines() if line.endswith(":") and line[0] != " "]
    assert titles == [
        "Options",
        "Getting started",
        "Packages",
        "Contracts",
        "Execution",
        "Evals",
        "Artifacts",
        "Trust",
        "Plugins",
    ]
    options = top[top.index("Options:") : top.index("Getting started:")].splitlines()
    listed = [line.split()[0] for line in options if line.startswith("  -")]
    assert listed == ["--root", "--json", "--runtime", "-V,", "-h,"]
    assert main(["help", "validate"]) == 0
    via_help = capsys.readouterr().out
    assert main(["validate", "--help"]) == 0
    assert capsys.readouterr().out == via_help
    assert main(["help", "vaildate"]) == 2
    assert "Did you mean 'validate'?" in capsys.readouterr().err
    assert main(["vaildate"]) == 2
    assert "Did you mean 'validate'?" in capsys.readouterr().err


def test_every_command_is_in_a_named_section() -> None:
    group = build_group()
    ctx = click.Context(group)
    listed = {name: title for title, rows in group.sectioned(ctx) for name, _ in rows}
    assert set(listed) == set(group.list_commands(ctx))
    assert "Other commands" not in listed.values()
    assert listed["validate"] == "Contracts"
    assert listed["sign-package"] == "Trust"
    assert listed["read-artifact"] == "Artifacts"
    assert listed["run-eval"] == "Evals"
    assert listed["execute"] == "Execution"
    assert listed["discover"] == "Packages"
    assert listed["help"] == "Getting started"


def test_shell_completion_of_commands_packages_and_contracts(packages_root: Path) -> None:
    import os
    import subprocess
    import sys

    def complete(words: str) -> list[str]:
        env = {
            **os.environ,
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
            "_TEMPLIQX_COMPLETE": "bash_complete",
        }
        done = subprocess.run(
            [sys.executable, "-m", "templiqx_cli"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return [line.split(",", 1)[1] for line in done.stdout.splitlines()]

    assert complete("templiqx val") == ["validate"]
    root = str(packages_root)
    assert complete(f"templiqx --root {root} validate w") == ["welcome"]
    assert complete(f"templiqx validate --root {root} welcome a") == ["account-digest"]
    script = subprocess.run(
        [sys.executable, "-m", "templiqx_cli"],
        env={**os.environ, "_TEMPLIQX_COMPLETE": "bash_source"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "_templiqx_completion" in script
