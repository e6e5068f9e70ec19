"""Grep-style boundary gates that import-linter cannot express. Exits non-zero on any failure.

1. Host-owned vocabulary never appears in the portable layers (contracts, core, ports).
2. Provider and host names never appear in the portable layers' manifests.
3. No production distribution depends on the conformance-only scripted mock.
4. Every distribution declares exactly the third-party and templiqx distributions it imports
   (a distribution listed in an optional extra counts as declared; imports of it must be lazy).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORTABLE = ["templiqx-contracts", "templiqx-core", "templiqx-ports"]
PRODUCTION_WITHOUT_MOCK = [
    "templiqx-application",
    "templiqx-local",
    "templiqx-cli",
    "templiqx-mcp",
    "templiqx-http",
    "templiqx-http-server",
]
VOCABULARY = re.compile(r"approval|permission|tenant|retrieval|queue|audit")
PROVIDERS = re.compile(r"openai|anthropic|gemini|bedrock|basenet|crm3|rmcp", re.IGNORECASE)
# Import name -> distribution name, where they differ.
IMPORT_TO_DIST = {
    "yaml": "pyyaml",
    "jsonschema_rs": "jsonschema-rs",
    "opentelemetry": "opentelemetry-api",
}


def distributions() -> dict[str, Path]:
    found = {}
    for pyproject in [
        *ROOT.glob("packages/*/pyproject.toml"),
        *ROOT.glob("conformance/pyproject.toml"),
    ]:
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        found[name] = pyproject.parent
    return found


def requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def imported_distributions(src: Path, own_module: str) -> set[str]:
    names: set[str] = set()
    for path in src.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top == own_module or top == "__future__":
                    continue
                names.add(IMPORT_TO_DIST.get(top, top.replace("_", "-")).lower())
    return names


def main() -> int:
    failures: list[str] = []
    dists = distributions()
    for name in PORTABLE:
        folder = dists.get(name)
        if folder is None:
            continue
        for path in (folder / "src").rglob("*.py"):
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if VOCABULARY.search(line):
                    failures.append(
                        f"{path.relative_to(ROOT)}:{lineno}: host-owned vocabulary: {line.strip()}"
                    )
        manifest = (folder / "pyproject.toml").read_text()
        if PROVIDERS.search(manifest):
            failures.append(f"{name}/pyproject.toml names a provider or host")
    for name, folder in dists.items():
        project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
        declared = {requirement_name(r) for r in project.get("dependencies", [])}
        extras = {
            requirement_name(r)
            for group in project.get("optional-dependencies", {}).values()
            for r in group
        }
        if name in PRODUCTION_WITHOUT_MOCK and "templiqx-mock" in declared | extras:
            failures.append(f"{name} depends on the conformance-only templiqx-mock")
        imported = imported_distributions(folder / "src", name.replace("-", "_"))
        for missing in sorted(imported - declared - extras):
            failures.append(f"{name} imports {missing} but does not declare it")
        for unused in sorted((declared | extras) - imported):
            failures.append(f"{name} declares {unused} but never imports it")
    for failure in failures:
        print(f"FAIL boundary: {failure}")
    if failures:
        return 1
    print(f"dependency and vocabulary boundaries: ok ({len(dists)} distributions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
