"""Importing the part of the ``mcp`` SDK a stdio server uses, without the rest of it.

``import mcp.server.lowlevel`` first runs ``mcp/__init__.py``, which imports the SDK's client
(HTTP stack included), and ``mcp/server/__init__.py``, which imports the high-level
``MCPServer`` with its resource templates and settings: a third of the SDK's import time, for
code a low-level stdio server never calls (measured in docs/performance.md).

:func:`import_lean` imports the SDK with those two package modules standing in as *lazy
packages*: the submodules load as usual, and the first time anything reads an attribute the
real ``__init__`` would have defined (``mcp.ClientSession``, ``mcp.server.MCPServer``), that
``__init__`` runs into the same module object, so every name is there as before. It is only
done in a fresh process that has not imported ``mcp`` yet (the ``templiqx-mcp`` command); any
failure falls back to the ordinary import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from importlib.machinery import ModuleSpec

__all__ = ["import_lean"]

_LEAN_PACKAGES = ("mcp", "mcp.server")


class _LazyPackage(types.ModuleType):
    """A package whose ``__init__`` runs on the first lookup of a name it does not have yet."""

    _templiqx_spec: ModuleSpec
    _templiqx_loaded: bool

    def __getattr__(self, name: str) -> object:
        if name.startswith("_templiqx_") or self.__dict__.get("_templiqx_loaded", True):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self.__dict__["_templiqx_loaded"] = True
        loader = self._templiqx_spec.loader
        assert loader is not None
        loader.exec_module(self)  # the real __init__, into this module
        return getattr(self, name)


def _stand_in(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return False
    module = _LazyPackage(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__package__ = name
    module.__loader__ = spec.loader
    module.__dict__["_templiqx_spec"] = spec
    module.__dict__["_templiqx_loaded"] = False
    sys.modules[name] = module
    if "." in name:
        parent, _, child = name.rpartition(".")
        sys.modules[parent].__dict__[child] = module
    return True


def import_lean() -> None:
    """Import ``mcp.server.lowlevel`` (and what it needs) without the SDK's eager package
    ``__init__`` modules; a no-op once ``mcp`` is imported, an ordinary import on failure."""
    if "mcp" in sys.modules:
        return
    stood_in: list[str] = []
    try:
        for name in _LEAN_PACKAGES:
            if not _stand_in(name):
                break
            stood_in.append(name)
        importlib.import_module("mcp.server.lowlevel")
    except Exception:
        for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
            del sys.modules[name]
        importlib.import_module("mcp.server.lowlevel")
