"""The kit's layout shows its parts, and its public API is small and complete.

Every module of the package says what it holds (a docstring); the three parts are subpackages;
everything in ``__all__`` exists, and the names the guide tells authors to import are in it.
"""

from __future__ import annotations

import importlib
import pkgutil

import templiqx_conformance

PARTS = ("templiqx_conformance.wires", "templiqx_conformance.rig", "templiqx_conformance.checks")


def test_every_module_says_what_it_holds() -> None:
    for info in pkgutil.walk_packages(templiqx_conformance.__path__, "templiqx_conformance."):
        module = importlib.import_module(info.name)
        assert (module.__doc__ or "").strip(), f"{info.name} has no docstring"


def test_the_three_parts_are_subpackages() -> None:
    for name in PARTS:
        assert hasattr(importlib.import_module(name), "__path__"), name


def test_the_public_api_is_small_and_complete() -> None:
    public = templiqx_conformance.__all__
    assert len(public) == len(set(public)) <= 40
    for name in public:
        assert hasattr(templiqx_conformance, name), name
    for name in (
        "run_conformance",
        "run_check",
        "AdapterTarget",
        "FailureCase",
        "Recording",
        "Wire",
        "WireFault",
        "Answer",
        "SSE",
        "NDJSON",
        "JSON_ARRAY",
        "WHOLE_BODY",
        "OpenAIWire",
        "MessagesWire",
        "OllamaWire",
        "without_fixture_output",
    ):
        assert name in public, name
