"""The portable core imports only the standard library, templiqx-contracts, msgspec, PyYAML and
jsonschema-rs (import-linter enforces the layers; this pins the third-party set too)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import templiqx_core

SRC = Path(__file__).resolve().parents[1] / "src" / "templiqx_core"
ALLOWED = {"templiqx_core", "templiqx_contracts", "msgspec", "yaml", "jsonschema_rs"}
FORBIDDEN_STDLIB = {"socket", "http", "urllib", "subprocess", "asyncio", "os", "io", "pathlib"}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_imports_only_what_it_declares() -> None:
    modules = sorted(SRC.glob("*.py"))
    assert len(modules) > 10
    for path in modules:
        roots = imported_roots(path) - {"__future__"}
        third_party = {root for root in roots if root not in sys.stdlib_module_names}
        assert third_party <= ALLOWED, (path.name, third_party - ALLOWED)


def test_semantic_modules_touch_no_io() -> None:
    semantic = [
        path
        for path in SRC.glob("*.py")
        if not path.name.startswith(("_yaml", "yaml_", "parse", "limits"))
    ]
    for path in semantic:
        assert not imported_roots(path) & FORBIDDEN_STDLIB, path.name


def test_public_api() -> None:
    expected = {
        "CORE_CODES",
        "compile_interaction",
        "diff_contracts",
        "explain_contract",
        "is_semver",
        "parse_contract",
        "parse_json_value",
        "parse_lock",
        "parse_manifest",
        "parse_node_list",
        "parse_render_request",
        "parse_translation_bundle",
        "render_messages",
        "resolve_tool_contract_refs",
        "strict_json_equal",
        "validate_contract",
        "validate_output",
        "validate_values",
    }
    assert expected <= set(templiqx_core.__all__)
    for name in templiqx_core.__all__:
        assert hasattr(templiqx_core, name), name
