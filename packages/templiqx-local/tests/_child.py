"""Child-process side of the multi-process store tests.

Run in a *spawned* interpreter through ``runpy.run_path(path, {"PARAMS": {...}})`` (a test
module itself cannot be the spawn target under ``--import-mode=importlib``). Reports through
``PARAMS["results"]`` (a multiprocessing queue) or, for the crash actions, by exit code.
"""

from __future__ import annotations

import os
import time
from typing import Any

from templiqx_contracts import fingerprint, fingerprint_bytes
from templiqx_local import FilesystemPackageStore
from templiqx_ports import ConflictError, PortError

CRASH_EXIT = 17


def _guard(expected: str | None, delay: float) -> Any:
    def guard(current: str | None) -> None:
        time.sleep(delay)  # hold the package lock a while, so the rival really waits on it
        actual = None if current is None else fingerprint_bytes(current.encode())
        if actual != expected:
            raise ConflictError(f"expected {expected}, found {actual}")

    return guard


def _crash(*args: Any, **kwargs: Any) -> None:
    os._exit(CRASH_EXIT)  # die between the fsynced temp file and the rename


def main(params: dict[str, Any]) -> None:
    store = FilesystemPackageStore(params["root"])
    action = params["action"]
    package = params["package"]
    if action == "crash-put":
        os.replace = _crash
        store.put_contract(package, params["contract"], params["content"], guard=lambda _: None)
        return
    if action == "crash-update":
        os.replace = _crash
        current = fingerprint(store.manifest(package))
        store.update_package(
            package, version="9.9.9", description=None, expected_fingerprint=current
        )
        return
    results = params["results"]
    params["barrier"].wait(timeout=60)
    try:
        if action == "race-put":
            store.put_contract(
                package,
                params["contract"],
                params["content"],
                guard=_guard(params["expected"], params["delay"]),
            )
        elif action == "race-update":
            store.update_package(
                package,
                version=None,
                description=params["content"],
                expected_fingerprint=params["expected"],
            )
        results.put((params["content"], "won"))
    except ConflictError:
        results.put((params["content"], "conflict"))
    except PortError as error:
        results.put((params["content"], f"error {error.code}: {error}"))


main(globals()["PARAMS"])
