"""The ``catalog`` operation, answered without a service: it reads nothing but the catalog.

:class:`~templiqx_application.TempliqxService` answers ``catalog`` through
:func:`catalog_envelope`, and so can a surface that has composed nothing (the CLI answers
``templiqx catalog --view names`` in a read-only folder): the envelope is the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from templiqx_application.catalog import bind_arguments, catalog_result, operation_spec
from templiqx_application.context import envelope
from templiqx_contracts import OperationEnvelope

__all__ = ["catalog_envelope"]


def catalog_envelope(arguments: Mapping[str, Any] | None = None) -> OperationEnvelope:
    """The ``catalog`` operation's envelope for ``arguments`` (checked strictly, as always)."""
    spec = operation_spec("catalog")
    assert spec is not None
    bound, diagnostics = bind_arguments(spec, {} if arguments is None else arguments)
    if diagnostics:
        return envelope("catalog", diagnostics=diagnostics)
    return envelope("catalog", result=catalog_result(bound["view"]))
