"""R2: path attacks on every service operation that takes a package, contract, artifact or
workspace path — and on the paths a contract, manifest or lock carries inside it.

A sentinel tree lives *outside* the packages root and the workspace. It is reachable through
symlinked package folders, symlinked ``contracts/`` folders, symlinked files and directories,
and hard links planted inside the root and the workspace. Every attack goes through
``TempliqxService.invoke`` with, where a compare-and-swap token is needed, the token that
*would* be correct for the sentinel file, so a resolution bug would turn straight into a write.

Reads outside the root are detected three ways: the sentinel text, the SHA-256 of any sentinel
file or the fingerprint of its text appearing in an envelope, and the sentinel files' access
times (set to the epoch before the attacks; ``relatime`` updates them on any read). Writes are
detected by comparing the sentinel tree (names, kinds, sizes, modes, mtimes, inode numbers)
after every attack and byte for byte at the end. The store's own hostile-name corpus
(``packages/templiqx-local/tests/test_path_attacks.py``) covers the store methods directly;
this suite covers the operations every surface exposes.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import reliability_kit as kit

from templiqx_application import TempliqxService
from templiqx_contracts import fingerprint, fingerprint_bytes
from templiqx_core.parse import parse_contract, parse_manifest
from templiqx_local import compose

SUITE = "R2"
SENTINEL = "SENTINEL-r2-5c1e"
SIGNING_KEY = "r2-signing-key-not-secret"

OUTSIDE_FILES = {
    "secret.txt": SENTINEL,
    "secret.yaml": (
        "api_version: templiqx/v1alpha1\nid: linked\nversion: 1.0.0\n"
        f"description: {SENTINEL}\nmessages:\n  - role: user\n    content:\n"
        f"      - {{kind: text, value: {SENTINEL}}}\n"
        "output_schema: {type: string}\n"
    ),
    "hard.yaml": (
        "api_version: templiqx/v1alpha1\nid: hard\nversion: 1.0.0\n"
        f"description: {SENTINEL}\nmessages:\n  - role: user\n    content:\n"
        f"      - {{kind: text, value: {SENTINEL}}}\n"
        "output_schema: {type: string}\n"
    ),
    "hard.txt": SENTINEL + " hard",
    "templiqx.yaml": (
        f"api_version: templiqx/v1alpha1\npackage: evil\nversion: 1.0.0\ndescription: {SENTINEL}\n"
    ),
    "contracts/greeting.yaml": (
        "api_version: templiqx/v1alpha1\nid: greeting\nversion: 1.0.0\n"
        f"description: {SENTINEL}\nmessages:\n  - role: user\n    content:\n"
        f"      - {{kind: text, value: {SENTINEL}}}\n"
        "output_schema: {type: string}\n"
    ),
    "partials/p.yaml": f"- kind: text\n  value: {SENTINEL}\n",
    "partials/hard.yaml": f"- kind: text\n  value: {SENTINEL} hard\n",
    "translations/nl.yaml": f"greeting: {SENTINEL}\n",
    "evals/e.json": f'{{"sentinel": "{SENTINEL}"}}',
    "p/secret.txt": SENTINEL,
    "welcome/secret.txt": SENTINEL,
}


@dataclass
class Sandbox:
    base: Path
    outside: Path
    root: Path
    ws: Path
    service: TempliqxService
    forbidden: tuple[str, ...]
    tokens: dict[str, str]
    atime_works: bool
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _tree(folder: Path) -> dict[str, tuple[Any, ...]]:
    """Names, kinds, sizes, modes, mtimes and inodes below ``folder`` (reads no content)."""
    state: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            state[os.path.relpath(path, folder)] = (
                stat.S_IFMT(info.st_mode),
                info.st_size,
                info.st_mode,
                info.st_mtime_ns,
                info.st_ino,
            )
    return state


def _contents(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def _atimes(folder: Path) -> dict[str, int]:
    times = {".": os.lstat(folder).st_atime_ns}
    for path in folder.rglob("*"):
        times[str(path.relative_to(folder))] = os.lstat(path).st_atime_ns
    return times


def _reset_atimes(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        info = os.lstat(path)
        os.utime(path, ns=(0, info.st_mtime_ns), follow_symlinks=False)


def _atime_probe(folder: Path) -> bool:
    """Whether reading a file updates its access time on this filesystem."""
    probe = folder / "atime-probe.txt"
    probe.write_text("probe")
    _reset_atimes(folder)
    probe.read_bytes()
    works = os.lstat(probe).st_atime_ns != 0
    probe.unlink()
    return works


def _plant(folder: Path, outside: Path) -> None:
    """Symlinks and hard links to the sentinel tree inside a package or workspace folder."""
    for sub in ("contracts", "partials", "evals", "translations"):
        (folder / sub).mkdir(exist_ok=True)
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linkdir").symlink_to(outside, target_is_directory=True)
    (folder / "contracts" / "linked.yaml").symlink_to(outside / "secret.yaml")
    (folder / "contracts" / "linkdir").symlink_to(outside / "contracts", target_is_directory=True)
    (folder / "partials" / "linked.yaml").symlink_to(outside / "partials" / "p.yaml")
    (folder / "translations" / "xx.yaml").symlink_to(outside / "translations" / "nl.yaml")
    (folder / "evals" / "link.json").symlink_to(outside / "evals" / "e.json")
    os.link(outside / "hard.txt", folder / "hard.txt")
    os.link(outside / "hard.yaml", folder / "contracts" / "hard.yaml")
    os.link(outside / "partials" / "hard.yaml", folder / "partials" / "hard.yaml")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    base = tmp_path_factory.mktemp("r2")
    outside = base / "outside"
    for relative, text in OUTSIDE_FILES.items():
        (outside / relative).parent.mkdir(parents=True, exist_ok=True)
        (outside / relative).write_text(text, encoding="utf-8")
    root = base / "root"
    ws = root / ".templiqx-workspace"
    kit.fresh_welcome(root)
    _plant(root / "welcome", outside)
    (root / "evil").symlink_to(outside, target_is_directory=True)
    shutil.copytree(kit.WELCOME, root / "linkedcontracts")
    manifest = root / "linkedcontracts" / "templiqx.yaml"
    manifest.write_text(
        manifest.read_text().replace("package: welcome", "package: linkedcontracts")
    )
    shutil.rmtree(root / "linkedcontracts" / "contracts")
    (root / "linkedcontracts" / "contracts").symlink_to(outside / "contracts")
    (ws / "welcome").mkdir(parents=True)
    (ws / "welcome" / "a.txt").write_text("artifact")
    _plant(ws / "welcome", outside)
    (ws / "evil").symlink_to(outside / "p", target_is_directory=True)

    forbidden = [SENTINEL]
    tokens: dict[str, str] = {}
    for relative, text in OUTSIDE_FILES.items():
        forbidden += [fingerprint_bytes(text.encode()), fingerprint(text)]
        tokens[relative] = fingerprint_bytes(text.encode())
    for name in ("secret.yaml", "hard.yaml", "contracts/greeting.yaml"):
        contract, _ = parse_contract(OUTSIDE_FILES[name])
        assert contract is not None
        tokens[f"contract:{name}"] = fingerprint(contract)
        forbidden.append(fingerprint(contract))
    evil_manifest, _ = parse_manifest(OUTSIDE_FILES["templiqx.yaml"])
    tokens["manifest:evil"] = fingerprint(evil_manifest)
    forbidden.append(tokens["manifest:evil"])

    service = compose(root)
    probe = base / "probe"
    probe.mkdir()
    box = Sandbox(
        base=base,
        outside=outside,
        root=root,
        ws=ws,
        service=service,
        forbidden=tuple(forbidden),
        tokens=tokens,
        atime_works=_atime_probe(probe),
    )
    figures = kit.FIGURES
    figures.expect(SUITE, "attacks", ">=", 50)
    figures.expect(SUITE, "reads outside the root", "==", 0)
    figures.expect(SUITE, "writes outside the root", "==", 0)
    figures.expect(SUITE, "hostile paths accepted", "==", 0)
    figures.expect(SUITE, "malformed envelopes", "==", 0)
    contents = _contents(outside)
    _reset_atimes(outside)
    yield box
    assert _contents(outside) == contents, "the sentinel tree's content changed"


def _attack(box: Sandbox, operation: str, arguments: dict[str, Any], *, hostile: bool) -> None:
    """One attack: run it, then look for reads and writes outside the root."""
    figures = kit.FIGURES
    label = f"{operation}({', '.join(f'{k}={v!r:.50}' for k, v in arguments.items())})"
    before = _tree(box.outside)
    times = _atimes(box.outside) if box.atime_works else {}
    figures.add(SUITE, "attacks")
    try:
        envelope = box.service.invoke(operation, arguments)
    except Exception as exc:  # the service must never raise
        figures.add(SUITE, "malformed envelopes")
        box.problems.append(f"{label}: raised {type(exc).__name__}: {exc}")
        return
    problems = kit.envelope_problems(envelope, operation)
    if problems:
        figures.add(SUITE, "malformed envelopes")
        box.problems.append(f"{label}: {problems}")
    # A token the attack itself passed may be echoed ("expected X, found Y"); anything else
    # derived from the sentinel tree may not appear.
    given = repr(arguments)
    forbidden = tuple(text for text in box.forbidden if text not in given)
    leaked = kit.envelope_problems(envelope, operation, forbidden_text=forbidden)
    read = len(leaked) > len(problems)
    if box.atime_works and _atimes(box.outside) != times:
        read = True
    if read:
        figures.add(SUITE, "reads outside the root")
        box.problems.append(f"{label}: read the sentinel tree")
        _reset_atimes(box.outside)
    if _tree(box.outside) != before:
        figures.add(SUITE, "writes outside the root")
        box.problems.append(f"{label}: changed the sentinel tree")
    if envelope.ok:
        if hostile:
            figures.add(SUITE, "hostile paths accepted")
            box.problems.append(f"{label}: accepted")
    else:
        figures.add(SUITE, "refused")
    for diagnostic in envelope.diagnostics:
        box.counts[diagnostic.code] = box.counts.get(diagnostic.code, 0) + 1


def _finish(box: Sandbox) -> None:
    problems, box.problems = box.problems, []
    assert not problems, "\n".join(problems)


# --- package names ----------------------------------------------------------------------------

PACKAGE_ATTACKS: list[tuple[str, bool]] = [
    ("", True),
    (".", True),
    ("..", True),
    ("../outside", True),
    ("../../etc", True),
    ("/", True),
    ("/etc", True),
    ("a/b", True),
    ("welcome/", True),
    ("./welcome", True),
    ("welcome/..", True),
    ("welcome/../evil", True),
    ("welcome/linkdir", True),
    ("a\\b", True),
    ("..\\outside", True),
    ("welcome\x00", True),
    ("\x00", True),
    ("x" * 251, True),
    ("x" * 5000, True),
    ("evil", True),  # a symlink to the sentinel tree
    ("\uff57\uff45\uff4c\uff43\uff4f\uff4d\uff45", True),  # fullwidth "welcome"
    ("w\u0435lcome", True),  # Cyrillic ie
    ("wel\u200bcome", True),  # zero-width space
    ("welcome ", True),
    ("welcome\n", True),
    ("~", True),
    ("$HOME", True),
    ("*", True),
    ("%2e%2e", True),
    (".templiqx-package-locks", True),
    (".templiqx-workspace", True),
    ("\ud800", True),  # lone surrogate
    ("WELCOME", False),  # case trick: another (absent) name
    ("Evil", False),
    ("...", False),
]


def _package_calls(box: Sandbox, package: str) -> list[tuple[str, dict[str, Any]]]:
    evil_manifest = box.tokens["manifest:evil"]
    contract = {"package": package, "contract": "greeting"}
    return [
        ("discover_packages", {}),
        ("create_package", {"name": package, "version": "1.0.0"}),
        (
            "update_package",
            {"package": package, "expected_fingerprint": evil_manifest, "description": "pwned"},
        ),
        ("delete_package", {"package": package, "expected_fingerprint": evil_manifest}),
        ("export_package_identity", {"package": package}),
        (
            "sign_package",
            {"package": package, "key_id": "k", "expected_fingerprint": evil_manifest},
        ),
        ("verify_package_trust", {"package": package, "strict": True}),
        ("inspect_contract", contract),
        (
            "put_contract",
            {
                **contract,
                "source": OUTSIDE_FILES["contracts/greeting.yaml"].replace(SENTINEL, "pwned"),
                "expected_fingerprint": box.tokens["contract:contracts/greeting.yaml"],
            },
        ),
        (
            "delete_contract",
            {**contract, "expected_fingerprint": box.tokens["contract:contracts/greeting.yaml"]},
        ),
        ("validate_contract", contract),
        ("validate_package", {"package": package}),
        ("compile_contract", contract),
        ("render_contract", contract),
        ("execute_contract", {**contract, "fixture_output": "x"}),
        ("list_workspace_artifacts", {"package": package}),
        ("read_artifact", {"package": package, "path": "secret.txt"}),
        (
            "delete_workspace_artifact",
            {
                "package": package,
                "path": "secret.txt",
                "expected_fingerprint": box.tokens["p/secret.txt"],
            },
        ),
        ("test_package", {"package": package}),
        ("list_evals", {"package": package}),
        ("run_eval", {**contract, "fixture_id": "f"}),
        (
            "diff_contract",
            {
                "left_package": package,
                "left_contract": "greeting",
                "right_package": "welcome",
                "right_contract": "account-digest",
            },
        ),
        (
            "diff_contract",
            {
                "left_package": "welcome",
                "left_contract": "account-digest",
                "right_package": package,
                "right_contract": "greeting",
            },
        ),
        ("explain_contract", contract),
    ]


def test_hostile_package_names(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", SIGNING_KEY)
    for package, hostile in PACKAGE_ATTACKS:
        for operation, arguments in _package_calls(sandbox, package):
            if operation == "discover_packages":
                continue
            lookalike_create = operation == "create_package" and not hostile
            _attack(sandbox, operation, arguments, hostile=hostile and not lookalike_create)
    _attack(sandbox, "discover_packages", {}, hostile=False)
    _finish(sandbox)


# --- contract ids -----------------------------------------------------------------------------

CONTRACT_ATTACKS: list[tuple[str, bool]] = [
    ("", True),
    (".", True),
    ("..", True),
    ("../x", True),
    ("../../outside/secret", True),
    ("../linkdir/secret", True),
    ("a/b", True),
    ("linkdir/greeting", True),
    ("/abs", True),
    ("a\\b", True),
    ("greeting\x00", True),
    ("x" * 251, True),
    ("linked", True),  # contracts/linked.yaml is a symlink
    ("hard", True),  # contracts/hard.yaml is a hard link to a sentinel file
    ("\uff4c\uff49\uff4e\uff4b\uff45\uff44", True),  # fullwidth "linked"
    ("onboarding-summary.yaml/../x", True),
    ("onboarding-summary ", True),
    ("account-digest\n", True),
    ("LINKED", False),  # case trick: an absent id
    ("Hard", False),
]


def _contract_calls(box: Sandbox, package: str, contract: str) -> list[tuple[str, dict[str, Any]]]:
    token = box.tokens[
        "contract:secret.yaml" if contract.lower() != "hard" else "contract:hard.yaml"
    ]
    base = {"package": package, "contract": contract}
    source = OUTSIDE_FILES["secret.yaml"].replace("id: linked", f"id: {contract}")
    return [
        ("inspect_contract", base),
        (
            "put_contract",
            {**base, "source": source.replace(SENTINEL, "pwned"), "expected_fingerprint": token},
        ),
        ("delete_contract", {**base, "expected_fingerprint": token}),
        ("validate_contract", base),
        ("compile_contract", base),
        ("render_contract", base),
        ("execute_contract", {**base, "fixture_output": "x"}),
        ("run_eval", {**base, "fixture_id": "f"}),
        ("explain_contract", base),
        (
            "diff_contract",
            {
                "left_package": package,
                "left_contract": contract,
                "right_package": "welcome",
                "right_contract": "account-digest",
            },
        ),
    ]


def test_hostile_contract_ids(sandbox: Sandbox) -> None:
    for contract, hostile in CONTRACT_ATTACKS:
        for operation, arguments in _contract_calls(sandbox, "welcome", contract):
            _attack(sandbox, operation, arguments, hostile=hostile)
    # A package whose contracts/ folder is a symlink to the sentinel tree.
    for operation, arguments in _contract_calls(sandbox, "linkedcontracts", "greeting"):
        _attack(sandbox, operation, arguments, hostile=True)
    _finish(sandbox)


# --- workspace artifact paths -----------------------------------------------------------------

ARTIFACT_ATTACKS: list[tuple[str, bool]] = [
    ("../outside/secret.txt", True),
    ("../../outside/secret.txt", True),
    ("..", True),
    (".", True),
    ("", True),
    ("/", True),
    ("/etc/passwd", True),
    ("//outside/secret.txt", True),
    ("a.txt/../../outside/secret.txt", True),
    ("./a.txt", True),
    ("evals//e.json", True),
    ("a.txt/", True),
    ("a.txt\\..\\..\\outside", True),
    ("a.txt\x00", True),
    ("x" * 256, True),
    ("a/" * 2100 + "b", True),
    ("link.txt", True),  # symlinked file
    ("linkdir/secret.txt", True),  # symlinked directory
    ("linkdir", True),
    ("hard.txt", True),  # hard link to a sentinel file
    ("evals/link.json", True),
    ("contracts/linkdir/greeting.yaml", True),
    ("evals", True),  # a directory
    ("\uff0e\uff0e/outside/secret.txt", False),  # fullwidth dots: an absent name
    ("..\u2215outside\u2215secret.txt", False),  # division slash
    ("%2e%2e/outside/secret.txt", False),
    ("LINK.TXT", False),
]


def test_hostile_artifact_paths(sandbox: Sandbox) -> None:
    for path, hostile in ARTIFACT_ATTACKS:
        _attack(sandbox, "read_artifact", {"package": "welcome", "path": path}, hostile=hostile)
        _attack(
            sandbox,
            "delete_workspace_artifact",
            {
                "package": "welcome",
                "path": path,
                "expected_fingerprint": sandbox.tokens[
                    "hard.txt" if "hard" in path else "secret.txt"
                ],
            },
            hostile=hostile,
        )
        # A prefix only filters the listing: it may succeed, listing nothing from outside.
        _attack(
            sandbox,
            "list_workspace_artifacts",
            {"package": "welcome", "prefix": path},
            hostile=False,
        )
    _finish(sandbox)


def test_hostile_workspace_overrides(sandbox: Sandbox) -> None:
    ws = str(sandbox.ws)
    overrides = [
        "relative/dir",
        "",
        "~",
        f"{ws}/../../outside",
        f"{ws}/./x",
        f"{ws}/welcome/linkdir",
        f"{ws}/welcome/linkdir/deeper",
        f"{ws}/evil",
        f"{ws}\x00",
        str(sandbox.outside),
        str(sandbox.outside / "p"),
        "/",
        "//",
        "/etc",
        f"{sandbox.base}//outside/../outside",
    ]
    for override in overrides:
        hostile = True
        for operation, arguments in [
            ("list_workspace_artifacts", {"package": "p"}),
            ("read_artifact", {"package": "p", "path": "secret.txt"}),
            (
                "delete_workspace_artifact",
                {
                    "package": "p",
                    "path": "secret.txt",
                    "expected_fingerprint": sandbox.tokens["p/secret.txt"],
                },
            ),
        ]:
            _attack(sandbox, operation, {**arguments, "workspace": override}, hostile=hostile)
    _finish(sandbox)


# --- paths carried inside contracts, manifests and locks --------------------------------------

INCLUDE_ATTACKS: list[tuple[str, str | None]] = [
    ("../outside/partials/p.yaml", None),
    ("../../outside/partials/p.yaml", None),
    ("partials/../../../outside/partials/p.yaml", None),
    ("partials/linked.yaml", None),  # symlinked file
    ("partials/hard.yaml", None),  # hard link
    ("linkdir/partials/p.yaml", None),  # symlinked directory
    ("partials\\..\\..\\outside\\partials\\p.yaml", None),
    ("partials/house-style.yaml\x00", None),
    ("/partials/p.yaml", None),
    ("", None),
    ("..", None),
    ("x" * 5000, None),
    ("partials/p.yaml", "evil"),  # a symlinked package
    ("partials/p.yaml", "../outside"),
    ("partials/p.yaml", "/"),
    ("partials/p.yaml", "welcome/linkdir"),
    ("p.yaml", "linkedcontracts/../evil"),
    ("PARTIALS/LINKED.YAML", None),  # case trick: an absent file
]


def _including(contract: str, path: str, dependency: str | None) -> str:
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\x00", "\\0")
    source_from = f', from_dependency: "{dependency}"' if dependency is not None else ""
    return (
        "api_version: templiqx/v1alpha1\n"
        f"id: {contract}\n"
        "version: 1.0.0\n"
        "messages:\n"
        "  - role: user\n"
        "    content:\n"
        f'      - {{kind: include, path: "{escaped}"{source_from}}}\n'
        "output_schema: {type: string}\n"
    )


def test_hostile_include_paths(sandbox: Sandbox) -> None:
    stored = sandbox.root / "welcome" / "contracts" / "stored-include.yaml"
    for path, dependency in INCLUDE_ATTACKS:
        source = _including("include-attack", path, dependency)
        _attack(
            sandbox,
            "put_contract",
            {"package": "welcome", "contract": "include-attack", "source": source},
            hostile=True,
        )
        # The same contract already stored (written by hand): every read path expands it.
        stored.write_text(_including("stored-include", path, dependency), encoding="utf-8")
        for operation in (
            "inspect_contract",
            "validate_contract",
            "compile_contract",
            "explain_contract",
        ):
            _attack(
                sandbox,
                operation,
                {"package": "welcome", "contract": "stored-include"},
                hostile=operation != "explain_contract",
            )
    stored.unlink()
    _finish(sandbox)


MANIFEST_ATTACKS: dict[str, str] = {
    "components": "components: [../outside/partials/p.yaml]",
    "components-link": "components: [partials/linked.yaml]",
    "components-hard": "components: [partials/hard.yaml]",
    "evals-absolute": f"evals: [{OUTSIDE_FILES and '/etc/passwd'}]",
    "evals-link": "evals: [evals/link.json]",
    "templates-linkdir": "templates: [linkdir/secret.txt]",
    "templates-hard": "templates: [hard.txt]",
    "migrations-dotdot": "migrations: ['../../outside/secret.txt']",
    "migrations-backslash": "migrations: ['..\\\\outside\\\\secret.txt']",
    "translations-link": "translations: [xx]",
    "translations-dotdot": "translations: ['../outside/translations/nl']",
    "contracts-link": "contracts: [linked]",
    "contracts-hard": "contracts: [hard]",
    "contracts-dotdot": "contracts: ['../../outside/secret']",
    "dependencies-symlink": "dependencies: {evil: x}",
    "dependencies-dotdot": "dependencies: {'../outside': x}",
}


def test_hostile_manifest_and_lock_paths(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPLIQX_PACKAGE_SIGNING_KEY", SIGNING_KEY)
    package = sandbox.root / "attack"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir()
    _plant(package, sandbox.outside)
    head = "api_version: templiqx/v1alpha1\npackage: attack\nversion: 1.0.0\n"
    for label, line in MANIFEST_ATTACKS.items():
        (package / "templiqx.yaml").write_text(head + line + "\n", encoding="utf-8")
        lock = package / "templiqx.lock"
        if label.startswith("dependencies"):
            name = "evil" if label.endswith("symlink") else "../outside"
            lock.write_text(f"dependencies:\n  '{name}': {{path: ../outside, fingerprint: x}}\n")
        elif lock.exists():
            lock.unlink()
        identity = sandbox.service.invoke("export_package_identity", {"package": "attack"})
        manifest_token = identity.fingerprints.get("manifest", "0" * 64)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("validate_package", {"package": "attack"}),
            ("export_package_identity", {"package": "attack"}),
            (
                "sign_package",
                {"package": "attack", "key_id": "k", "expected_fingerprint": manifest_token},
            ),
            ("verify_package_trust", {"package": "attack", "strict": True}),
            ("test_package", {"package": "attack"}),
            ("list_evals", {"package": "attack"}),
            ("compile_contract", {"package": "attack", "contract": "linked"}),
            ("delete_package", {"package": "attack", "expected_fingerprint": manifest_token}),
        ]
        # The inventory's paths are read by the identity operations; dependency names only by
        # validate_package (it looks for each dependency's root).
        must_refuse = (
            ("validate_package",)
            if label.startswith("dependencies")
            else ("validate_package", "export_package_identity", "sign_package")
        )
        for operation, arguments in calls:
            _attack(sandbox, operation, arguments, hostile=operation in must_refuse)
        assert package.is_dir(), f"{label}: delete_package removed a package holding symlinks"
    shutil.rmtree(package)
    _finish(sandbox)


def test_deleting_a_package_never_follows_its_links(sandbox: Sandbox) -> None:
    identity = sandbox.service.invoke("export_package_identity", {"package": "welcome"})
    token = identity.fingerprints["manifest"]
    _attack(
        sandbox,
        "delete_package",
        {"package": "welcome", "expected_fingerprint": token},
        hostile=True,
    )
    assert (sandbox.root / "welcome" / "templiqx.yaml").is_file()
    _finish(sandbox)


def test_the_detectors_see_a_read_and_a_write(sandbox: Sandbox) -> None:
    """The suite's own detectors work: a direct read and a direct write are both noticed."""
    kit.FIGURES.add(SUITE, "access-time read probe works (1 = yes)", int(sandbox.atime_works))
    contents = _contents(sandbox.outside)
    _reset_atimes(sandbox.outside)
    if sandbox.atime_works:
        times = _atimes(sandbox.outside)
        (sandbox.outside / "secret.txt").read_bytes()
        assert _atimes(sandbox.outside) != times
        _reset_atimes(sandbox.outside)
    before = _tree(sandbox.outside)
    target = sandbox.outside / "p" / "secret.txt"
    target.write_text(SENTINEL + "!")
    assert _tree(sandbox.outside) != before
    target.write_text(contents["p/secret.txt"].decode())
    _reset_atimes(sandbox.outside)
