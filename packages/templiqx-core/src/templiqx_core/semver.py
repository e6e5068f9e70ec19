"""Strict SemVer 2.0 recognition (as the reference's ``semver`` crate accepts it)."""

from __future__ import annotations

import re

__all__ = ["is_semver"]

_NUMERIC = r"(?:0|[1-9][0-9]*)"
_PRE_IDENT = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_IDENT = r"[0-9A-Za-z-]+"
_SEMVER = re.compile(
    rf"({_NUMERIC})\.({_NUMERIC})\.({_NUMERIC})"
    rf"(?:-{_PRE_IDENT}(?:\.{_PRE_IDENT})*)?"
    rf"(?:\+{_BUILD_IDENT}(?:\.{_BUILD_IDENT})*)?"
)
_U64_MAX = (1 << 64) - 1


def is_semver(text: str) -> bool:
    """Whether ``text`` is ``MAJOR.MINOR.PATCH[-prerelease][+build]`` with 64-bit parts.

    >>> [is_semver(v) for v in ("1.0.0", "1.2.3-rc.1+b.7", "01.0.0", "v1.0.0", "1.0")]
    [True, True, False, False, False]
    """
    match = _SEMVER.fullmatch(text)
    if match is None:
        return False
    return all(int(part) <= _U64_MAX for part in match.groups())
