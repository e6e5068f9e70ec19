"""The transport suite's checks: what an HTTP adapter makes of its provider's bytes.

* :mod:`~templiqx_conformance.checks.transport.common` — the answer's reference receipt and how
  a stream is judged against the kit's answer;
* :mod:`~templiqx_conformance.checks.transport.streams` — requests, content and tool-call
  streams split every way, idle events and keep-alives, CRLF, cancellation on the wire;
* :mod:`~templiqx_conformance.checks.transport.faults` — in-band errors, truncation, the fault
  matrix, size bounds;
* :mod:`~templiqx_conformance.checks.transport.recordings` — the author's recorded responses.
"""
