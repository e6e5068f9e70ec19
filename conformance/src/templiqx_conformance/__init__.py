"""templiqx-conformance: the offline proof that a runtime adapter keeps the templiqx port contract."""

__version__ = "0.2.0"

__all__ = ["__version__"]
