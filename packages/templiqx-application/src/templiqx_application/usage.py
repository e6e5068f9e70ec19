"""Token usage on envelopes: what a model execution cost, beside (never inside) the receipt.

A runtime that knows the usage reports it to the caller's :func:`templiqx_ports.usage_meter`;
``execute_contract`` opens one around the runtime call and puts the total on the envelope's
optional ``usage`` member — on success, and on a failure after the model answered (a completion
whose output was unusable still cost tokens). Runtimes that report nothing leave it absent, so
their envelopes are byte-identical to envelopes without the member.
"""

from __future__ import annotations

import msgspec

from templiqx_contracts import OperationEnvelope, Usage

__all__ = ["with_usage"]


def with_usage(envelope: OperationEnvelope, usage: Usage | None) -> OperationEnvelope:
    """``envelope`` carrying ``usage`` (unchanged when ``usage`` is ``None``)."""
    if usage is None:
        return envelope
    return msgspec.structs.replace(envelope, usage=usage)
