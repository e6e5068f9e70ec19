"""The error of the batch file layer: a port error with a ``TQX_BATCH_*`` (or ``TQX_IO``,
``TQX_BUSY``) code, its detail and its fix."""

from __future__ import annotations

from templiqx_application import fix_hint
from templiqx_ports import PortError

__all__ = ["BatchFileError"]


class BatchFileError(PortError):
    """A dataset, an output or a run state that cannot be used as asked."""

    prefix = "batch"

    def __init__(self, code: str, detail: str, *, help: str | None = None) -> None:
        super().__init__(detail, help=help or fix_hint(code))
        self.code = code
