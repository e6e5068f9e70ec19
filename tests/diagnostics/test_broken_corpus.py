"""The corpus of broken contracts: every diagnostic is located, and people see the line.

``fixtures/diagnostics/broken`` is a package of contracts that are each wrong in one way (or a
few): YAML syntax, unknown and missing fields, wrong kinds and types, bad references, bad
filters, schema problems, and the newcomer's four-mistake contract of issue #19. The first line
of each file says which codes ``validate`` must report, in order (``# expect: CODE ...``).

For every contract, through the CLI as a person or a script would run it:

* ``--json``: the codes are the expected ones and every diagnostic has the contract's file and
  a line and column (``span``);
* without ``--json``: the output for people shows, for every diagnostic, the source line its
  span points at (and when stdout is the envelope, it is the same envelope).

``fixtures/diagnostics/golden/<contract>.txt`` holds the exact human output for a few
of them. After a deliberate change, regenerate them with ``TEMPLIQX_UPDATE_GOLDENS=1`` and read
the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from templiqx_cli import main

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "fixtures" / "diagnostics"
PACKAGE = ROOT / "broken"
GOLDEN = ROOT / "golden"
CONTRACTS = sorted(path.stem for path in (PACKAGE / "contracts").glob("*.yaml"))
_UPDATE = os.environ.get("TEMPLIQX_UPDATE_GOLDENS") == "1"


def source(contract: str) -> str:
    return (PACKAGE / "contracts" / f"{contract}.yaml").read_text(encoding="utf-8")


def expected_codes(contract: str) -> list[str]:
    first = source(contract).splitlines()[0]
    assert first.startswith("# expect: "), f"{contract}: the first line says what to expect"
    return first.removeprefix("# expect: ").split()


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def validate(contract: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """The ``--json`` envelope and the human output of ``validate broken <contract>``.

    The human output is what people read: the account on stderr when stdout is the envelope,
    or stdout and stderr together when stdout is rendered for people.
    """
    argv = ["--root", str(ROOT), "validate", "broken", contract]
    code, out, _ = cli(["--json", *argv], capsys)
    assert code == 2
    envelope: dict[str, Any] = json.loads(out)
    code, human_out, err = cli(argv, capsys)
    assert code == 2
    try:
        shown = json.loads(human_out)
    except json.JSONDecodeError:
        return envelope, human_out + err
    assert shown == envelope  # the human additions never change the envelope
    return envelope, err


def test_the_corpus_covers_every_kind_of_mistake() -> None:
    assert len(CONTRACTS) >= 30
    codes = {code for contract in CONTRACTS for code in expected_codes(contract)}
    assert "TQX_PARSE_YAML" in codes  # syntax, unknown/missing fields, wrong kinds
    assert {"TQX_REF_UNKNOWN", "TQX_COMPONENT_MISSING"} <= codes  # bad references
    assert {"TQX_FILTER_TYPE", "TQX_INTERPOLATION_TYPE"} <= codes  # bad filters
    assert {
        "TQX_SCHEMA_TYPE_UNSUPPORTED",
        "TQX_SCHEMA_KEYWORD_UNSUPPORTED",
        "TQX_SCHEMA_IMPOSSIBLE_BOUNDS",
    } <= codes  # schema problems
    for prefix in ("syntax-", "unknown-", "missing-", "ref-", "schema-"):
        assert any(name.startswith(prefix) for name in CONTRACTS), prefix
    listed = (PACKAGE / "templiqx.yaml").read_text(encoding="utf-8")
    assert all(f"  - {name}\n" in listed for name in CONTRACTS)


@pytest.mark.parametrize("contract", CONTRACTS)
def test_every_diagnostic_has_its_line_and_column_and_people_see_the_line(
    contract: str, capsys: pytest.CaptureFixture[str]
) -> None:
    envelope, err = validate(contract, capsys)
    diagnostics = envelope["diagnostics"]
    assert [d["code"] for d in diagnostics] == expected_codes(contract)
    lines = source(contract).splitlines()
    for diagnostic in diagnostics:
        assert diagnostic["file"] == f"broken/contracts/{contract}.yaml"
        span = diagnostic["span"]
        assert span["line"] >= 1
        assert span["column"] >= 1
        assert (span["end_line"], span["end_column"]) >= (span["line"], span["column"])
        assert diagnostic["help"]
        shown = lines[span["line"] - 1].replace("\t", " ").rstrip()
        assert f"  {span['line']} | {shown}\n" in err, (diagnostic, err)
        assert f"  at broken/contracts/{contract}.yaml:{span['line']}:{span['column']}\n" in err


def test_the_newcomers_contract_reports_all_four_mistakes_in_one_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    envelope, _ = validate("four-errors", capsys)
    messages = [d["message"] for d in envelope["diagnostics"]]
    assert "unknown field `mesages` in a contract (did you mean `messages`?)" in messages[0]
    assert "unknown kind `txt` for a content node (did you mean `text`?)" in messages[1]
    assert "missing field `output_schema` in a contract" in messages[2]
    assert messages[3] == "schema type 'strng' is unsupported; did you mean 'string'?"


def test_the_whole_package_is_located_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["--root", str(ROOT), "--json", "validate", "broken"], capsys)
    assert code == 2
    diagnostics = json.loads(out)["diagnostics"]
    assert len(diagnostics) >= len(CONTRACTS)
    unlocated = [d for d in diagnostics if "span" not in d or "file" not in d]
    assert unlocated == []
    inventory = [d for d in diagnostics if d["code"] == "TQX_CONTRACT_INVENTORY_ID"]
    assert [d["file"] for d in inventory] == ["broken/templiqx.yaml"]


GOLDEN_CONTRACTS = [
    "four-errors",
    "ref-unknown-input",
    "unknown-filter",
    "syntax-unclosed-bracket",
    "schema-enum-wrong-type",
    "several-static-problems",
]


@pytest.mark.parametrize("contract", GOLDEN_CONTRACTS)
def test_human_output_matches_its_golden(contract: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = validate(contract, capsys)
    golden = GOLDEN / f"{contract}.txt"
    if _UPDATE:
        golden.write_text(err, encoding="utf-8")
    assert err == golden.read_text(encoding="utf-8")
