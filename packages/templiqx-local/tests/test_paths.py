"""The naming rules: segments, reserved names and portable relative paths."""

from __future__ import annotations

import pytest

from templiqx_contracts import quote_input
from templiqx_local import (
    check_package_name,
    check_relative_path,
    check_segment,
    is_relative_path,
    is_segment,
)
from templiqx_ports import InvalidPathError


@pytest.mark.parametrize(
    "value", ["demo", "crm3", "basenet-legal", "a.b_c-D9", ".hidden", "x" * 250, "..."]
)
def test_valid_segments(value: str) -> None:
    assert is_segment(value)
    assert check_segment(value, "package name") == value


@pytest.mark.parametrize(
    "value",
    [
        "",
        ".",
        "..",
        "a/b",
        "a\\b",
        "a b",
        "a\x00b",
        "é",
        "\uff44\uff45\uff4d\uff4f",  # fullwidth lookalike of "demo"
        "demo\n",
        "x" * 251,
        "a:b",
    ],
)
def test_invalid_segments(value: str) -> None:
    assert not is_segment(value)
    with pytest.raises(InvalidPathError) as raised:
        check_segment(value, "contract id")
    assert raised.value.code == "TQX_PATH_INVALID"
    assert "contract id" in str(raised.value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("../..", "must be one name, not a path: it contains '/' (path separators and '..'"),
        ("a\\b", "must be one name, not a path: it contains '\\\\'"),
        ("a b", "contains ' ', which is not allowed"),
        ("a:b?", "contains ':', '?', which are not allowed"),
    ],
)
def test_an_invalid_name_says_what_is_wrong_with_it(value: str, problem: str) -> None:
    with pytest.raises(InvalidPathError) as raised:
        check_package_name(value)
    message = str(raised.value)
    assert message.startswith(f"invalid path: package name {quote_input(value)} {problem}"), message
    assert message.endswith("; use only ASCII letters, digits, '.', '_' and '-'")


def test_reserved_package_names() -> None:
    for name in (".templiqx-package-locks", ".templiqx-workspace", ".templiqx-tmp.1.ab"):
        assert is_segment(name)
        with pytest.raises(InvalidPathError, match="reserved"):
            check_package_name(name)
    assert check_package_name(".templiqx") == ".templiqx"


@pytest.mark.parametrize(
    ("value", "parts"),
    [
        ("a", ("a",)),
        ("evals/x.json", ("evals", "x.json")),
        ("with space/ünïcode ✓.txt", ("with space", "ünïcode ✓.txt")),
        ("...", ("...",)),
        ("a/.b/c..d", ("a", ".b", "c..d")),
    ],
)
def test_valid_relative_paths(value: str, parts: tuple[str, ...]) -> None:
    assert is_relative_path(value)
    assert check_relative_path(value) == parts


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("../x", "'..'"),
        ("a/../b", "'..'"),
        ("./a", "'.'"),
        ("a/.", "'.'"),
        ("a//b", "empty segments"),
        ("a/", "empty segments"),
        ("a\\b", "backslash"),
        ("..\\x", "backslash"),
        ("a\x00b", "NUL"),
        ("x" * 256, "longer than 255"),
        ("a/" * 2100 + "b", "longer than 4096"),
        ("\udcff", "not valid Unicode"),
    ],
)
def test_invalid_relative_paths(value: str, reason: str) -> None:
    assert not is_relative_path(value)
    with pytest.raises(InvalidPathError) as raised:
        check_relative_path(value, "artifact path")
    assert reason in str(raised.value)
    assert str(raised.value).startswith("invalid path: artifact path ")


def test_messages_escape_control_characters() -> None:
    with pytest.raises(InvalidPathError) as raised:
        check_relative_path("a\x00\nb")
    assert "\x00" not in str(raised.value)
    assert "\n" not in str(raised.value)
