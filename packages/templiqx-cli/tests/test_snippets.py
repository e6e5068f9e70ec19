"""The human form of a diagnostic shows its source line with a caret underline (#19 item 4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from templiqx_cli.output import render_diagnostic
from templiqx_cli.snippets import MAX_SOURCE_BYTES, SourceFiles, from_cwd, snippet_lines
from templiqx_contracts import Diagnostic, SourceSpan

TEXT = "api_version: templiqx/v1alpha1\ninputs:\n  name: {schema: {type: strng}}\n"


def at(
    line: int, column: int, end: int | None = None, file: str = "pkg/contracts/c.yaml"
) -> Diagnostic:
    span = SourceSpan(line=line, column=column, end_line=line, end_column=end or column)
    return Diagnostic.error(
        "TQX_SCHEMA_TYPE_UNSUPPORTED", "bad type", "/inputs/name", file=file, span=span, help="fix"
    )


def test_the_line_is_shown_with_carets_under_the_span() -> None:
    assert snippet_lines(at(3, 25, 30), TEXT) == [
        "    |",
        "  3 |   name: {schema: {type: strng}}",
        "    |                         ^^^^^",
    ]


def test_a_point_span_gets_one_caret_and_the_gutter_fits_the_line_number() -> None:
    text = "\n" * 11 + "x: 1\n"
    assert snippet_lines(at(12, 1), text) == ["     |", "  12 | x: 1", "     | ^"]


def test_a_span_that_no_longer_fits_the_file_has_no_snippet() -> None:
    assert snippet_lines(at(9, 1), TEXT) == []  # the file got shorter
    assert snippet_lines(at(4, 1), TEXT) == ["    |", "  4 |", "    | ^"]  # where input ends
    assert snippet_lines(at(1, 90), TEXT) == []  # or the line did
    no_span = Diagnostic.error("TQX_IO", "x", "", file="pkg/contracts/c.yaml")
    assert snippet_lines(no_span, TEXT) == []


def test_control_characters_cannot_reach_the_terminal() -> None:
    text = "a: \x1b[31mred\x1b[0m\u202eevil\tx\n"
    (_, line, carets) = snippet_lines(at(1, 4, 8), text)
    assert "\x1b" not in line
    assert "\u202e" not in line
    assert line == "  1 | a: \ufffd[31mred\ufffd[0m\ufffdevil x"
    assert carets == "    |    ^^^^"


def test_wide_characters_keep_the_carets_aligned() -> None:
    text = "名前: {type: strng}\n"
    (_, _, carets) = snippet_lines(at(1, 12, 17), text)
    assert carets == "    |" + " " * 14 + "^^^^^"


def test_a_long_line_is_shown_as_a_window_around_the_span() -> None:
    text = "k: " + "a" * 500 + " strng " + "b" * 500 + "\n"
    column = text.index("strng") + 1
    (_, line, carets) = snippet_lines(at(1, column, column + 5), text)
    assert len(line) < 120
    assert line.startswith("  1 | …")
    assert line.endswith("…")
    underlined = carets.index("^")
    assert line[underlined : underlined + 5] == "strng"
    assert carets.endswith("^^^^^")


def test_render_diagnostic_reads_the_file_under_the_packages_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg" / "contracts").mkdir(parents=True)
    (tmp_path / "pkg" / "contracts" / "c.yaml").write_text(TEXT)
    monkeypatch.chdir(tmp_path.parent)
    files = SourceFiles(tmp_path.name)  # --root given relative to the working directory
    assert render_diagnostic(at(3, 25, 30), files).split("\n") == [
        "TQX_SCHEMA_TYPE_UNSUPPORTED error /inputs/name: bad type",
        f"  --> {tmp_path.name}/pkg/contracts/c.yaml:3:25",  # one location, from the cwd
        "    |",
        "  3 |   name: {schema: {type: strng}}",
        "    |                         ^^^^^",
        "  help: fix",
    ]
    # an absolute root inside the working directory is shown relative to it
    shown = render_diagnostic(at(3, 25, 30), SourceFiles(str(tmp_path)))
    assert shown.split("\n")[1] == f"  --> {tmp_path.name}/pkg/contracts/c.yaml:3:25"
    # the file the user gave for the label wins, and the location names it as given
    given = tmp_path / "mine.yaml"
    given.write_text("x\ny\n  name: {schema: {type: strng}}\n")
    shown = render_diagnostic(
        at(3, 25, 30), SourceFiles(str(tmp_path), {"pkg/contracts/c.yaml": str(given)})
    )
    assert shown.split("\n")[1] == f"  --> {given}:3:25"
    assert shown.split("\n")[3] == "  3 |   name: {schema: {type: strng}}"
    # a plain mapping of given files works as before, with the snippet
    assert render_diagnostic(at(3, 25, 30), {"pkg/contracts/c.yaml": str(given)}).count("^") == 5


def test_a_root_outside_the_working_directory_is_shown_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    shown = render_diagnostic(at(3, 25, 30), SourceFiles(str(tmp_path / "root")))
    assert shown.split("\n")[1] == f"  --> {tmp_path / 'root' / 'pkg/contracts/c.yaml'}:3:25"


def test_a_vanished_file_just_has_no_snippet(tmp_path: Path) -> None:
    shown = render_diagnostic(at(3, 25, 30), SourceFiles(str(tmp_path)))
    assert shown.split("\n") == [
        "TQX_SCHEMA_TYPE_UNSUPPORTED error /inputs/name: bad type",
        f"  --> {from_cwd(str(tmp_path / 'pkg' / 'contracts' / 'c.yaml'))}:3:25",
        "  help: fix",
    ]
    assert render_diagnostic(at(3, 25, 30)).split("\n")[1] == "  --> pkg/contracts/c.yaml:3:25"


@pytest.mark.parametrize("label", ["../outside.yaml", "/etc/passwd", "a/../../b.yaml", "a\\b.yaml"])
def test_labels_never_leave_the_packages_root(tmp_path: Path, label: str) -> None:
    (tmp_path / "outside.yaml").write_text("secret: 1\n")
    root = tmp_path / "root"
    root.mkdir()
    assert SourceFiles(str(root)).text(label) is None


def test_only_regular_files_within_the_bound_are_read(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "real.yaml").write_text("a: 1\n")
    os.symlink(tmp_path / "real.yaml", tmp_path / "pkg" / "link.yaml")
    os.mkfifo(tmp_path / "pkg" / "fifo.yaml")
    (tmp_path / "pkg" / "big.yaml").write_bytes(b"a" * (MAX_SOURCE_BYTES + 1))
    files = SourceFiles(str(tmp_path))
    assert files.text("pkg/link.yaml") is None
    assert files.text("pkg/fifo.yaml") is None  # never blocks on a FIFO
    assert files.text("pkg/big.yaml") is None
    assert files.text("real.yaml") == "a: 1\n"
    assert len(files) == 0
    assert list(files) == []
    assert files  # no given file, yet it reads under the root: `files or {}` must keep it
