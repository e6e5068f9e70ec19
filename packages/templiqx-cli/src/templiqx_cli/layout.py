"""How each catalog operation looks on the command line: its command name and positionals.

Everything else follows from the operation's parameters by convention (see
:mod:`templiqx_cli.commands`), so an operation added to the catalog gets a command without any
change here: ``some_operation`` becomes ``some-operation`` with its required string parameters
as positionals and the rest as options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LAYOUTS", "MERGED", "Layout", "MergedCommand", "layout_for"]


@dataclass(frozen=True)
class Layout:
    """The command-line shape of one operation."""

    command: str
    positionals: tuple[str, ...] = ()
    text_files: frozenset[str] = frozenset()
    """String parameters whose positional names a host file read as UTF-8 text."""
    cli_defaults: Mapping[str, Any] = field(default_factory=dict)
    """Defaults the command line supplies where the service requires a value."""
    example: str = ""
    notes: str = ""
    """Extra paragraphs for ``--help``."""


@dataclass(frozen=True)
class MergedCommand:
    """One command serving two operations: the longer form when its last positional is given."""

    command: str
    short: str
    long: str
    positionals: tuple[str, ...]
    example: str


_P = ("package",)
_PC = ("package", "contract")

LAYOUTS: dict[str, Layout] = {
    "catalog": Layout("catalog", example="templiqx catalog --json"),
    "discover_packages": Layout("discover", example="templiqx --root fixtures/packages discover"),
    "create_package": Layout(
        "create",
        ("name",),
        cli_defaults={"version": "0.1.0"},
        example="templiqx create demo --version 0.1.0",
    ),
    "update_package": Layout(
        "update-package",
        _P,
        example="templiqx update-package demo --version 0.2.0 --expected-fingerprint <FP>",
    ),
    "delete_package": Layout(
        "delete-package", _P, example="templiqx delete-package demo --expected-fingerprint <FP>"
    ),
    "export_package_identity": Layout(
        "export-package-identity", _P, example="templiqx export-package-identity welcome"
    ),
    "sign_package": Layout(
        "sign-package",
        _P,
        example="TEMPLIQX_PACKAGE_SIGNING_KEY=… templiqx sign-package demo --key-id ci "
        "--expected-fingerprint <FP>",
    ),
    "verify_package_trust": Layout(
        "verify-package-trust", _P, example="templiqx verify-package-trust welcome --strict"
    ),
    "inspect_contract": Layout(
        "inspect", _PC, example="templiqx inspect welcome onboarding-summary"
    ),
    "put_contract": Layout(
        "put",
        ("package", "contract", "source"),
        text_files=frozenset({"source"}),
        example="templiqx put demo hello hello.yaml  # add --expected-fingerprint to replace",
    ),
    "delete_contract": Layout(
        "delete", _PC, example="templiqx delete demo hello --expected-fingerprint <FP>"
    ),
    "compile_contract": Layout(
        "compile",
        _PC,
        example="templiqx compile welcome onboarding-summary --values request.json "
        "--capability structured_output",
    ),
    "render_contract": Layout(
        "render",
        _PC,
        example="templiqx render welcome onboarding-summary --values request.json "
        "--capability structured_output",
    ),
    "execute_contract": Layout(
        "execute",
        _PC,
        example="templiqx execute welcome onboarding-summary --values request.json "
        "--fixture-output output.json --capability structured_output --stream",
        notes=(
            "--fixture-output is the output the deterministic fake runtime (the default) "
            "replays; a live runtime (--runtime NAME) does not need it. With --stream every "
            "event is written to stderr as it arrives (delta text, or one JSON object per line "
            "with --json) and the envelope on stdout carries stream_events. Ctrl-C cancels a "
            "stream through the runtime's cancel token and exits 130."
        ),
    ),
    "list_workspace_artifacts": Layout(
        "list-workspace-artifacts", _P, example="templiqx list-workspace-artifacts welcome"
    ),
    "read_artifact": Layout(
        "read-artifact", ("package", "path"), example="templiqx read-artifact welcome notes.txt"
    ),
    "delete_workspace_artifact": Layout(
        "delete-workspace-artifact",
        ("package", "path"),
        example="templiqx delete-workspace-artifact welcome notes.txt "
        "--expected-fingerprint <SHA256>",
    ),
    "test_package": Layout(
        "test", _P, example="templiqx test welcome --capability structured_output"
    ),
    "list_evals": Layout("list-evals", _P, example="templiqx list-evals welcome"),
    "run_eval": Layout(
        "run-eval",
        ("package", "contract", "fixture_id"),
        example="templiqx run-eval welcome account-digest quiet-week",
    ),
    "diff_contract": Layout(
        "diff",
        ("left_package", "left_contract", "right_package", "right_contract"),
        example="templiqx diff welcome onboarding-summary welcome account-digest",
    ),
    "explain_contract": Layout(
        "explain", _PC, example="templiqx explain welcome onboarding-summary"
    ),
}

MERGED: tuple[MergedCommand, ...] = (
    MergedCommand(
        command="validate",
        short="validate_package",
        long="validate_contract",
        positionals=_PC,
        example="templiqx validate welcome  |  templiqx validate welcome onboarding-summary",
    ),
)


def layout_for(operation: str, required_strings: tuple[str, ...]) -> Layout:
    """The layout of ``operation``: the table's entry, or the convention for a new operation."""
    known = LAYOUTS.get(operation)
    if known is not None:
        return known
    return Layout(operation.replace("_", "-"), required_strings)
