"""Translation bundles: ``translations/<locale>.yaml`` injected into the render context.

When the manifest lists locales, each bundle is read and parsed, and the request's context gets
``_templiqx_translations = {locale: {key: value}}`` (replacing any caller value). The core's
``translate`` filter reads them.

Parsed bundles are kept by the SHA-256 of their bytes (at most :data:`MAX_KEPT_BUNDLES`, and
:data:`MAX_KEPT_BYTES` of estimated memory within the process-wide ceiling of
:mod:`templiqx_contracts.lru`): the file is read on every call, so an edited bundle is picked up
at once; only its parsing is saved.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from templiqx_application.diagnostics import error, port_diagnostic, with_file
from templiqx_application.prepared import digest
from templiqx_contracts import LRU, Diagnostic, PackageManifest, RenderRequest
from templiqx_contracts.lru import value_shape
from templiqx_core import parse_translation_bundle
from templiqx_ports import PackageStore, PortError

__all__ = ["TRANSLATIONS_KEY", "inject_translations"]

TRANSLATIONS_KEY = "_templiqx_translations"

MAX_KEPT_BUNDLES: Final = 256
"""Parsed translation bundles kept between calls."""

MAX_KEPT_BYTES: Final = 32 * 1024 * 1024
"""Estimated memory of the kept bundles at most (128 bytes a value or key, plus the text)."""


def _bundle_weight(bundle: Any) -> int:
    nodes, text = value_shape(bundle)
    return 128 * nodes + text


_kept: LRU[tuple[bytes, str], Any] = LRU(
    MAX_KEPT_BUNDLES, max_weight=MAX_KEPT_BYTES, weigh=_bundle_weight
)


def _parse_bundle(data: bytes, text: str, label: str) -> tuple[Any, list[Diagnostic]]:
    """``parse_translation_bundle``, reusing an earlier parse of the same bytes."""
    key = (digest(data), label)
    bundle = _kept.get(key)
    if bundle is not None:
        return bundle, []
    bundle, diagnostics = parse_translation_bundle(text, file=label)
    if bundle is not None:
        _kept.put(key, bundle)
    return bundle, diagnostics


def inject_translations(
    store: PackageStore, package: str, manifest: PackageManifest, request: RenderRequest
) -> tuple[RenderRequest | None, list[Diagnostic]]:
    """The request with the package's bundles in its context, or the diagnostics."""
    if not manifest.translations:
        return request, []
    bundles: dict[str, Any] = {}
    diagnostics: list[Diagnostic] = []
    for locale in manifest.translations:
        path = f"translations/{locale}.yaml"
        label = f"{package}/{path}"
        try:
            data = store.artifact_bytes(package, path)
        except PortError as exc:
            diagnostics.append(with_file(port_diagnostic(exc), label))
            continue
        pointer = f"/translations/{locale}"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            diagnostics.append(
                with_file(
                    error("TQX_TRANSLATION_INVALID", f"bundle is not UTF-8: {exc}", pointer),
                    label,
                )
            )
            continue
        bundle, parse_diagnostics = _parse_bundle(data, text, label)
        if bundle is None:
            detail = parse_diagnostics[0].message if parse_diagnostics else "not a map"
            diagnostics.append(with_file(error("TQX_TRANSLATION_INVALID", detail, pointer), label))
            continue
        bundles[locale] = bundle
    if diagnostics:
        return None, diagnostics
    context = dict(request.context)
    context[TRANSLATIONS_KEY] = bundles
    return msgspec.structs.replace(request, context=context), []
