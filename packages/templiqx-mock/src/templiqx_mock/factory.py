"""Building a ready ``ScriptedRuntime`` from a manifest file or from the environment.

``create_runtime()`` is the zero-argument factory behind the ``mock`` entry point of the
``templiqx.runtimes`` group. It reads:

* ``TEMPLIQX_MOCK_SCENARIO`` (required): path of a ``templiqx.mock/v1alpha1`` manifest
  (JSON, or YAML for ``.yaml`` / ``.yml``);
* ``TEMPLIQX_MOCK_PACE_MS`` (optional, default 0): real milliseconds to pause after each
  streamed delta (for demos and cancellation tests).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from templiqx_contracts import CanonicalJSONError, fingerprint
from templiqx_mock.errors import MockConfigurationError, ScenarioError
from templiqx_mock.scenario import ScenarioManifest, read_json_file
from templiqx_mock.scripted import ScriptedRuntime

__all__ = [
    "PACE_ENV",
    "SCENARIO_ENV",
    "create_runtime",
    "load_expected_output",
    "runtime_from_path",
]

SCENARIO_ENV = "TEMPLIQX_MOCK_SCENARIO"
PACE_ENV = "TEMPLIQX_MOCK_PACE_MS"


def load_expected_output(manifest: ScenarioManifest, manifest_path: str | os.PathLike[str]) -> Any:
    """The manifest's ``expected_output`` document, or ``None`` when it declares none.

    The path is relative to the manifest's folder (no absolute path, no backslash, no NUL). When the
    manifest declares ``expected_output_fingerprint`` the document must have that fingerprint.
    """
    if manifest.expected_output is None:
        return None
    relative = manifest.expected_output
    unusable = "\\" in relative or "\x00" in relative or not relative.strip()
    if unusable or PurePosixPath(relative).is_absolute():
        raise ScenarioError(
            f"expected_output must be a path relative to the manifest's folder: {relative!r}"
        )
    output = read_json_file(Path(manifest_path).parent / relative)
    if manifest.expected_output_fingerprint is not None:
        try:
            actual = fingerprint(output)
        except CanonicalJSONError as exc:
            raise ScenarioError(
                f"expected_output {relative} cannot be fingerprinted: {exc}"
            ) from exc
        if actual != manifest.expected_output_fingerprint:
            raise ScenarioError(
                f"expected_output {relative} has fingerprint {actual}, but the manifest declares "
                f"expected_output_fingerprint {manifest.expected_output_fingerprint}"
            )
    return output


def runtime_from_path(path: str | os.PathLike[str], *, pace_ms: int = 0) -> ScriptedRuntime:
    """A runtime replaying the manifest at ``path``.

    Its ``expected_output`` (if any) is the output of a success that has neither a scripted
    output nor a request fixture output.
    """
    manifest = ScenarioManifest.load(path)
    fallback = load_expected_output(manifest, path)
    return ScriptedRuntime.from_manifest(manifest, fallback_output=fallback, pace_ms=pace_ms)


def _pace_from(environ: Mapping[str, str]) -> int:
    raw = environ.get(PACE_ENV, "").strip()
    if not raw:
        return 0
    if not raw.isascii() or not raw.isdigit():
        raise MockConfigurationError(
            f"{PACE_ENV}={raw!r} is not a whole number of milliseconds; "
            "set it to 0 or a positive integer such as 50, or unset it"
        )
    return int(raw)


def create_runtime(environ: Mapping[str, str] | None = None) -> ScriptedRuntime:
    """The ``mock`` runtime configured from the environment (see the module docstring).

    Raises :class:`~templiqx_mock.errors.MockConfigurationError` naming the variable when
    ``TEMPLIQX_MOCK_SCENARIO`` is unset or blank, when its manifest cannot be read or is
    invalid, or when ``TEMPLIQX_MOCK_PACE_MS`` is not a non-negative integer.
    """
    env = os.environ if environ is None else environ
    path = env.get(SCENARIO_ENV, "").strip()
    if not path:
        raise MockConfigurationError(
            f"{SCENARIO_ENV} is not set; set it to the path of a templiqx.mock/v1alpha1 "
            "scenario manifest (JSON, or YAML with a .yaml/.yml extension)"
        )
    pace_ms = _pace_from(env)
    try:
        return runtime_from_path(path, pace_ms=pace_ms)
    except ScenarioError as exc:
        raise MockConfigurationError(f"{SCENARIO_ENV}={path!r}: {exc}", code=exc.code) from exc
