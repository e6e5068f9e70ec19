"""Hostile names and paths against every store and workspace method that takes one.

A sentinel tree lives *outside* the roots and is reachable through symlinks and hard links
planted inside them. Every hostile input must be refused with ``TQX_PATH_INVALID`` (or
``TQX_NOT_FOUND`` for inputs that are merely names that do not exist, e.g. lookalikes), any
successful call must stay inside its root and return nothing from the sentinel tree, and the
sentinel tree must be byte-for-byte unchanged afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from templiqx_contracts import PackageSignature, fingerprint_bytes
from templiqx_local import (
    FilesystemArtifactWorkspace,
    FilesystemOutputLease,
    FilesystemPackageStore,
)
from templiqx_ports import PortError

SENTINEL = "SENTINEL-7f3a"
STALE = "0" * 64
PATH = {"TQX_PATH_INVALID"}
PATH_OR_MISSING = {"TQX_PATH_INVALID", "TQX_NOT_FOUND"}


@dataclass
class Env:
    base: Path
    outside: Path
    root: Path
    ws_root: Path
    store: FilesystemPackageStore
    workspace: FilesystemArtifactWorkspace


def _snapshot(folder: Path) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            state[key] = ("link", os.readlink(path))
        elif path.is_dir():
            state[key] = ("dir",)
        else:
            state[key] = ("file", path.read_bytes(), path.stat().st_mode)
    return state


def _plant(folder: Path, outside: Path) -> None:
    """The same hostile links in a store package and in a package workspace."""
    (folder / "evals").mkdir(exist_ok=True)
    (folder / "contracts").mkdir(exist_ok=True)
    (folder / "evals" / "e.json").write_text("{}")
    (folder / "evals" / "link.json").symlink_to(outside / "secret.txt")
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    (folder / "linkdir").symlink_to(outside, target_is_directory=True)
    (folder / "contracts" / "linked.yaml").symlink_to(outside / "secret.yaml")
    (folder / "contracts" / "linkdir").symlink_to(outside / "contracts", target_is_directory=True)
    os.link(outside / "secret.txt", folder / "hard.txt")
    os.link(outside / "secret.yaml", folder / "contracts" / "hard.yaml")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    base = tmp_path_factory.mktemp("attacks")
    outside = base / "outside"
    for relative, text in {
        "secret.txt": SENTINEL,
        "secret.yaml": f"id: {SENTINEL}\n",
        "contracts/greeting.yaml": f"id: greeting\ndescription: {SENTINEL}\n",
        "templiqx.yaml": f"api_version: templiqx/v1alpha1\npackage: evil\nversion: '{SENTINEL}'\n",
        "p/secret.txt": SENTINEL,
        "p/a.txt": SENTINEL,
    }.items():
        (outside / relative).parent.mkdir(parents=True, exist_ok=True)
        (outside / relative).write_text(text)
    root = base / "root"
    store = FilesystemPackageStore(root, create=True)
    store.create_package("demo", "0.1.0")
    store.put_contract("demo", "greeting", "id: greeting\n", guard=lambda _: None)
    _plant(root / "demo", outside)
    (root / "evil").symlink_to(outside, target_is_directory=True)
    store.create_package("linkedcontracts", "0.1.0")
    (root / "linkedcontracts" / "contracts").rmdir()
    (root / "linkedcontracts" / "contracts").symlink_to(
        outside / "contracts", target_is_directory=True
    )
    ws_root = base / "ws"
    workspace = FilesystemArtifactWorkspace(ws_root)
    with workspace.lease_output_path("demo", "a.txt") as lease:
        lease.path.write_text("artifact")
    _plant(ws_root / "demo", outside)
    (ws_root / "evil").symlink_to(outside / "p", target_is_directory=True)
    return Env(base, outside, root, ws_root, store, workspace)


def _leaks(value: Any) -> bool:
    if isinstance(value, bytes):
        return SENTINEL.encode() in value
    if isinstance(value, FilesystemOutputLease):
        return False
    return SENTINEL in repr(value)


def _confined(env: Env, value: Any) -> bool:
    if isinstance(value, FilesystemOutputLease):
        path = value.path
        value.release()
        return path.is_relative_to(env.ws_root) and ".." not in path.parts
    return True


def _run(env: Env, cases: list[tuple[str, Callable[[], Any], set[str], bool]]) -> None:
    """Run every case; collect every violation and report them together."""
    outside_before = _snapshot(env.outside)
    problems: list[str] = []
    for label, call, codes, may_succeed in cases:
        try:
            result = call()
        except PortError as error:
            if error.code not in codes:
                problems.append(f"{label}: {error.code} {error}")
            if SENTINEL in str(error):
                problems.append(f"{label}: sentinel text leaked into the message")
            continue
        except Exception as error:  # any non-port error is a bug
            problems.append(f"{label}: raised {type(error).__name__}: {error}")
            continue
        if not may_succeed:
            problems.append(f"{label}: accepted, returned {result!r:.80}")
        if _leaks(result):
            problems.append(f"{label}: returned data from outside the root")
        if not _confined(env, result):
            problems.append(f"{label}: lease path escapes the workspace")
    assert _snapshot(env.outside) == outside_before, "the sentinel tree was modified"
    assert not problems, "\n".join(problems)


# Package names and the codes each may produce; valid-but-absent names may be NOT_FOUND.
PACKAGE_NAMES: list[tuple[str, set[str]]] = [
    ("", PATH),
    (".", PATH),
    ("..", PATH),
    ("../outside", PATH),
    ("../../etc", PATH),
    ("/abs", PATH),
    ("/", PATH),
    ("a/b", PATH),
    ("demo/", PATH),
    ("./demo", PATH),
    ("demo/..", PATH),
    ("demo/../evil", PATH),
    ("a\\b", PATH),
    ("..\\outside", PATH),
    ("demo\x00", PATH),
    ("\x00", PATH),
    ("x" * 251, PATH),
    ("x" * 5000, PATH),
    ("evil", PATH),  # symlink to the outside tree
    ("\uff44\uff45\uff4d\uff4f", PATH),  # fullwidth "demo"
    ("d\u0435mo", PATH),  # Cyrillic small ie instead of "e"
    ("de\u200bmo", PATH),  # zero-width space
    ("demo ", PATH),
    (" demo", PATH),
    ("demo\n", PATH),
    ("~", PATH),
    ("$HOME", PATH),
    ("*", PATH),
    ("demo;rm", PATH),
    ("%2e%2e", PATH),
    (".templiqx-package-locks", PATH),
    (".templiqx-workspace", PATH),
    (".templiqx-workspace-locks", PATH),
    ("DEMO", PATH_OR_MISSING),  # case trick: a different (absent) name on this filesystem
    ("Demo", PATH_OR_MISSING),
    ("...", PATH_OR_MISSING),
]


def _package_calls(env: Env, name: str) -> dict[str, Callable[[], Any]]:
    s, w = env.store, env.workspace
    signature = PackageSignature(key_id="k", algorithm="sha256-keyed", value="v")
    return {
        "manifest": lambda: s.manifest(name),
        "package_identity": lambda: s.package_identity(name),
        "update_package": lambda: s.update_package(
            name, version="9", description=None, expected_fingerprint=STALE
        ),
        "delete_package": lambda: s.delete_package(name, STALE),
        "attach_package_signature": lambda: s.attach_package_signature(
            name, signature, expected_fingerprint=STALE, identity_fingerprint=STALE
        ),
        "contract_source": lambda: s.contract_source(name, "greeting"),
        "put_contract": lambda: s.put_contract(name, "greeting", "x", guard=_never),
        "delete_contract": lambda: s.delete_contract(name, "greeting", guard=_never),
        "artifact_bytes": lambda: s.artifact_bytes(name, "secret.txt"),
        "create_package": lambda: s.create_package(name, "1"),
        "list_artifacts": lambda: w.list_artifacts(name),
        "read_artifact": lambda: w.read_artifact(name, "secret.txt"),
        "delete_artifact": lambda: w.delete_artifact(
            name, "secret.txt", expected_fingerprint=fingerprint_bytes(SENTINEL.encode())
        ),
        "lease_output_path": lambda: w.lease_output_path(name, "new.txt"),
    }


def _never(current: str | None) -> None:
    raise AssertionError(f"the guard must not run for a refused path (saw {current!r:.40})")


PACKAGE_METHODS = [
    "manifest",
    "package_identity",
    "update_package",
    "delete_package",
    "attach_package_signature",
    "contract_source",
    "put_contract",
    "delete_contract",
    "artifact_bytes",
    "create_package",
    "list_artifacts",
    "read_artifact",
    "delete_artifact",
    "lease_output_path",
]


@pytest.mark.parametrize("method", PACKAGE_METHODS)
def test_hostile_package_names(env: Env, method: str) -> None:
    assert len(PACKAGE_NAMES) >= 30
    cases = []
    for name, codes in PACKAGE_NAMES:
        absent = "TQX_NOT_FOUND" in codes
        if absent and method in ("create_package", "lease_output_path"):
            continue  # a valid new name is simply created inside the root
        call = _package_calls(env, name)[method]
        may_succeed = absent and method == "list_artifacts"  # an absent workspace lists []
        cases.append((f"{method}({name!r:.40})", call, codes, may_succeed))
    _run(env, cases)


# Relative paths: (path, codes, may_succeed_for_lease_or_prefix)
RELATIVE_PATHS: list[tuple[str, set[str], bool]] = [
    ("../outside/secret.txt", PATH, False),
    ("../../outside/secret.txt", PATH, False),
    ("..", PATH, False),
    (".", PATH, False),
    ("", PATH, False),
    ("/", PATH, False),
    ("/etc/passwd", PATH, False),
    ("//outside/secret.txt", PATH, False),
    ("evals/../../outside/secret.txt", PATH, False),
    ("evals/./e.json", PATH, False),
    ("./evals/e.json", PATH, False),
    ("evals//e.json", PATH, False),
    ("evals/e.json/", PATH, False),
    ("/evals/e.json", PATH, False),
    ("evals\\e.json", PATH, False),
    ("..\\..\\outside\\secret.txt", PATH, False),
    ("evals/e.json\x00", PATH, False),
    ("\x00", PATH, False),
    ("x" * 256, PATH, False),
    ("a/" * 2100 + "b", PATH, False),
    ("linkdir/../evals/e.json", PATH, False),
    ("evals/link.json", PATH, False),  # symlinked file
    ("linkdir/secret.txt", PATH, False),  # symlinked directory component
    ("linkdir/p/secret.txt", PATH, False),
    ("linkdir", PATH, False),
    ("hard.txt", PATH, False),  # hard link to an outside file
    ("contracts/linked.yaml", PATH, False),
    ("contracts/hard.yaml", PATH, False),
    ("contracts/linkdir/greeting.yaml", PATH, False),
    ("link.txt", PATH, False),
    ("evals", PATH, False),  # a directory
    ("\uff0e\uff0e/outside/secret.txt", PATH_OR_MISSING, True),  # fullwidth dots
    ("..\u2215outside\u2215secret.txt", PATH_OR_MISSING, True),  # division slash
    ("%2e%2e/outside/secret.txt", PATH_OR_MISSING, True),
    ("~/secret.txt", PATH_OR_MISSING, True),
    ("LINKDIR/secret.txt", PATH_OR_MISSING, True),  # case trick
    ("\u202e..", PATH_OR_MISSING, True),  # right-to-left override
]


def _path_calls(env: Env, path: str) -> dict[str, Callable[[], Any]]:
    s, w = env.store, env.workspace
    return {
        "artifact_bytes": lambda: s.artifact_bytes("demo", path),
        "read_artifact": lambda: w.read_artifact("demo", path),
        "delete_artifact": lambda: w.delete_artifact(
            "demo", path, expected_fingerprint=fingerprint_bytes(SENTINEL.encode())
        ),
        "lease_output_path": lambda: w.lease_output_path("demo", path),
        "list_artifacts(prefix)": lambda: w.list_artifacts("demo", prefix=path),
    }


@pytest.mark.parametrize(
    "method",
    [
        "artifact_bytes",
        "read_artifact",
        "delete_artifact",
        "lease_output_path",
        "list_artifacts(prefix)",
    ],
)
def test_hostile_relative_paths(env: Env, method: str) -> None:
    assert len(RELATIVE_PATHS) >= 30
    cases = []
    for path, codes, benign in RELATIVE_PATHS:
        if method == "list_artifacts(prefix)":
            # A prefix only filters: "", "/" and names of links are valid filters that list
            # nothing from outside; malformed prefixes are refused.
            may_succeed = True
        elif method == "lease_output_path":
            may_succeed = benign
        else:
            may_succeed = False
        cases.append(
            (f"{method}({path!r:.40})", _path_calls(env, path)[method], codes, may_succeed)
        )
    _run(env, cases)
    # Every valid-looking lease above stayed inside the workspace; clean the created folders.
    for name in ("\uff0e\uff0e", "..\u2215outside\u2215secret.txt", "%2e%2e", "~", "LINKDIR"):
        target = env.ws_root / "demo" / name
        if target.is_dir():
            for child in sorted(target.rglob("*"), reverse=True):
                child.rmdir() if child.is_dir() else child.unlink()
            target.rmdir()


def test_list_never_reports_links(env: Env) -> None:
    listed = [a.path for a in env.workspace.list_artifacts("demo")]
    assert "link.txt" not in listed
    assert "hard.txt" not in listed
    assert not any(path.startswith("linkdir") for path in listed)


CONTRACT_IDS: list[tuple[str, set[str]]] = [
    ("", PATH),
    (".", PATH),
    ("..", PATH),
    ("../x", PATH),
    ("../../outside/secret", PATH),
    ("../linkdir/secret", PATH),
    ("a/b", PATH),
    ("linkdir/greeting", PATH),
    ("/abs", PATH),
    ("a\\b", PATH),
    ("greeting\x00", PATH),
    ("x" * 251, PATH),
    ("linked", PATH),  # contracts/linked.yaml is a symlink
    ("hard", PATH),  # contracts/hard.yaml is a hard link to an outside file
    ("\uff47reeting", PATH),  # fullwidth g
    ("greeting.yaml/../x", PATH),
    ("greeting ", PATH),
    ("GREETING", PATH_OR_MISSING),
]


@pytest.mark.parametrize("method", ["contract_source", "put_contract", "delete_contract"])
def test_hostile_contract_ids(env: Env, method: str) -> None:
    s = env.store
    cases = []
    for contract, codes in CONTRACT_IDS:
        if method == "put_contract" and "TQX_NOT_FOUND" in codes:
            continue  # a valid new id is simply created
        calls = {
            "contract_source": lambda c=contract: s.contract_source("demo", c),
            "put_contract": lambda c=contract: s.put_contract("demo", c, "x", guard=_never),
            "delete_contract": lambda c=contract: s.delete_contract("demo", c, guard=_never),
        }
        cases.append((f"{method}({contract!r:.40})", calls[method], codes, False))
    # A package whose contracts/ folder is a symlink to the outside tree.
    linked = {
        "contract_source": lambda: s.contract_source("linkedcontracts", "greeting"),
        "put_contract": lambda: s.put_contract("linkedcontracts", "greeting", "x", guard=_never),
        "delete_contract": lambda: s.delete_contract("linkedcontracts", "greeting", guard=_never),
    }
    cases.append((f"{method}(linkedcontracts)", linked[method], PATH, False))
    _run(env, cases)


def _overrides(env: Env) -> list[str]:
    ws = str(env.ws_root)
    return [
        "relative/dir",
        "",
        "~",
        f"{ws}/../outside",
        f"{ws}/./x",
        str(env.outside),
        str(env.outside / "p"),
        f"{ws}/demo/linkdir",  # a symlink below the root
        f"{ws}/demo/linkdir/deeper",
        f"{ws}/evil",
        f"{ws}\x00",
        "/",
        "//",
        "/etc",
        str(env.base),
    ]


@pytest.mark.parametrize(
    "method", ["list_artifacts", "read_artifact", "delete_artifact", "lease_output_path"]
)
def test_hostile_workspace_overrides(env: Env, method: str) -> None:
    w = env.workspace
    cases = []
    for override in _overrides(env):
        calls = {
            "list_artifacts": lambda o=override: w.list_artifacts("p", workspace=o),
            "read_artifact": lambda o=override: w.read_artifact("p", "secret.txt", workspace=o),
            "delete_artifact": lambda o=override: w.delete_artifact(
                "p", "a.txt", expected_fingerprint=STALE, workspace=o
            ),
            "lease_output_path": lambda o=override: w.lease_output_path(
                "p", "new.txt", workspace=o
            ),
        }
        cases.append((f"{method}(workspace={override!r:.60})", calls[method], PATH, False))
    _run(env, cases)
    assert not (env.outside / "x").exists()
