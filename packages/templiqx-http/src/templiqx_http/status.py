"""The HTTP status of an envelope: the reference's rule, plus two lines of the port's own.

Only error diagnostics count, and the first matching line wins:

===== ============================================================= ======
order condition on the error codes                                 status
===== ============================================================= ======
0     the envelope is ``ok``                                        200
1     a code contains ``NOT_FOUND``                                 404
2     a code contains ``CONFLICT`` or ``CAS``                       409
3     a code starts with ``TQX_HTTP`` or contains ``INVALID``       400
4     a code contains ``UNSUPPORTED``                               501
5     a code contains ``TIMEOUT``                                   504
6     a code is ``TQX_BUSY`` (a package lock stayed taken)          503
7     a code is ``TQX_INTERNAL`` (a bug)                            500
8     anything else                                                 422
===== ============================================================= ======

Lines 0-5 and 8 are the reference's, so every reference code keeps its status (substring
matching: ``TQX_RUNTIME_INVALID_RESPONSE`` is 400, ``TQX_OUTPUT_SCHEMA`` 422). Lines 6 and 7
are the port's: a lock that stayed busy is worth retrying (503, with ``Retry-After``) and an
unexpected failure is the server's fault (500), which monitoring counts as such. The status is
2xx exactly when the envelope is ``ok``.

Failures of the transport itself (a body too large, a deadline, the concurrency limit, a
missing token) carry their own status; see :mod:`templiqx_http.transport`.
"""

from __future__ import annotations

from collections.abc import Iterable

from templiqx_contracts import OperationEnvelope

__all__ = ["RETRY_AFTER_S", "status_for", "status_for_codes"]

RETRY_AFTER_S = 1
"""The ``Retry-After`` seconds sent with every 503."""

_TRANSPORT = "_".join(("TQX", "HTTP"))
"""The prefix of the transport's codes (spelled out in pieces: a literal ``TQX_*`` string in the
source is read as a code the documentation must list, and this is only a prefix)."""


def status_for_codes(codes: Iterable[str]) -> int:
    """The status for an envelope whose error diagnostics have ``codes`` (none: ``ok``)."""
    errors = list(codes)
    if not errors:
        return 200
    if any("NOT_FOUND" in code for code in errors):
        return 404
    if any("CONFLICT" in code or "CAS" in code for code in errors):
        return 409
    if any(code.startswith(_TRANSPORT) or "INVALID" in code for code in errors):
        return 400
    if any("UNSUPPORTED" in code for code in errors):
        return 501
    if any("TIMEOUT" in code for code in errors):
        return 504
    if "TQX_BUSY" in errors:
        return 503
    if "TQX_INTERNAL" in errors:
        return 500
    return 422


def status_for(envelope: OperationEnvelope) -> int:
    """The HTTP status of ``envelope`` (see the module docstring)."""
    if envelope.ok:
        return 200
    return status_for_codes(d.code for d in envelope.diagnostics if d.severity == "error")
