"""templiqx-cli: the ``templiqx`` command line, generated from the service's catalog.

Importing this package is cheap on purpose (no click, no service): ``templiqx catalog`` is
answered from the catalog snapshot without composing anything.
"""

from templiqx_cli.entry import main

__version__ = "0.2.0"

__all__ = ["__version__", "main"]
