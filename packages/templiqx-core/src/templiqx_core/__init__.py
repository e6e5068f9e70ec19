"""templiqx-core: The portable templiqx core: strict YAML reading, validation, rendering and compilation of contracts."""

__version__ = "0.2.0"

__all__ = ["__version__"]
