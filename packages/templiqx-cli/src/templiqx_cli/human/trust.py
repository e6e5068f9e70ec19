"""Renderers of the trust operations: signing a package and verifying its signatures."""

from __future__ import annotations

from templiqx_cli.human.base import Renderer, View
from templiqx_cli.human.blocks import count, listing, table

__all__ = ["RENDERERS"]


class SignRenderer(Renderer):
    """The signatures the package now carries."""

    def summary(self, view: View) -> str:
        key = view.argument("key_id")
        return f"signed with key {view.style.name(key)}" if key else "signed"

    def body(self, view: View) -> list[str]:
        signatures = (view.result or {}).get("signatures") or []
        rows = [
            [str(s.get("key_id", "")), str(s.get("algorithm", "")), str(s.get("value", ""))]
            for s in signatures
        ]
        return table(["key", "algorithm", "signature"], rows, view.style)


class VerifyRenderer(Renderer):
    """Which keys verified, and whether strict mode was asked for."""

    def summary(self, view: View) -> str:
        report = view.result or {}
        keys = report.get("verified_key_ids") or []
        mode = "strict" if report.get("strict") else "not strict"
        if not keys:
            return f"no signatures to verify ({mode})"
        return f"{count(len(keys), 'signature')} verified ({mode})"

    def body(self, view: View) -> list[str]:
        keys = (view.result or {}).get("verified_key_ids") or []
        return [f"verified keys: {listing(keys, view.style)}"]


RENDERERS: dict[str, Renderer] = {
    "sign_package": SignRenderer(),
    "verify_package_trust": VerifyRenderer(),
}
