"""templiqx-local: Filesystem package store and artifact workspace for templiqx, and the default composition."""

__version__ = "0.2.0"

__all__ = ["__version__"]
