"""Reports are JSON-able Structs with a readable table; the kit's schema checker is exact."""

from __future__ import annotations

import msgspec
import pytest

from templiqx_conformance import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
    render_table,
)
from templiqx_conformance.schema import satisfies
from templiqx_contracts import AdapterDescriptor

REPORT = ConformanceReport(
    api_version=REPORT_API_VERSION,
    kit_version="0.2.0",
    adapter=AdapterDescriptor(id="acme", version="1.0.0", capabilities=["text"]),
    transport=None,
    ok=False,
    checks=[
        CheckResult(name="a.pass", invariant="a holds", status=CheckStatus.PASSED),
        CheckResult(
            name="b.fail",
            invariant="b holds",
            status=CheckStatus.FAILED,
            message="b must hold:\n  it did not",
        ),
        CheckResult(
            name="c.na", invariant="c holds", status=CheckStatus.NOT_APPLICABLE, message="why"
        ),
        CheckResult(
            name="d.after_b",
            invariant="d holds",
            status=CheckStatus.NOT_RUN,
            message="not run: depends on b.fail, which failed; fix b.fail first",
        ),
    ],
)


def test_the_report_round_trips_through_json() -> None:
    data = REPORT.to_json()
    assert msgspec.json.decode(data, type=ConformanceReport) == REPORT
    assert msgspec.json.decode(data)["checks"][1]["status"] == "failed"


def test_the_report_finds_checks_and_failures() -> None:
    assert [check.name for check in REPORT.failed_checks] == ["b.fail"]
    assert REPORT.root_cause is REPORT.checks[1]
    assert REPORT.check("c.na").status is CheckStatus.NOT_APPLICABLE
    with pytest.raises(KeyError):
        REPORT.check("missing")


def test_the_table_leads_with_the_root_cause_and_lists_every_check() -> None:
    table = render_table(REPORT)
    lines = table.splitlines()
    assert "acme 1.0.0" in lines[0]
    assert lines[2] == "fix first: b.fail: it did not"
    assert "PASS  a.pass" in table
    assert "FAIL  b.fail" in table
    assert "N/A   c.na" in table
    assert "----  d.after_b" in table
    assert "  it did not" in table
    assert table.rstrip().endswith(
        "1 passed, 1 failed, 1 not applicable, 1 not run: NOT conformant"
    )


def test_a_conformant_table_has_no_root_cause_line() -> None:
    passed = msgspec.structs.replace(REPORT, ok=True, checks=REPORT.checks[:1])
    table = render_table(passed)
    assert "fix first" not in table
    assert table.rstrip().endswith("1 passed, 0 failed, 0 not applicable: conformant")


SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "n": {"type": ["integer", "null"]}},
    "required": ["ok"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"ok": True}, True),
        ({"ok": True, "n": 3}, True),
        ({"ok": True, "n": 3.0}, True),
        ({"ok": True, "n": None}, True),
        ({"ok": 1}, False),
        ({"ok": True, "n": 2.5}, False),
        ({"ok": True, "n": True}, False),
        ({}, False),
        ({"ok": True, "extra": 1}, False),
        ([], False),
    ],
)
def test_the_schema_checker_applies_the_supported_keywords(value: object, expected: bool) -> None:
    assert satisfies(SCHEMA, value) is expected


def test_the_schema_checker_covers_items_enum_and_const() -> None:
    schema = {"type": "array", "items": {"enum": ["a", 1]}}
    assert satisfies(schema, ["a", 1, 1.0])
    assert not satisfies(schema, ["b"])
    assert not satisfies({"const": False}, 0)
    assert satisfies({"const": 1}, 1.0)
    assert satisfies(True, "anything")
    assert not satisfies(False, "anything")


def test_the_schema_checker_refuses_keywords_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="does not support"):
        satisfies({"type": "string", "minLength": 3}, "abc")
