"""Exit codes 0 / 2 / 1, what goes to stdout and stderr, and reading the files a command names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from templiqx_cli import main
from templiqx_cli.inputs import CliError, absolute_workspace, read_values

CONTRACT = "onboarding-summary"


def _request(root: Path) -> Path:
    return root / "welcome" / "scenarios" / "stream-vip" / "request.json"


def test_ok_envelope_exits_0_with_nothing_on_stderr(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(packages_root), "validate", "welcome"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0] == "✓ validate welcome: 2 contracts valid"
    assert out.err == ""
    assert main(["--root", str(packages_root), "--json", "validate", "welcome"]) == 0
    out = capsys.readouterr()
    envelope = json.loads(out.out)
    assert envelope["operation"] == "validate_package"
    assert out.out == json.dumps(envelope, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert out.err == ""


def test_not_ok_envelope_exits_2_and_shows_diagnostics_to_people(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--root", str(packages_root), "compile", "welcome", CONTRACT]
    assert main(["--json", *argv]) == 2
    out = capsys.readouterr()
    assert out.err == ""
    assert "\n" not in out.out.rstrip("\n")
    envelope = json.loads(out.out)
    assert envelope["ok"] is False
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.err == ""
    errors = len(envelope["diagnostics"])
    assert out.out.splitlines()[0] == (
        f"✗ compile welcome/{CONTRACT}: {errors} error{'s' if errors > 1 else ''}"
    )
    for diagnostic in envelope["diagnostics"]:
        assert diagnostic["code"] in out.out
        assert diagnostic["message"] in out.out


def test_help_lines_are_shown(packages_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--root", str(packages_root), "verify-package-trust", "welcome", "--strict"]
    assert main(["--json", *argv]) == 2
    help_text = json.loads(capsys.readouterr().out)["diagnostics"][0]["help"]
    assert main(argv) == 2
    assert f"help: {help_text}" in capsys.readouterr().out


def test_unreadable_file_exits_1_after_composing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "fresh-root"
    root.mkdir()
    missing = tmp_path / "missing.json"
    argv = ["--root", str(root), "compile", "welcome", CONTRACT, "--values", str(missing)]
    assert main(argv) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == f"templiqx: read {missing}: No such file or directory (os error 2)\n"
    assert list(root.iterdir()) == [], "composing the root writes nothing"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"inputs": {}, "extra": 1}', "unknown field `extra`"),
        ('{"inputs": []}', "`inputs` must be a JSON object"),
        ("[1]", "expected a JSON object"),
    ],
)
def test_values_file_is_strict(
    tmp_path: Path, packages_root: Path, content: str, message: str
) -> None:
    values = tmp_path / "values.json"
    values.write_text(content)
    with pytest.raises(CliError) as raised:
        read_values(str(values))
    assert str(raised.value).startswith(f"decode render request from {values}: ")
    assert message in str(raised.value)


@pytest.mark.parametrize("content", ['{"inputs": {"x": NaN}}', '{"inputs": ', "1e999"])
def test_json_files_refuse_what_json_cannot_fingerprint(
    tmp_path: Path, packages_root: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    values = tmp_path / "values.json"
    values.write_text(content)
    argv = ["--root", str(packages_root), "render", "welcome", CONTRACT, "--values", str(values)]
    assert main(argv) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith(f"templiqx: decode JSON from {values}: ")


def test_a_broken_json_file_names_line_column_and_code(
    tmp_path: Path, packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = tmp_path / "v.json"
    values.write_text('{"inputs": {\n  "a": 1,\n')
    argv = ["--root", str(packages_root), "render", "welcome", CONTRACT, "--values", str(values)]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"templiqx: decode JSON from {values}: the document ends too early (unclosed brace, "
        "bracket or string?) at line 3 column 1 [TQX_DATA_INVALID]\n"
    )
    values.write_text('{"inputs": {\n  "a": 1,,\n}}')
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"templiqx: decode JSON from {values}: expecting property name")
    assert err.endswith(" at line 2 column 10 [TQX_DATA_INVALID]\n")
    values.write_bytes(b'{"inputs":\n {"a": "\xff"}}')
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"templiqx: decode JSON from {values}: the file is not valid UTF-8 (byte 0xff) "
        "at line 2 column 9 [TQX_DATA_INVALID]\n"
    )


def test_a_root_that_is_a_file_is_named_with_a_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("x")
    assert main(["--root", "afile", "discover"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        "templiqx: compose local Templiqx service: invalid path: packages root 'afile' is a "
        "file, not a directory; name an existing folder [TQX_PATH_INVALID]\n"
        "  help: pass --root DIR naming the folder that holds the package folders (default: .)\n"
    )
    assert main(["--root", "afile/packages", "discover"]) == 1
    assert "packages root 'afile/packages' does not exist: 'afile' is a file" in (
        capsys.readouterr().err
    )
    assert main(["--root", "missing", "discover"]) == 1  # issue #19: never created by a read
    assert capsys.readouterr().err.startswith(
        "templiqx: compose local Templiqx service: invalid path: packages root 'missing' does "
        "not exist [TQX_PATH_INVALID]\n"
    )
    assert not Path("missing").exists()


def test_put_source_must_be_utf8(
    tmp_path: Path, packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "c.yaml"
    source.write_bytes(b"\xff\xfe")
    assert main(["--root", str(packages_root), "put", "welcome", "c", str(source)]) == 1
    assert "is not valid UTF-8" in capsys.readouterr().err


def test_fixture_output_file_feeds_the_fake_runtime(
    tmp_path: Path, packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads(
        (packages_root / "welcome/scenarios/stream-vip/manifest.json").read_text()
    )
    output = tmp_path / "output.json"
    output.write_text(json.dumps(manifest["events"][-1]["output"]))
    argv = ["--root", str(packages_root), "--json", "execute", "welcome", CONTRACT]
    argv += ["--values", str(_request(packages_root)), "--capability", "structured_output"]
    assert main([*argv, "--fixture-output", str(output)]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["result"]["output"] == manifest["events"][-1]["output"]
    assert main(argv) == 2, "the fake runtime needs a fixture; the service says so"
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["diagnostics"][0]["code"] == "TQX_DATA_INVALID"
    assert "fixture_output" in envelope["diagnostics"][0]["message"]


def test_unknown_runtime_is_a_usage_error(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--root", str(packages_root), "--runtime", "warp", "discover"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("templiqx: unknown runtime 'warp' (--runtime); installed runtimes:")
    assert "fake" in out.err


def test_workspace_is_made_absolute_without_normalising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_workspace("ws/../x") == os.path.join(str(tmp_path), "ws/../x")
    assert absolute_workspace("/abs/ws") == "/abs/ws"


def test_create_in_a_missing_root_says_to_make_the_folder_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #28 (docs drift): the error and ``create --help`` say the root must be made first
    (templiqx never creates a packages root), and doing what they say works."""
    monkeypatch.chdir(tmp_path)
    argv = ["--root", "my packages", "create", "demo", "--version", "0.1.0"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "packages root 'my packages' does not exist" in err
    assert "help: create the folder first (mkdir -p 'my packages': templiqx never creates" in err
    assert not Path("my packages").exists()
    Path("my packages").mkdir()  # what mkdir -p does
    assert main(argv) == 0
    capsys.readouterr()
    assert (tmp_path / "my packages" / "demo" / "templiqx.yaml").is_file()
    assert main(["create", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "The packages root (--root DIR) must exist: create it first (mkdir -p DIR)." in shown


def test_reads_write_nothing_not_even_the_artifact_workspace(
    packages_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #28 (docs drift): the quick start's reads create no ``.templiqx-workspace/``."""

    def tree() -> dict[str, bytes]:
        return {
            str(path.relative_to(packages_root)): path.read_bytes() if path.is_file() else b""
            for path in sorted(packages_root.rglob("*"))
        }

    before = tree()
    root = ["--root", str(packages_root)]
    assert main([*root, "validate", "welcome"]) == 0
    assert main([*root, "explain", "welcome", "onboarding-summary"]) == 0
    assert main([*root, "list-workspace-artifacts", "welcome"]) == 0
    capsys.readouterr()
    assert tree() == before
    assert not any(".templiqx-workspace" in name for name in tree())
