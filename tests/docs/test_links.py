"""Every link in the documentation resolves.

Checked: README.md, every page under docs/ and every distribution's README. A relative link must
name an existing file or folder of the repository, and its ``#anchor`` a heading of that page
(GitHub's anchor rules). A link to this repository on GitHub (``.../blob/main/<path>`` or
``.../tree/main/<path>``) must name an existing path too. Other web links are not fetched.
Every page under docs/ must be reachable from README.md by following links.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GITHUB = "https://github.com/templiqx/templiqx-python/"
PAGES = sorted(
    [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    + [p.parent / "README.md" for p in REPO.glob("packages/*/pyproject.toml")]
    + [REPO / "conformance" / "README.md"]
)

_FENCE = re.compile(r"^(`{3,}|~{3,})")
_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*([^)\s]+)\s*\)")
_INLINE_CODE = re.compile(r"(`+).*?\1")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    lines = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line.lstrip())
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence):
                fence = None
            continue
        if fence is None:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML dropped
    text = text.replace("`", "").strip().lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in "-_ " or category[0] in "LN" or category == "Mn":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page defines."""
    found: set[str] = set()
    seen: Counter[str] = Counter()
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        found.update(_HTML_ANCHOR.findall(line))
        match = _HEADING.match(line)
        if match:
            base = slug(match.group(2))
            found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
            seen[base] += 1
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """Every link target of a page (outside code), with its line number."""
    found = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        prose = _INLINE_CODE.sub("", line)
        found.extend((number, target) for target in _LINK.findall(prose))
        found.extend((number, target) for target in _IMAGE.findall(prose))
    return found


def _problem(page: Path, target: str) -> str | None:
    if target.startswith(GITHUB):
        rest = target[len(GITHUB) :]
        for prefix in ("blob/main/", "tree/main/"):
            if rest.startswith(prefix):
                path = rest[len(prefix) :].split("#")[0]
                return None if (REPO / path).exists() else f"no such path in the repo: {path}"
        return None
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None  # another site, or mailto:
    path_part, _, anchor = target.partition("#")
    destination = (page.parent / path_part).resolve() if path_part else page
    if not destination.exists():
        return f"no such file: {path_part}"
    if REPO not in destination.parents and destination != REPO:
        return f"points outside the repository: {path_part}"
    if anchor:
        if destination.is_dir() or destination.suffix != ".md":
            return f"anchor on a non-Markdown target: {target}"
        if anchor not in anchors(destination):
            return f"no heading for #{anchor} in {destination.relative_to(REPO)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_link_resolves(page: Path) -> None:
    problems = []
    for number, target in links(page):
        problem = _problem(page, target)
        if problem is not None:
            problems.append(f"{page.relative_to(REPO)}:{number}: {target}: {problem}")
    assert problems == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    reached: set[Path] = set()
    todo = [REPO / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for _, target in links(page):
            path_part = target.split("#")[0]
            if not path_part or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            destination = (page.parent / path_part).resolve()
            if destination.suffix == ".md" and destination.is_file():
                todo.append(destination)
    orphans = sorted(
        str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md") if p not in reached
    )
    assert orphans == [], "link these pages from README.md or a page it reaches"


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Quick start", "quick-start"),
        ("`templiqx validate`", "templiqx-validate"),
        ("compile_contract", "compile_contract"),
        (
            "Runtime adapters: fake, mock, openai, langfuse",
            "runtime-adapters-fake-mock-openai-langfuse",
        ),
        ("What's `ok`?", "whats-ok"),
        ("1. Install", "1-install"),
    ],
)
def test_slug_follows_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_the_decisions_page_lists_every_area_note() -> None:
    index = REPO / "docs" / "decisions.md"
    listed = {
        (index.parent / target.split("#")[0]).resolve()
        for _, target in links(index)
        if target.startswith("decisions/")
    }
    notes = set((REPO / "docs" / "decisions").glob("*.md"))
    assert sorted(str(n.relative_to(REPO)) for n in notes - listed) == []
