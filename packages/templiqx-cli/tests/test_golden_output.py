"""Golden output of every operation: ``--json``, and for people on and off a terminal.

One sequence of command lines (``CASES``) covers every catalog operation, succeeding and failing,
writes included (create → put → … → delete-package). It runs three times, each time in a fresh
sandbox holding a copy of the example package: with ``--json``; for people with stdout not a
terminal (no colour); and for people with stdout a simulated terminal (colour). Each case's
golden file (``goldens/<case>.txt``) holds all three outputs, stdout and stderr, and the exit
codes; the sandbox path reads ``<sandbox>`` and the escape character ``\\e``.

When this test was written, the ``--json`` sections (stderr's JSON stream events included)
were compared with the same sequence run by the CLI as it was before human output existed: byte
for byte equal. So they hold the machine output to what it was; the human sections are the
reviewed renderings. When an intended change moves an output (a new diagnostic, say),
regenerate with ``TEMPLIQX_UPDATE_GOLDENS=1 uv run --frozen --all-packages pytest <this file>``
and review the diff: a ``--json`` section may only change with a deliberate envelope change.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from templiqx_application import CATALOG
from templiqx_cli import main
from templiqx_local import compose

HERE = Path(__file__).resolve().parent
GOLDENS = HERE / "goldens"
FIXTURES = HERE.parents[2] / "fixtures"
UPDATE = os.environ.get("TEMPLIQX_UPDATE_GOLDENS") == "1"
KEY = "dev-key"
TEXT_ARTIFACT = b"notes for the welcome package\n"
BINARY_ARTIFACT = bytes(range(256))

Argv = list[str] | Callable[[Path], list[str]]


@dataclass(frozen=True)
class Case:
    """One command line of the sequence (``argv`` may be computed from the sandbox)."""

    name: str
    argv: Argv
    env: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Path], None] | None = None


def _manifest_fp(sandbox: Path, package: str) -> str:
    envelope = compose(str(sandbox / "packages")).export_package_identity(package)
    return envelope.fingerprints["manifest"]


def _contract_fp(sandbox: Path, package: str, contract: str) -> str:
    return (
        compose(str(sandbox / "packages"))
        .inspect_contract(package, contract)
        .fingerprints["contract"]
    )


def _write_artifacts(sandbox: Path) -> None:
    folder = sandbox / "packages" / ".templiqx-workspace" / "welcome"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_bytes(TEXT_ARTIFACT)
    (folder / "logo.bin").write_bytes(BINARY_ARTIFACT)


VALUES = ["--values", "packages/welcome/evals/vip-request.json"]
STRUCTURED = ["--capability", "structured_output"]
SIGNING = {"TEMPLIQX_PACKAGE_SIGNING_KEY": KEY}

CASES: list[Case] = [
    Case("catalog", ["catalog"]),
    Case("discover", ["discover"]),
    Case("create", ["create", "demo"]),
    Case("create-existing", ["create", "demo"]),
    Case(
        "put", ["put", "demo", "account-digest", "packages/welcome/contracts/account-digest.yaml"]
    ),
    Case("put-broken", ["put", "demo", "broken", "files/broken.yaml"]),
    Case("inspect", ["inspect", "demo", "account-digest"]),
    Case("inspect-missing", ["inspect", "demo", "nope"]),
    Case("validate-package", ["validate", "welcome"]),
    Case("validate-contract", ["validate", "welcome", "onboarding-summary"]),
    Case("validate-missing", ["validate", "nope"]),
    Case("compile", ["compile", "welcome", "onboarding-summary", *VALUES, *STRUCTURED]),
    Case("compile-no-capability", ["compile", "welcome", "onboarding-summary", *VALUES]),
    Case("render", ["render", "welcome", "onboarding-summary", *VALUES, *STRUCTURED]),
    Case(
        "execute",
        [
            "execute",
            "welcome",
            "onboarding-summary",
            *VALUES,
            *STRUCTURED,
            "--fixture-output",
            "files/output.json",
        ],
    ),
    Case(
        "execute-stream",
        [
            "execute",
            "welcome",
            "onboarding-summary",
            *VALUES,
            *STRUCTURED,
            "--fixture-output",
            "files/output.json",
            "--stream",
        ],
    ),
    Case(
        "execute-schema-failure",
        [
            "execute",
            "welcome",
            "onboarding-summary",
            *VALUES,
            *STRUCTURED,
            "--fixture-output",
            "files/wrong-output.json",
        ],
    ),
    Case("export-package-identity", ["export-package-identity", "demo"]),
    Case(
        "update-package",
        lambda sandbox: (
            [
                "update-package",
                "demo",
                "--version",
                "0.2.0",
                "--description",
                "A demo package",
                "--expected-fingerprint",
                _manifest_fp(sandbox, "demo"),
            ]
        ),
    ),
    Case(
        "update-package-stale",
        ["update-package", "demo", "--version", "0.3.0", "--expected-fingerprint", "0" * 64],
    ),
    Case(
        "sign-package",
        lambda sandbox: (
            [
                "sign-package",
                "demo",
                "--key-id",
                "ci",
                "--expected-fingerprint",
                _manifest_fp(sandbox, "demo"),
            ]
        ),
        env=SIGNING,
    ),
    Case("verify-package-trust", ["verify-package-trust", "demo", "--strict"], env=SIGNING),
    Case("verify-package-trust-unsigned", ["verify-package-trust", "welcome", "--strict"]),
    Case("test", ["test", "welcome", *STRUCTURED, "--capability", "text"]),
    Case("test-failing", ["test", "welcome", *STRUCTURED]),
    Case("list-evals", ["list-evals", "welcome"]),
    Case(
        "run-eval", ["run-eval", "welcome", "account-digest", "quiet-week", "--capability", "text"]
    ),
    Case(
        "run-eval-failing",
        ["run-eval", "welcome", "account-digest", "quiet-week", *STRUCTURED],
    ),
    Case("diff", ["diff", "welcome", "onboarding-summary", "welcome", "account-digest"]),
    Case("diff-equal", ["diff", "welcome", "account-digest", "demo", "account-digest"]),
    Case("explain", ["explain", "welcome", "onboarding-summary"]),
    Case("explain-missing", ["explain", "welcome", "nope"]),
    Case(
        "list-workspace-artifacts",
        ["list-workspace-artifacts", "welcome"],
        prepare=_write_artifacts,
    ),
    Case("read-artifact", ["read-artifact", "welcome", "notes.txt"]),
    Case("read-artifact-binary", ["read-artifact", "welcome", "logo.bin"]),
    Case(
        "delete-workspace-artifact",
        [
            "delete-workspace-artifact",
            "welcome",
            "notes.txt",
            "--expected-fingerprint",
            hashlib.sha256(TEXT_ARTIFACT).hexdigest(),
        ],
    ),
    Case(
        "delete",
        lambda sandbox: (
            [
                "delete",
                "demo",
                "account-digest",
                "--expected-fingerprint",
                _contract_fp(sandbox, "demo", "account-digest"),
            ]
        ),
    ),
    Case(
        "delete-package",
        lambda sandbox: (
            ["delete-package", "demo", "--expected-fingerprint", _manifest_fp(sandbox, "demo")]
        ),
    ),
]

MODES = {
    "json": "--json",
    "plain": "for people, stdout not a terminal",
    "tty": "for people, stdout a terminal",
}


class _Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    @property
    def encoding(self) -> str:
        return "utf-8"

    def isatty(self) -> bool:
        return True


@dataclass(frozen=True)
class Outcome:
    command: str
    code: int
    out: str
    err: str


def _sandbox(folder: Path) -> Path:
    folder.mkdir()
    shutil.copytree(FIXTURES / "packages" / "welcome", folder / "packages" / "welcome")
    files = folder / "files"
    files.mkdir()
    shutil.copy(FIXTURES / "cli" / "vip-output.json", files / "output.json")
    (files / "wrong-output.json").write_text(
        '{"summary": "Anouk starts.", "tone": "cheerful", "next_steps": []}\n', encoding="utf-8"
    )
    source = (folder / "packages" / "welcome" / "contracts" / "account-digest.yaml").read_text(
        encoding="utf-8"
    )
    broken = source.replace("id: account-digest", "id: broken").replace(
        "path: inputs.account", "path: inputs.acount"
    )
    assert broken.count("acount") == 1
    (files / "broken.yaml").write_text(broken, encoding="utf-8")
    return folder


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith(("TEMPLIQX_", "MODEL_", "LANGFUSE_", "OPENAI_")) or name == "NO_COLOR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("TERM", "xterm-256color")
    return monkeypatch


def _run_sequence(
    mode: str, sandbox: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Outcome]:
    monkeypatch.chdir(sandbox)
    outcomes: dict[str, Outcome] = {}
    for case in CASES:
        if case.prepare is not None:
            case.prepare(sandbox)
        words = case.argv(sandbox) if callable(case.argv) else list(case.argv)
        argv = ["--root", "packages", *(["--json"] if mode == "json" else []), *words]
        with monkeypatch.context() as scoped:
            for name, value in case.env.items():
                scoped.setenv(name, value)
            terminal = _Terminal() if mode == "tty" else None
            if terminal is not None:
                scoped.setattr(sys, "stdout", terminal)
            code = main(argv)
            captured = capsys.readouterr()
            out = terminal.getvalue() if terminal is not None else captured.out
        settings = " ".join(f"{k}={v}" for k, v in case.env.items())
        command = " ".join(part for part in (settings, "templiqx", *argv) if part)
        outcomes[case.name] = Outcome(command, code, out, captured.err)
    return outcomes


def _shown(text: str, sandbox: Path) -> str:
    return text.replace(str(sandbox), "<sandbox>").replace("\x1b", "\\e")


def _golden_text(name: str, runs: dict[str, tuple[Path, dict[str, Outcome]]]) -> str:
    parts = [f"# golden output of case {name!r} (tests/test_golden_output.py)"]
    for mode, (sandbox, outcomes) in runs.items():
        outcome = outcomes[name]
        parts.append(f"=== {MODES[mode]}: exit {outcome.code}")
        parts.append(f"$ {_shown(outcome.command, sandbox)}")
        parts.append("--- stdout")
        parts.append(_shown(outcome.out, sandbox).rstrip("\n"))
        if outcome.err:
            parts.append("--- stderr")
            parts.append(_shown(outcome.err, sandbox).rstrip("\n"))
    return "\n".join(parts) + "\n"


def test_every_operation_matches_its_golden_output(
    tmp_path: Path, isolated: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = {
        mode: (sandbox, _run_sequence(mode, sandbox, isolated, capsys))
        for mode in MODES
        for sandbox in [_sandbox(tmp_path / mode)]
    }
    json_outcomes = runs["json"][1]
    covered = {
        outcome.out.split('"operation":"', 1)[1].split('"', 1)[0]
        for outcome in json_outcomes.values()
    }
    assert covered >= {spec.name for spec in CATALOG}, "every operation has a golden case"
    for mode in ("plain", "tty"):
        codes = {name: outcome.code for name, outcome in runs[mode][1].items()}
        assert codes == {name: outcome.code for name, outcome in json_outcomes.items()}, mode
    differing = []
    expected_files = {f"{case.name}.txt" for case in CASES}
    for case in CASES:
        text = _golden_text(case.name, runs)
        golden = GOLDENS / f"{case.name}.txt"
        if UPDATE:
            GOLDENS.mkdir(exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        elif not golden.is_file() or golden.read_text(encoding="utf-8") != text:
            differing.append(case.name)
    if UPDATE:
        for stale in GOLDENS.glob("*.txt"):
            if stale.name not in expected_files:
                stale.unlink()
    assert {p.name for p in GOLDENS.glob("*.txt")} == expected_files
    assert not differing, (
        f"output differs from goldens/ for {differing}; if intended, regenerate with "
        "TEMPLIQX_UPDATE_GOLDENS=1 and review the diff"
    )


def test_colour_only_on_a_terminal() -> None:
    plain = list(GOLDENS.glob("*.txt"))
    assert plain, "goldens exist"
    for golden in plain:
        sections = golden.read_text(encoding="utf-8").split("=== ")
        by_mode = {section.split(":", 1)[0]: section for section in sections[1:]}
        assert "\\e[" not in by_mode[MODES["json"]], golden.name
        assert "\\e[" not in by_mode[MODES["plain"]], golden.name
        assert "\\e[" in by_mode[MODES["tty"]], golden.name
