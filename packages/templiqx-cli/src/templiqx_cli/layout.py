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

__all__ = ["LAYOUTS", "MERGED", "SECTIONS", "Layout", "MergedCommand", "layout_for"]

SECTIONS: dict[str, str] = {
    "start": "Getting started",
    "packages": "Packages",
    "contracts": "Contracts",
    "execution": "Execution",
    "evals": "Evals",
    "artifacts": "Artifacts",
    "trust": "Trust",
    "other": "Other commands",
    "plugins": "Plugins",
}
"""The sections of ``templiqx --help``, in order: key -> title."""


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
    """One command line per line; each runs as written from a clone's root."""
    notes: str = ""
    """Extra paragraphs for ``--help``."""
    section: str = "other"
    """Where ``templiqx --help`` lists the command (a key of :data:`SECTIONS`)."""
    argument_help: Mapping[str, str] = field(default_factory=dict)
    """Positional descriptions that differ from the catalog's, by parameter name."""


@dataclass(frozen=True)
class MergedCommand:
    """One command serving two operations: the longer form when its last positional is given."""

    command: str
    short: str
    long: str
    positionals: tuple[str, ...]
    example: str
    section: str = "other"


_P = ("package",)
_PC = ("package", "contract")

# Every example runs as written from a clone's root (tests/test_help_examples.py runs them, in
# order, on a copy of fixtures/): <FP> and <SHA256> stand for the fingerprint a command asks for.
_R = "templiqx --root fixtures/packages"
_VALUES = "--values fixtures/packages/welcome/evals/vip-request.json"
_KEY = "TEMPLIQX_PACKAGE_SIGNING_KEY=dev-key"

LAYOUTS: dict[str, Layout] = {
    "catalog": Layout("catalog", example="templiqx catalog --json", section="start"),
    "discover_packages": Layout("discover", example=f"{_R} discover", section="packages"),
    "create_package": Layout(
        "create",
        ("name",),
        cli_defaults={"version": "0.1.0"},
        example=f"{_R} create demo --version 0.1.0",
        notes="The packages root (--root DIR) must exist: create it first (mkdir -p DIR). "
        "templiqx creates the package's folder in it, never the root.",
        section="packages",
    ),
    "update_package": Layout(
        "update-package",
        _P,
        example=f"{_R} update-package demo --version 0.2.0 --expected-fingerprint <FP>",
        notes="<FP>: the manifest fingerprint export-package-identity reports "
        "(fingerprints.manifest).",
        section="packages",
    ),
    "delete_package": Layout(
        "delete-package",
        _P,
        example=f"{_R} delete-package demo --expected-fingerprint <FP>",
        notes="<FP>: the manifest fingerprint export-package-identity reports "
        "(fingerprints.manifest).",
        section="packages",
    ),
    "export_package_identity": Layout(
        "export-package-identity",
        _P,
        example=f"{_R} export-package-identity welcome",
        section="packages",
    ),
    "sign_package": Layout(
        "sign-package",
        _P,
        example=f"{_KEY} {_R} sign-package demo --key-id ci --expected-fingerprint <FP>",
        notes="<FP>: the manifest fingerprint export-package-identity reports "
        "(fingerprints.manifest).",
        section="trust",
    ),
    "verify_package_trust": Layout(
        "verify-package-trust",
        _P,
        example=f"{_R} verify-package-trust welcome\n"
        f"{_KEY} {_R} verify-package-trust demo --strict",
        section="trust",
    ),
    "inspect_contract": Layout(
        "inspect", _PC, example=f"{_R} inspect welcome onboarding-summary", section="contracts"
    ),
    "put_contract": Layout(
        "put",
        ("package", "contract", "source"),
        text_files=frozenset({"source"}),
        example=f"{_R} put demo account-digest "
        "fixtures/packages/welcome/contracts/account-digest.yaml",
        notes="To replace an existing contract, add --expected-fingerprint with the fingerprint "
        "inspect reports (fingerprints.contract).",
        section="contracts",
        argument_help={
            "source": "Path of the contract's YAML file, or - to read it from standard input."
        },
    ),
    "delete_contract": Layout(
        "delete",
        _PC,
        example=f"{_R} delete demo account-digest --expected-fingerprint <FP>",
        notes="<FP>: the contract fingerprint inspect reports (fingerprints.contract).",
        section="contracts",
    ),
    "compile_contract": Layout(
        "compile",
        _PC,
        example=f"{_R} compile welcome onboarding-summary {_VALUES} --capability structured_output",
        section="execution",
    ),
    "render_contract": Layout(
        "render",
        _PC,
        example=f"{_R} render welcome onboarding-summary {_VALUES} --capability structured_output",
        section="execution",
    ),
    "execute_contract": Layout(
        "execute",
        _PC,
        example=f"{_R} execute welcome onboarding-summary {_VALUES} "
        "--fixture-output fixtures/cli/vip-output.json --capability structured_output --stream",
        notes=(
            "--fixture-output is the output the deterministic fake runtime (the default) "
            "replays; a live runtime (--runtime NAME) does not need it. With --stream every "
            "event is written to stderr as it arrives (delta text, or one JSON object per line "
            "with --json); the output then follows on stdout (with --json: the envelope, "
            "carrying stream_events, ending in Complete, or Failed when the call fails). "
            "Ctrl-C cancels a stream through the runtime's cancel token and exits 130."
        ),
        section="execution",
    ),
    "list_workspace_artifacts": Layout(
        "list-workspace-artifacts",
        _P,
        example=f"{_R} list-workspace-artifacts welcome",
        section="artifacts",
    ),
    "read_artifact": Layout(
        "read-artifact",
        ("package", "path"),
        example=f"{_R} read-artifact welcome notes.txt",
        notes="The artifact is a file under the workspace's package folder, here "
        "fixtures/packages/.templiqx-workspace/welcome/notes.txt.",
        section="artifacts",
    ),
    "delete_workspace_artifact": Layout(
        "delete-workspace-artifact",
        ("package", "path"),
        example=f"{_R} delete-workspace-artifact welcome notes.txt --expected-fingerprint <SHA256>",
        notes="<SHA256>: the SHA-256 of the artifact's bytes (read-artifact's "
        "fingerprints.artifact).",
        section="artifacts",
    ),
    "test_package": Layout(
        "test",
        _P,
        example=f"{_R} test welcome --capability structured_output --capability text",
        notes="Offer every capability the package's contracts require (each --capability "
        "adds one); every case is listed, a failed one with its diagnostics.",
        section="evals",
    ),
    "list_evals": Layout("list-evals", _P, example=f"{_R} list-evals welcome", section="evals"),
    "run_eval": Layout(
        "run-eval",
        ("package", "contract", "fixture_id"),
        example=f"{_R} run-eval welcome account-digest quiet-week --capability text",
        section="evals",
    ),
    "diff_contract": Layout(
        "diff",
        ("left_package", "left_contract", "right_package", "right_contract"),
        example=f"{_R} diff welcome onboarding-summary welcome account-digest",
        section="contracts",
    ),
    "explain_contract": Layout(
        "explain", _PC, example=f"{_R} explain welcome onboarding-summary", section="contracts"
    ),
}

MERGED: tuple[MergedCommand, ...] = (
    MergedCommand(
        command="validate",
        short="validate_package",
        long="validate_contract",
        positionals=_PC,
        example=f"{_R} validate welcome\n{_R} validate welcome onboarding-summary",
        section="contracts",
    ),
)


def layout_for(operation: str, required_strings: tuple[str, ...]) -> Layout:
    """The layout of ``operation``: the table's entry, or the convention for a new operation."""
    known = LAYOUTS.get(operation)
    if known is not None:
        return known
    return Layout(operation.replace("_", "-"), required_strings)
