"""templiqx-mock: Scripted, deterministic mock runtime for templiqx that replays scenario manifests (conformance only)."""

__version__ = "0.2.0"

__all__ = ["__version__"]
