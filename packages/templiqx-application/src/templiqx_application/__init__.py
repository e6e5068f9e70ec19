"""templiqx-application: The templiqx application service: the catalog of operations every surface calls."""

__version__ = "0.2.0"

__all__ = ["__version__"]
