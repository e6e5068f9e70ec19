"""What the command line adds for people after a failed envelope's diagnostics.

The envelope is the same on every surface, so its help lines cannot name this command line's
flags or values. These hints can: they end the output for people (``hint: …``, after the
diagnostics; never with ``--json``), and never change the envelope.

* a package that is not under the packages root: the root as given (``--root``, default ``.``);
* a capability the contract requires and the command did not offer: the ``--capability``
  options to add (also for the failed cases of ``test`` and ``run-eval``), or the one to
  correct when an offered name looks like a misspelling of the required one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from templiqx_application.catalog import OperationSpec
from templiqx_cli.output import failed_cases
from templiqx_contracts import Diagnostic, OperationEnvelope

__all__ = ["command_hints"]

_PACKAGE_PARAMETERS = ("package", "left_package", "right_package")
_CAPABILITY_CODES = ("TQX_CAPABILITY_UNSUPPORTED", "TQX_EXTENSION_UNSUPPORTED")
_CAPABILITY = re.compile(r"capability '([^']+)'")
_MISSPELT = re.compile(r"where '([^']+)' looks like a misspelling of '([^']+)'")


def _all_diagnostics(envelope: OperationEnvelope) -> list[Diagnostic]:
    found = list(envelope.diagnostics)
    for case in failed_cases(envelope):
        found.extend(case.diagnostics)
    return found


def _missing_packages(diagnostics: Iterable[Diagnostic], arguments: Mapping[str, Any]) -> list[str]:
    """The package arguments a ``not found: <package>`` diagnostic names (the store's form)."""
    given = [
        arguments[name] for name in _PACKAGE_PARAMETERS if isinstance(arguments.get(name), str)
    ]
    messages = {d.message for d in diagnostics if d.code == "TQX_NOT_FOUND"}
    return list(dict.fromkeys(name for name in given if f"not found: {name}" in messages))


def _missing_capabilities(diagnostics: Iterable[Diagnostic]) -> list[str]:
    names: list[str] = []
    for diagnostic in diagnostics:
        if diagnostic.code in _CAPABILITY_CODES:
            match = _CAPABILITY.search(diagnostic.message)
            if match is not None and match.group(1) not in names:
                names.append(match.group(1))
    return names


def _misspelt_offers(diagnostics: Iterable[Diagnostic]) -> dict[str, str]:
    """Offered capability -> the required one it looks like a misspelling of."""
    found: dict[str, str] = {}
    for diagnostic in diagnostics:
        if diagnostic.code in _CAPABILITY_CODES:
            match = _MISSPELT.search(diagnostic.message)
            if match is not None:
                found.setdefault(match.group(1), match.group(2))
    return found


def command_hints(
    envelope: OperationEnvelope,
    spec: OperationSpec,
    arguments: Mapping[str, Any],
    root: str,
    root_given: bool,
) -> list[str]:
    """The hints for ``envelope``, the outcome of ``spec`` run with ``arguments`` over ``root``.

    ``root`` is the packages root as the user gave it (``root_given``) or the default ``.``.
    """
    if envelope.ok:
        return []
    diagnostics = _all_diagnostics(envelope)
    hints: list[str] = []
    for package in _missing_packages(diagnostics, arguments):
        source = "--root" if root_given else "the default; no --root given"
        hints.append(
            f"no package folder {package!r} in the packages root {root!r} ({source}); "
            "pass --root DIR naming the folder that holds the package folders"
        )
    if any(parameter.name == "capabilities" for parameter in spec.parameters):
        missing = _missing_capabilities(diagnostics)
        offered = set(arguments.get("capabilities") or ())
        misspelt = {
            typed: meant
            for typed, meant in _misspelt_offers(diagnostics).items()
            if typed in offered
        }
        for typed, meant in misspelt.items():
            hints.append(
                f"--capability {typed} looks like a misspelling of {meant!r}, which the contract "
                f"requires: pass --capability {meant} instead"
            )
        wanted = [name for name in missing if name not in offered and name not in misspelt.values()]
        if wanted:
            options = " ".join(f"--capability {name}" for name in wanted)
            listed = ", ".join(repr(name) for name in wanted)
            hints.append(
                f"the contract requires {listed}, which this command did not offer: add {options}"
            )
    return hints
