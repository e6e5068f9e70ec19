"""The load pipeline: includes, tool-contract references, translations; the contract CAS token
(DECISIONS 13) for contracts that use them; locks and dependencies in validate_package."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from templiqx_application import TempliqxService
from templiqx_contracts import CompiledInteraction, Contract, TextNode

Factory = Callable[..., TempliqxService]
Writer = Callable[..., Path]
CAPS = ["structured_output"]


def contract(body: str, *, contract_id: str = "app", extra: str = "") -> str:
    """A contract whose single user message content is ``body`` (YAML node list, indented)."""
    return f"""\
api_version: templiqx/v1alpha1
id: {contract_id}
version: 1.0.0
capabilities: [structured_output]
messages:
  - role: user
    content:
{body}
output_schema:
  type: object
  additionalProperties: false
  properties:
    ok: {{type: boolean}}
{extra}"""


INCLUDE_GREETING = "      - {kind: include, path: partials/greeting.yaml}"


def _messages(service: TempliqxService, package: str = "app", name: str = "app") -> list[str]:
    compiled = service.compile_contract(package, name, capabilities=CAPS)
    assert compiled.ok, compiled.diagnostics
    assert isinstance(compiled.result, CompiledInteraction)
    return [message.content for message in compiled.result.messages]


# --- includes --------------------------------------------------------------------------------


def test_include_splices_partial_content(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(
        scratch_root,
        "app",
        contracts={"app": contract(INCLUDE_GREETING + "\n" + INCLUDE_GREETING)},
        files={"partials/greeting.yaml": '- {kind: text, value: "Hi. "}\n'},
    )
    service = make_service(scratch_root)
    inspected = service.inspect_contract("app", "app")
    assert inspected.ok
    loaded = inspected.result
    assert isinstance(loaded, Contract)
    assert loaded.messages[0].content == [TextNode(value="Hi. "), TextNode(value="Hi. ")]
    assert _messages(service) == ["Hi. Hi. "]
    assert service.validate_contract("app", "app").ok


def test_nested_branch_component_and_cross_package_includes(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    body = """\
      - kind: when
        condition: {kind: literal, value: true}
        then:
          - {kind: include, path: partials/outer.yaml}
        else: []
      - kind: for_each
        collection: {kind: literal, value: [1, 2]}
        item: n
        body:
          - {kind: include, path: shared/dot.yaml, from_dependency: lib}
      - {kind: component, name: typed}
      - {kind: component, name: legacy}"""
    components = """\
components:
  typed:
    parameters: {}
    content:
      - {kind: include, path: partials/inner.yaml}
  legacy:
    - {kind: include, path: shared/dot.yaml, from_dependency: lib}
"""
    write_pkg(
        scratch_root,
        "app",
        contracts={"app": contract(body, extra=components)},
        files={
            "partials/outer.yaml": "- {kind: text, value: '['}\n"
            "- {kind: include, path: partials/inner.yaml}\n"
            "- {kind: text, value: ']'}\n",
            "partials/inner.yaml": "- {kind: text, value: inner}\n",
        },
    )
    # lib is not declared as a dependency: any package under the same root may be included.
    write_pkg(
        scratch_root,
        "lib",
        files={
            "shared/dot.yaml": "- {kind: include, path: shared/mark.yaml}\n",
            "shared/mark.yaml": "- {kind: text, value: '.'}\n",
        },
    )
    service = make_service(scratch_root)
    assert _messages(service) == ["[inner]..inner."]
    loaded = service.inspect_contract("app", "app").result
    assert isinstance(loaded, Contract)
    assert "include" not in str(loaded)


@pytest.mark.parametrize(
    ("files", "body", "code", "message"),
    [
        (
            {"partials/loop.yaml": "- {kind: include, path: partials/loop.yaml}\n"},
            "      - {kind: include, path: partials/loop.yaml}",
            "TQX_INCLUDE_CYCLE",
            "include cycle detected at 'app::partials/loop.yaml'",
        ),
        (
            {},
            "      - {kind: include, path: ../../etc/passwd}",
            "TQX_INCLUDE_UNRESOLVED",
            "cannot resolve include 'app::../../etc/passwd': invalid path: ",
        ),
        (
            {},
            "      - {kind: include, path: partials/missing.yaml}",
            "TQX_INCLUDE_UNRESOLVED",
            "cannot resolve include 'app::partials/missing.yaml': not found: ",
        ),
        (
            {},
            "      - {kind: include, path: x.yaml, from_dependency: ghost}",
            "TQX_INCLUDE_UNRESOLVED",
            "cannot resolve include 'ghost::x.yaml': not found: ghost",
        ),
        (
            {"partials/bad.yaml": "kind: text\nvalue: not a list\n"},
            "      - {kind: include, path: partials/bad.yaml}",
            "TQX_INCLUDE_INVALID",
            "include 'app::partials/bad.yaml' is not a valid node list: ",
        ),
        (
            {"partials/latin.yaml": b"- {kind: text, value: caf\xe9}\n"},
            "      - {kind: include, path: partials/latin.yaml}",
            "TQX_INCLUDE_INVALID",
            "include 'app::partials/latin.yaml' is not a valid node list: the file is not UTF-8",
        ),
    ],
)
def test_include_failures(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Writer,
    files: dict[str, str | bytes],
    body: str,
    code: str,
    message: str,
) -> None:
    write_pkg(scratch_root, "app", contracts={"app": contract(body)}, files=files)
    service = make_service(scratch_root)
    for envelope in (
        service.inspect_contract("app", "app"),
        service.compile_contract("app", "app", capabilities=CAPS),
        service.validate_contract("app", "app"),
    ):
        (diagnostic,) = envelope.diagnostics
        assert diagnostic.code == code
        assert diagnostic.message.startswith(message)
        assert diagnostic.json_pointer == ""
        assert "result" not in envelope.to_builtins()


def test_invalid_partial_points_at_the_partial(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(
        scratch_root,
        "app",
        contracts={"app": contract("      - {kind: include, path: partials/bad.yaml}")},
        files={"partials/bad.yaml": "- {kind: text, value: ok}\n- {kind: nope}\n"},
    )
    (diagnostic,) = make_service(scratch_root).inspect_contract("app", "app").diagnostics
    assert diagnostic.file == "app/partials/bad.yaml"
    assert diagnostic.span is not None
    assert diagnostic.span.line == 2


# --- the CAS token of contracts with includes and tool references (DECISIONS 13) -------------


TOOL_EXTENSION = """\
extensions:
  acme.lookup:
    capability: structured_output
    schema: {"$ref": "tool_contract:lookup", fingerprint: "sha256:abc"}
    value: {query: invoices}
"""
TOOL_CONTRACTS = {
    "lookup": {
        "fingerprint": "sha256:abc",
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query"],
            "properties": {"query": {"type": "string"}},
        },
    }
}


def test_contracts_with_includes_and_tool_refs_are_writable_with_the_inspect_token(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    source = contract(INCLUDE_GREETING, extra=TOOL_EXTENSION)
    write_pkg(
        scratch_root,
        "app",
        tool_contracts=TOOL_CONTRACTS,
        files={"partials/greeting.yaml": "- {kind: text, value: Hi}\n"},
    )
    service = make_service(scratch_root)
    created = service.put_contract("app", "app", source)
    assert created.ok, created.diagnostics
    inspected = service.inspect_contract("app", "app")
    loaded = inspected.result
    assert isinstance(loaded, Contract)
    assert loaded.extensions["acme.lookup"].schema == TOOL_CONTRACTS["lookup"]["schema"]
    token = inspected.fingerprints["contract"]
    assert created.fingerprints["contract"] == token
    assert service.validate_contract("app", "app").fingerprints["contract"] == token

    changed = source.replace("version: 1.0.0", "version: 1.1.0")
    assert [d.code for d in service.put_contract("app", "app", changed).diagnostics] == [
        "TQX_CAS_CONFLICT"
    ]
    stale = service.put_contract("app", "app", changed, expected_fingerprint="0" * 64)
    assert stale.diagnostics[0].message == f"conflict: expected {'0' * 64}, found {token}"
    updated = service.put_contract("app", "app", changed, expected_fingerprint=token)
    assert updated.ok
    new_token = service.inspect_contract("app", "app").fingerprints["contract"]
    assert updated.fingerprints["contract"] == new_token != token

    # Changing the partial changes the loaded contract, hence the token.
    (scratch_root / "app" / "partials" / "greeting.yaml").write_text("- {kind: text, value: Yo}\n")
    assert service.delete_contract("app", "app", expected_fingerprint=new_token).diagnostics[
        0
    ].code == ("TQX_CAS_CONFLICT")
    current = service.inspect_contract("app", "app").fingerprints["contract"]
    deleted = service.delete_contract("app", "app", expected_fingerprint=current)
    assert deleted.ok
    assert deleted.fingerprints == {"contract": current}


def test_put_contract_validates_through_the_full_pipeline(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(scratch_root, "app", tool_contracts=TOOL_CONTRACTS)
    service = make_service(scratch_root)
    unresolved = service.put_contract("app", "app", contract(INCLUDE_GREETING))
    assert [d.code for d in unresolved.diagnostics] == ["TQX_INCLUDE_UNRESOLVED"]
    wrong_pin = contract("      - {kind: text, value: x}", extra=TOOL_EXTENSION).replace(
        "sha256:abc", "sha256:def"
    )
    (diagnostic,) = service.put_contract("app", "app", wrong_pin).diagnostics
    assert diagnostic.code == "TQX_TOOL_CONTRACT_REF_UNRESOLVED"
    assert diagnostic.json_pointer == "/extensions/acme.lookup/schema"
    invalid = service.put_contract("app", "app", contract("      []").replace("1.0.0", "one"))
    assert "TQX_VERSION_INVALID" in [d.code for d in invalid.diagnostics]
    assert invalid.diagnostics[0].file == "app/contracts/app.yaml"
    parse = service.put_contract("app", "app", "id: [")
    assert [d.code for d in parse.diagnostics] == ["TQX_PARSE_YAML"]
    mismatch = service.put_contract("app", "other", contract("      - {kind: text, value: x}"))
    (diagnostic,) = mismatch.diagnostics
    assert diagnostic.code == "TQX_DATA_INVALID"
    assert diagnostic.message == (
        "invalid data: contract id 'app' does not match inventory id 'other'"
    )
    assert not (scratch_root / "app" / "contracts" / "other.yaml").exists()
    missing = service.put_contract(
        "app", "app", contract("      - {kind: text, value: x}"), expected_fingerprint="f"
    )
    assert missing.diagnostics[0].message == "conflict: contract does not exist"


def test_a_stored_contract_that_no_longer_loads_can_be_repaired(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(
        scratch_root,
        "app",
        contracts={"app": contract("      - {kind: include, path: partials/gone.yaml}")},
    )
    service = make_service(scratch_root)
    broken = service.inspect_contract("app", "app")
    assert [d.code for d in broken.diagnostics] == ["TQX_INCLUDE_UNRESOLVED"]
    token = broken.fingerprints["contract"]  # the fingerprint of the stored source text
    repaired = service.put_contract(
        "app", "app", contract("      - {kind: text, value: fixed}"), expected_fingerprint=token
    )
    assert repaired.ok, repaired.diagnostics
    assert _messages(service) == ["fixed"]
    (scratch_root / "app" / "contracts" / "app.yaml").write_text("id: [", "utf-8")
    token = service.inspect_contract("app", "app").fingerprints["contract"]
    deleted = service.delete_contract("app", "app", expected_fingerprint=token)
    assert deleted.ok
    assert (deleted.result.id, deleted.result.version) == ("app", "")


def test_delete_contract_of_a_missing_contract(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(scratch_root, "app")
    envelope = make_service(scratch_root).delete_contract("app", "nope", expected_fingerprint="f")
    assert [d.code for d in envelope.diagnostics] == ["TQX_NOT_FOUND"]


# --- translations ----------------------------------------------------------------------------

TRANSLATED = """\
      - kind: interpolate
        expression: {kind: literal, value: greeting.title}
        filters: [translate]"""


def test_translations_are_injected_into_the_context(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    locale_context = """\
context:
  locale:
    schema: {type: string}
"""
    write_pkg(
        scratch_root,
        "app",
        contracts={"app": contract(TRANSLATED, extra=locale_context)},
        translations=["en", "nl"],
        files={
            "translations/en.yaml": "greeting.title: Hello\n",
            "translations/nl.yaml": "greeting.title: Hallo\n",
        },
    )
    service = make_service(scratch_root)
    forged = service.render_contract(
        "app",
        "app",
        context={"locale": "nl", "_templiqx_translations": {"nl": {"greeting.title": "X"}}},
        capabilities=CAPS,
    )
    # the bundles are the package's: a caller's own is refused, never rendered (issue #29)
    assert [(d.code, d.json_pointer) for d in forged.diagnostics] == [
        ("TQX_CONTEXT_RESERVED", "/context/_templiqx_translations")
    ]
    dutch = service.render_contract("app", "app", context={"locale": "nl"}, capabilities=CAPS)
    assert dutch.ok, dutch.diagnostics
    assert [m.content for m in dutch.result] == ["Hallo"]
    assert _messages(service) == ["Hello"]


@pytest.mark.parametrize(
    ("files", "code", "pointer"),
    [
        (
            {"translations/en.yaml": "- not\n- a map\n"},
            "TQX_TRANSLATION_INVALID",
            "/translations/en",
        ),
        (
            {"translations/en.yaml": b"greeting.title: caf\xe9\n"},
            "TQX_TRANSLATION_INVALID",
            "/translations/en",
        ),
        ({}, "TQX_NOT_FOUND", ""),
    ],
)
def test_translation_failures(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Writer,
    files: dict[str, str | bytes],
    code: str,
    pointer: str,
) -> None:
    write_pkg(
        scratch_root,
        "app",
        contracts={"app": contract(TRANSLATED)},
        translations=["en"],
        files=files,
    )
    envelope = make_service(scratch_root).compile_contract("app", "app", capabilities=CAPS)
    (diagnostic,) = envelope.diagnostics
    assert (diagnostic.code, diagnostic.json_pointer) == (code, pointer)
    assert diagnostic.file == "app/translations/en.yaml"


def test_reference_demo_translations(reference: Path, make_service: Factory) -> None:
    service = make_service(reference / "packages")
    compiled = service.compile_contract(
        "demo",
        "greeting",
        inputs={"name": " Ryan "},
        context={"organization": " Blinqx "},
        capabilities=CAPS,
    )
    assert compiled.ok, compiled.diagnostics
    assert [m.content for m in compiled.result.messages] == [
        "You write concise greetings.",
        "Hello Ryan for Blinqx",
    ]


# --- locks and dependencies ------------------------------------------------------------------


def _dependency_codes(
    root: Path, make_service: Factory, write_pkg: Writer, lock: str | None, **manifest: object
) -> list[tuple[str, str]]:
    files = {} if lock is None else {"templiqx.lock": lock}
    write_pkg(root, "app", files=files, **manifest)
    envelope = make_service(root).validate_package("app")
    if envelope.ok:
        assert set(envelope.fingerprints) == {"package_identity"}
    else:
        assert envelope.fingerprints == {}
    return [(d.code, d.json_pointer or "") for d in envelope.diagnostics]


LOCK = "dependencies:\n  lib: {path: ../lib, fingerprint: 'sha256:aaa'}\n"


def test_matching_lock_and_present_root_validate(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(scratch_root, "lib")
    found = _dependency_codes(
        scratch_root, make_service, write_pkg, LOCK, dependencies={"lib": "sha256:aaa"}
    )
    assert found == []


@pytest.mark.parametrize(
    ("lock", "dependencies", "expected"),
    [
        (LOCK, {"lib": "sha256:bbb"}, [("TQX_LOCK_DRIFT", "/dependencies/lib")]),
        (None, {"lib": "sha256:aaa"}, [("TQX_LOCK_MISSING", "/dependencies")]),
        ("dependencies: {}\n", {"lib": "sha256:aaa"}, [("TQX_LOCK_DRIFT", "/dependencies/lib")]),
        (LOCK, {}, [("TQX_LOCK_DRIFT", "/templiqx.lock")]),
        (
            "dependencies:\n  ghost: {path: x, fingerprint: f}\n",
            {"ghost": "f"},
            [("TQX_DEPENDENCY_ROOT_MISSING", "/dependencies/ghost")],
        ),
        ("dependencies: [\n", {}, [("TQX_LOCK_INVALID", "/templiqx.lock")]),
        ("unknown: 1\n", {}, [("TQX_LOCK_INVALID", "/templiqx.lock")]),
    ],
)
def test_lock_and_dependency_problems(
    scratch_root: Path,
    make_service: Factory,
    write_pkg: Writer,
    lock: str | None,
    dependencies: dict[str, str],
    expected: list[tuple[str, str]],
) -> None:
    write_pkg(scratch_root, "lib")
    manifest: dict[str, object] = {"dependencies": dependencies} if dependencies else {}
    assert _dependency_codes(scratch_root, make_service, write_pkg, lock, **manifest) == expected


def test_validate_package_manifest_and_inventory_checks(
    scratch_root: Path, make_service: Factory, write_pkg: Writer, greeting: Callable[..., str]
) -> None:
    write_pkg(
        scratch_root,
        "app",
        contracts={"hello": greeting("other")},
        package="renamed",
        version="1.0",
        api_version="templiqx/v0",
        evals=["evals/a.json", "evals/missing.json", "../escape.json"],
        templates=["evals/a.json"],
        files={"evals/a.json": "{}"},
    )
    envelope = make_service(scratch_root).validate_package("app")
    found = [(d.code, d.json_pointer) for d in envelope.diagnostics]
    assert found == [
        ("TQX_MANIFEST_API_VERSION", "/api_version"),
        ("TQX_MANIFEST_PACKAGE", "/package"),
        ("TQX_MANIFEST_VERSION_INVALID", "/version"),
        ("TQX_PATH_INVALID", "/evals/../escape.json"),
        ("TQX_INVENTORY_DUPLICATE", "/templates/evals/a.json"),
        ("TQX_NOT_FOUND", "/evals/evals/missing.json"),
        ("TQX_CONTRACT_INVENTORY_ID", "/contracts/hello"),
    ]
    missing = envelope.diagnostics[5]
    assert missing.file == "app/evals/missing.json"
    summaries = envelope.result
    assert [s.id for s in summaries] == ["other"]
    assert envelope.fingerprints == {}
    assert envelope.diagnostics[4].message == "artifact 'evals/a.json' is listed more than once"


def test_missing_contract_and_package_messages_are_portable(
    scratch_root: Path, make_service: Factory, write_pkg: Writer
) -> None:
    write_pkg(scratch_root, "app")
    service = make_service(scratch_root)
    (missing,) = service.inspect_contract("app", "nope").diagnostics
    assert (missing.code, missing.message) == (
        "TQX_NOT_FOUND",
        "not found: app/contracts/nope.yaml",
    )
    (ghost,) = service.inspect_contract("ghost", "nope").diagnostics
    assert (ghost.code, ghost.message) == ("TQX_NOT_FOUND", "not found: ghost")
    assert str(scratch_root) not in missing.message
    # a missing package says where packages are looked for and how to look elsewhere
    assert ghost.help is not None
    assert ghost.help.startswith("There is no package folder 'ghost' under the packages root.")
    assert "--root DIR" in ghost.help
    assert str(scratch_root) not in ghost.help
    for envelope in (service.validate_package("ghost"), service.list_evals("ghost")):
        assert envelope.diagnostics == [ghost]


@pytest.mark.parametrize("kind", ["symlink", "oversized"])
def test_an_unreadable_lock_is_invalid_not_absent(
    scratch_root: Path, make_service: Factory, write_pkg: Writer, kind: str
) -> None:
    # Regression (issue #9 R7): a lock the store refuses to read was treated as no lock at all.
    write_pkg(scratch_root, "app")
    lock = scratch_root / "app" / "templiqx.lock"
    if kind == "symlink":
        target = scratch_root.parent / "elsewhere.lock"
        target.write_text("dependencies: {}\n")
        lock.symlink_to(target)
    else:
        with lock.open("wb") as out:
            out.truncate(8 * 1024 * 1024 + 1)  # sparse, over MAX_DOCUMENT_BYTES
    envelope = make_service(scratch_root).validate_package("app")
    codes = [(d.code, d.json_pointer) for d in envelope.diagnostics]
    assert codes == [("TQX_LOCK_INVALID", "/templiqx.lock")]
    assert envelope.fingerprints == {}
    if kind == "oversized":
        assert "MAX_DOCUMENT_BYTES" in envelope.diagnostics[0].message
