"""The corpus of broken contracts: every diagnostic is located once, and people see the line.

``fixtures/diagnostics/broken`` is a package of contracts that are each wrong in one way (or a
few): YAML syntax, unknown and missing fields, wrong kinds and types, bad references, bad
filters, schema problems, the newcomer's four-mistake contract of issue #19, and one contract
per diagnostic case of issue #28. The first line of each file says which codes ``validate``
must report, in order (``# expect: CODE ...``; nothing for a valid contract that a case uses
with a broken ``--values`` file from ``fixtures/diagnostics/values``).

For every contract, through the CLI as a person would run it from the repository (``--root
fixtures/diagnostics``):

* ``--json``: the codes are the expected ones; every diagnostic has the contract's file, a
  line and column (``span``) that its message does not repeat, and the help of its code;
* without ``--json``: each diagnostic shows exactly one location, ``--> path:line:col``, the
  path as it opens from the working directory (not relative to ``--root``), with the source
  line it points at.

:data:`CASES` pins code, span, location text and help for each case of issue #28.
``fixtures/diagnostics/golden/<contract>.txt`` holds the exact human output for a few
contracts. After a deliberate change, regenerate them with ``TEMPLIQX_UPDATE_GOLDENS=1`` and
read the diff before committing it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from templiqx_application import fix_hint
from templiqx_cli import main

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "fixtures" / "diagnostics"
RELATIVE_ROOT = "fixtures/diagnostics"
PACKAGE = ROOT / "broken"
VALUES = ROOT / "values"
GOLDEN = ROOT / "golden"
CONTRACTS = sorted(path.stem for path in (PACKAGE / "contracts").glob("*.yaml"))
_UPDATE = os.environ.get("TEMPLIQX_UPDATE_GOLDENS") == "1"

SYNTAX_HELP = (
    "Fix the YAML syntax at the reported line and column: indent with spaces, close every "
    "quote and bracket, and write `key: value` with a space after the colon."
)
UNKNOWN_FIELD_HELP = "Use the strict Templiqx YAML schema; unknown fields are rejected."


def source(contract: str) -> str:
    path = PACKAGE / "contracts" / f"{contract}.yaml"
    return path.read_bytes().decode("utf-8", errors="replace")


def expected_codes(contract: str) -> list[str]:
    first = source(contract).splitlines()[0]
    assert first.startswith("# expect:"), f"{contract}: the first line says what to expect"
    return first.removeprefix("# expect:").split()


BROKEN = [contract for contract in CONTRACTS if expected_codes(contract)]


def help_of(code: str, message: str) -> str:
    """The help a diagnostic of ``code`` carries: its code's own, from the code table (the two
    kinds of TQX_PARSE_YAML each have theirs)."""
    if code == "TQX_PARSE_YAML":
        return UNKNOWN_FIELD_HELP if "unknown field" in message else SYNTAX_HELP
    found = fix_hint(code)
    assert found, f"{code} has no help in the code table"
    return found


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository, as a person trying the corpus would."""
    monkeypatch.chdir(REPO)


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run(
    argv: list[str], capsys: pytest.CaptureFixture[str], *, root: str = RELATIVE_ROOT
) -> tuple[dict[str, Any], str]:
    """The ``--json`` envelope and the human output of ``templiqx --root ROOT ARGV``.

    The human output is what people read: the account on stderr when stdout is the envelope,
    or stdout and stderr together when stdout is rendered for people.
    """
    code, out, _ = cli(["--root", root, "--json", *argv], capsys)
    assert code == 2, out
    envelope: dict[str, Any] = json.loads(out)
    code, human_out, err = cli(["--root", root, *argv], capsys)
    assert code == 2
    try:
        shown = json.loads(human_out)
    except json.JSONDecodeError:
        return envelope, human_out + err
    assert shown == envelope  # the human additions never change the envelope
    return envelope, err


def validate(contract: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    return run(["validate", "broken", contract], capsys)


def located_once(diagnostic: dict[str, Any], human: str, shown_path: str, text: str) -> None:
    """The diagnostic's one location: in its span, not repeated in its message, shown once as
    ``--> path:line:col`` from the working directory, with its source line."""
    span = diagnostic["span"]
    assert span["line"] >= 1
    assert span["column"] >= 1
    assert (span["end_line"], span["end_column"]) >= (span["line"], span["column"])
    assert not re.search(r"\bline \d+ column \d+", diagnostic["message"]), diagnostic["message"]
    where = f"  --> {shown_path}:{span['line']}:{span['column']}\n"
    assert where in human, (where, human)
    shown = text.splitlines()[span["line"] - 1].replace("\t", " ")
    assert f"  {span['line']} | {shown.rstrip()}\n" in human, (diagnostic, human)


def test_the_corpus_covers_every_kind_of_mistake() -> None:
    assert len(CONTRACTS) >= 45
    codes = {code for contract in CONTRACTS for code in expected_codes(contract)}
    assert {"TQX_PARSE_YAML", "TQX_PARSE_TAB", "TQX_PARSE_MISSING_FIELD"} <= codes  # syntax
    assert {"TQX_REF_UNKNOWN", "TQX_COMPONENT_MISSING"} <= codes  # bad references
    assert {"TQX_FILTER_TYPE", "TQX_INTERPOLATION_TYPE"} <= codes  # bad filters
    assert {
        "TQX_SCHEMA_TYPE_UNSUPPORTED",
        "TQX_SCHEMA_KEYWORD_UNSUPPORTED",
        "TQX_SCHEMA_IMPOSSIBLE_BOUNDS",
        "TQX_OUTPUT_SCHEMA_INVALID",
    } <= codes  # schema problems
    assert {case.contract for case in CASES} <= set(CONTRACTS)
    for prefix in ("syntax-", "unknown-", "missing-", "ref-", "schema-"):
        assert any(name.startswith(prefix) for name in CONTRACTS), prefix
    listed = (PACKAGE / "templiqx.yaml").read_text(encoding="utf-8")
    assert all(f"  - {name}\n" in listed for name in CONTRACTS)


@pytest.mark.usefixtures("in_repo")
@pytest.mark.parametrize("contract", BROKEN)
def test_every_diagnostic_is_located_once_from_the_working_directory(
    contract: str, capsys: pytest.CaptureFixture[str]
) -> None:
    envelope, human = validate(contract, capsys)
    diagnostics = envelope["diagnostics"]
    assert [d["code"] for d in diagnostics] == expected_codes(contract)
    for diagnostic in diagnostics:
        assert diagnostic["file"] == f"broken/contracts/{contract}.yaml"
        assert diagnostic["help"] == help_of(diagnostic["code"], diagnostic["message"])
        path = f"{RELATIVE_ROOT}/broken/contracts/{contract}.yaml"
        located_once(diagnostic, human, path, source(contract))
    assert human.count("  --> ") == len(diagnostics), "one location per diagnostic"
    assert "\n  at " not in human


# --- issue #28: one contract per diagnostic case --------------------------------------------


@dataclass(frozen=True)
class Case:
    """A diagnostic case: the contract, and what its one (first) diagnostic must be."""

    contract: str
    code: str
    span: tuple[int, int, int]
    """line, column, end column"""
    says: str
    """Words the message must hold (the did-you-mean, the keyword, ...)."""


CASES = [
    # a misspelt capability is caught at validate time, did-you-mean the right way round
    Case(
        "capability-misspelt",
        "TQX_CAPABILITY_UNKNOWN",
        (5, 16, 33),
        "unknown capability 'structured_outptu'; did you mean 'structured_output'?",
    ),
    # one code each, with its own help, for what TQX_PARSE_YAML used to fold together
    Case("unknown-filter", "TQX_PARSE_UNKNOWN_FILTER", (12, 25, 29), "did you mean `upper`?"),
    Case("unknown-role", "TQX_PARSE_UNKNOWN_ROLE", (6, 11, 14), "did you mean `user`?"),
    Case("unknown-node-kind", "TQX_PARSE_UNKNOWN_KIND", (8, 15, 25), "did you mean `interpolate`"),
    Case("unknown-expression-kind", "TQX_PARSE_UNKNOWN_KIND", (11, 28, 32), "did you mean `ref`"),
    Case("duplicate-key", "TQX_PARSE_DUPLICATE_KEY", (5, 1, 8), "duplicate field `version`"),
    Case("syntax-tab-indentation", "TQX_PARSE_TAB", (6, 1, 8), "YAML cannot indent with tabs"),
    Case("number-for-text", "TQX_PARSE_WRONG_TYPE", (9, 16, 18), "expected a string"),
    Case("missing-messages", "TQX_PARSE_MISSING_FIELD", (2, 1, 1), "missing field `messages`"),
    # no follow-on errors after a merge key or a foreign tag
    Case("merge-key", "TQX_PARSE_MERGE_KEY", (6, 5, 7), "the merge key `<<` is not supported"),
    Case("python-tag", "TQX_PARSE_TAG", (6, 11, 53), "`!!python/object/apply:os.system`"),
    # spans for a missing include (at its include node) and for invalid UTF-8
    Case("include-missing", "TQX_INCLUDE_UNRESOLVED", (9, 9, 55), "partials/signature.yaml"),
    Case("not-utf8", "TQX_PARSE_ENCODING", (7, 39, 49), "not valid UTF-8 (invalid byte 0xe9)"),
    # an id that is not the file name, caught by validating the contract alone
    Case(
        "id-not-file-name",
        "TQX_CONTRACT_INVENTORY_ID",
        (3, 5, 18),
        "contract id 'renamed-later' does not match its file name",
    ),
    # an invalid JSON Schema: at the keyword's line, naming it, every problem
    Case(
        "schema-keyword-invalid",
        "TQX_OUTPUT_SCHEMA_INVALID",
        (13, 18, 20),
        "keyword `minLength`: -1 is less than the minimum of 0",
    ),
]


@pytest.mark.usefixtures("in_repo")
@pytest.mark.parametrize("case", CASES, ids=[case.contract for case in CASES])
def test_each_case_has_its_code_span_location_and_help(
    case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    envelope, human = validate(case.contract, capsys)
    first = envelope["diagnostics"][0]
    assert first["code"] == case.code
    assert (first["span"]["line"], first["span"]["column"], first["span"]["end_column"]) == (
        case.span
    )
    assert case.says in first["message"]
    assert first["help"] == fix_hint(case.code)
    path = f"{RELATIVE_ROOT}/broken/contracts/{case.contract}.yaml"
    assert f"  --> {path}:{case.span[0]}:{case.span[1]}\n" in human
    assert f"  help: {fix_hint(case.code)}\n" in human
    if case.code in ("TQX_PARSE_MERGE_KEY", "TQX_PARSE_TAG"):
        assert len(envelope["diagnostics"]) == 1, "no follow-on errors"


@pytest.mark.usefixtures("in_repo")
def test_every_schema_problem_is_at_its_keyword(capsys: pytest.CaptureFixture[str]) -> None:
    envelope, human = validate("schema-keyword-invalid", capsys)
    found = [(d["json_pointer"], d["span"]["line"]) for d in envelope["diagnostics"]]
    assert found == [
        ("/output_schema/properties/name/minLength", 13),
        ("/output_schema/properties/age/maximum", 16),
    ]
    assert "bounded subset" not in human
    assert "POC" not in human


@pytest.mark.usefixtures("in_repo")
def test_values_file_problems_point_into_the_values_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    values = f"{RELATIVE_ROOT}/values/values-misspelt.json"
    text = (VALUES / "values-misspelt.json").read_text(encoding="utf-8")
    envelope, human = run(["compile", "broken", "values-misspelt", "--values", values], capsys)
    by_code = {d["code"]: d for d in envelope["diagnostics"]}
    assert set(by_code) == {"TQX_VALUE_UNKNOWN", "TQX_VALUE_SCHEMA"}, "no 'name' missing too"
    unknown = by_code["TQX_VALUE_UNKNOWN"]
    assert unknown["message"] == "undeclared inputs value 'nmae'; did you mean 'name'?"
    assert unknown["file"] == values
    assert (unknown["span"]["line"], unknown["span"]["column"]) == (3, 5)
    wrong = by_code["TQX_VALUE_SCHEMA"]
    assert wrong["file"] == values
    assert (wrong["span"]["line"], wrong["span"]["column"]) == (4, 14)
    for diagnostic in envelope["diagnostics"]:
        assert diagnostic["help"] == fix_hint(diagnostic["code"])
        located_once(diagnostic, human, values, text)
    assert "broken/contracts/values-misspelt.yaml" not in human


def test_an_unreadable_contract_is_one_diagnostic_with_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A listed contract that cannot be read (here a folder where the file should be: root
    can read any file) is reported once by the package's validation, not twice."""
    root = tmp_path / "root"
    shutil.copytree(PACKAGE, root / "broken")
    (root / "broken" / "contracts" / "unknown-role.yaml").unlink()
    (root / "broken" / "contracts" / "unknown-role.yaml").mkdir()
    envelope, human = run(["validate", "broken"], capsys, root=str(root))
    about = [
        d for d in envelope["diagnostics"] if d["file"] == "broken/contracts/unknown-role.yaml"
    ]
    assert [d["code"] for d in about] == ["TQX_PATH_INVALID"]
    assert about[0]["help"] == fix_hint("TQX_PATH_INVALID")
    path = root / "broken" / "contracts" / "unknown-role.yaml"
    assert f"  --> {path}\n" in human  # outside the working directory: the whole path


@pytest.mark.usefixtures("in_repo")
def test_the_whole_package_has_a_status_column_and_every_diagnostic_located(
    capsys: pytest.CaptureFixture[str],
) -> None:
    envelope, human = run(["validate", "broken"], capsys)
    diagnostics = envelope["diagnostics"]
    assert len(diagnostics) >= len(BROKEN)
    unlocated = [d for d in diagnostics if "span" not in d or "file" not in d]
    assert unlocated == []
    header = next(line for line in human.splitlines() if line.lstrip().startswith("contract "))
    assert header.split() == ["contract", "status", "version", "fingerprint"]
    rows = {line.split()[0]: line for line in human.splitlines() if line.startswith("  ")}
    assert "valid" in rows["values-misspelt"].split()
    assert "1 error" in rows["duplicate-key"]
    assert "(does not load)" in rows["duplicate-key"]
    assert "1 error" in rows["renamed-later"], "found by its file name"
    assert human.count("  --> ") == len(diagnostics)


def test_the_newcomers_contract_reports_all_four_mistakes_in_one_run(
    in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    envelope, _ = validate("four-errors", capsys)
    messages = [d["message"] for d in envelope["diagnostics"]]
    assert "unknown field `mesages` in a contract (did you mean `messages`?)" in messages[0]
    assert "unknown kind `txt` for a content node (did you mean `text`?)" in messages[1]
    assert "missing field `output_schema` in a contract" in messages[2]
    assert messages[3] == "schema type 'strng' is unsupported; did you mean 'string'?"


GOLDEN_CONTRACTS = [
    "four-errors",
    "ref-unknown-input",
    "unknown-filter",
    "syntax-unclosed-bracket",
    "schema-enum-wrong-type",
    "several-static-problems",
]


@pytest.mark.usefixtures("in_repo")
@pytest.mark.parametrize("contract", GOLDEN_CONTRACTS)
def test_human_output_matches_its_golden(contract: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = validate(contract, capsys)
    golden = GOLDEN / f"{contract}.txt"
    if _UPDATE:
        golden.write_text(err, encoding="utf-8")
    assert err == golden.read_text(encoding="utf-8")
