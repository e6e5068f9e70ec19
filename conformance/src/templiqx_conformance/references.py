"""``package.module:attribute`` references, as the command and transport names use them."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from templiqx_conformance.errors import TargetError

__all__ = ["load_object"]


def load_object(reference: str) -> Any:
    """Import ``package.module:attribute`` (the attribute may be dotted) and return it.

    The current directory is put on ``sys.path`` first, as the command's users expect when they
    point it at a module of the project they are standing in.
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(
            f"{reference!r} is not a reference: write package.module:factory "
            "(a module path, a colon, and the factory's name)"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"cannot import module {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return obj
