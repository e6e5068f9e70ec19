"""templiqx-cli: The templiqx command line: validate, compile, execute and stream contracts."""

__version__ = "0.2.0"

__all__ = ["__version__"]
