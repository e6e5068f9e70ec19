"""Every distribution's wheel and sdist carry complete, honest metadata.

Complete: summary, the Apache-2.0 license expression and its text, classifiers, project URLs, the
README as a Markdown long description, ``py.typed``. Honest: the wheel requires exactly what the
pyproject declares, templiqx distributions pinned to the release and every third-party one with
a lower bound; the package README, which PyPI shows, uses no relative links (they would break
there).
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import Requirement

if TYPE_CHECKING:
    from tests.packaging.conftest import Build, Dist

VERSION = "0.2.0"
URL_LABELS = {"Homepage", "Documentation", "Source", "Issues"}
REQUIRED_CLASSIFIERS = {
    "Development Status :: 3 - Alpha",
    "Intended Audience :: Developers",
    "Programming Language :: Python :: 3.11",
    "Typing :: Typed",
}


def _metadata(wheel: Path, dist: Dist) -> tuple[Message, str, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        text = archive.read(f"{dist.stem}-{VERSION}.dist-info/METADATA").decode("utf-8")
    headers, _, body = text.partition("\n\n")
    return HeaderParser().parsestr(headers + "\n"), body, names


def test_wheel_metadata_is_complete(build: Build, dist: Dist) -> None:
    meta, body, files = _metadata(build.wheel(dist), dist)
    assert meta["Name"] == dist.name
    assert meta["Version"] == VERSION
    assert meta["Summary"] == dist.project["description"]
    assert len(str(meta["Summary"])) >= 30, "a one-line description that says what it is"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE"
    assert f"{dist.stem}-{VERSION}.dist-info/licenses/LICENSE" in files
    assert meta["Requires-Python"] == ">=3.11"
    assert set(meta.get_all("Classifier") or []) >= REQUIRED_CLASSIFIERS
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert set(urls) == URL_LABELS
    assert all(u.startswith("https://github.com/templiqx/templiqx-python") for u in urls.values())
    assert meta["Description-Content-Type"] == "text/markdown"
    assert body.startswith(f"# {dist.name}\n"), "the README is the long description"
    assert f"{dist.module}/py.typed" in files
    assert f"{dist.module}/__init__.py" in files


def test_wheel_requires_what_the_pyproject_declares(build: Build, dist: Dist) -> None:
    meta, _, _ = _metadata(build.wheel(dist), dist)
    declared = dist.project["dependencies"]
    required = [Requirement(r) for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert sorted(str(r) for r in required) == sorted(str(Requirement(d)) for d in declared)
    for requirement in required:
        operators = {spec.operator for spec in requirement.specifier}
        if requirement.name.startswith("templiqx-"):
            assert str(requirement.specifier) == f"=={VERSION}", requirement
        else:
            assert ">=" in operators, f"{requirement} needs a lower bound"


def test_sdist_holds_the_sources_license_and_readme(build: Build, dist: Dist) -> None:
    sdist = build.sdist(dist)
    top = f"{dist.stem}-{VERSION}"
    with tarfile.open(sdist) as archive:
        members = set(archive.getnames())
    for required in ("pyproject.toml", "README.md", "LICENSE", "PKG-INFO"):
        assert f"{top}/{required}" in members, f"{required} missing from {sdist.name}"
    assert f"{top}/src/{dist.module}/__init__.py" in members
    assert f"{top}/src/{dist.module}/py.typed" in members


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_package_readme_links_work_on_pypi(dist: Dist) -> None:
    text = (dist.folder / "README.md").read_text(encoding="utf-8")
    relative = [link for link in _LINK.findall(text) if not link.startswith(("https://", "#"))]
    assert relative == [], f"{dist.name}/README.md: use absolute URLs (PyPI shows this file)"


def test_the_twelve_distributions_are_the_workspace_members(all_dists: list[Dist]) -> None:
    root = Path(__file__).resolve().parents[2]
    members = sorted(p.parent for p in root.glob("packages/*/pyproject.toml"))
    members.append(root / "conformance")
    assert sorted(d.folder for d in all_dists) == sorted(members)
    assert len(all_dists) == 12
    for dist in all_dists:
        assert dist.project["name"] == dist.name
        assert (dist.folder / "src" / dist.module / "__init__.py").is_file()


def test_workspace_members_are_listed_one_by_one(all_dists: list[Dist]) -> None:
    """No glob: a folder someone makes under packages/ must never become a workspace member."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    members = pyproject["tool"]["uv"]["workspace"]["members"]
    assert not [member for member in members if any(c in member for c in "*?[")], members
    assert sorted(root / member for member in members) == sorted(d.folder for d in all_dists)
