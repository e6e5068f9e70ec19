"""The deterministic fake runtime: returns the fixture output, never touches the network.

It is the default runtime of every composition and the only runtime evals run on.
"""

from __future__ import annotations

from templiqx_contracts import (
    AdapterDescriptor,
    CanonicalJSONError,
    ExecutionReceipt,
    ExecutionRequest,
    fingerprint,
)
from templiqx_core import output_valid
from templiqx_ports import (
    OFFLINE_RUNTIME,
    AsyncRuntimeAdapter,
    InvalidDataError,
    RuntimeAdapter,
    RuntimeReach,
)

__all__ = [
    "FAKE_RUNTIME_DESCRIPTOR",
    "FIXTURE_OUTPUT_HELP",
    "DeterministicFakeRuntime",
    "create_fake_runtime",
]

FIXTURE_OUTPUT_HELP = (
    "The deterministic fake runtime (the default) calls no model: it returns the output it is "
    "given. Pass that output as `fixture_output` (the CLI's --fixture-output FILE, a JSON "
    "file; an eval fixture's non-null `fake_output`), or choose a live runtime (the CLI's "
    "--runtime NAME, templiqx-mcp's TEMPLIQX_RUNTIME)."
)
"""The fix of an execution on the fake runtime without a fixture output."""

FAKE_RUNTIME_DESCRIPTOR = AdapterDescriptor(
    id="templiqx.fake", version="0.2.0", capabilities=["structured_output", "text"]
)


class DeterministicFakeRuntime(RuntimeAdapter, AsyncRuntimeAdapter):
    """Echo ``fixture_output`` as the model output.

    * ``request_fingerprint`` is the fingerprint of the compiled interaction alone;
    * ``output_fingerprint`` the fingerprint of the output;
    * ``output_schema_valid`` says whether the output satisfies the interaction's schema (for
      an interaction that declares tools, a tool-call answer is judged by its tools).

    Without a fixture output the execution fails with ``TQX_DATA_INVALID``. Streaming uses the
    port's default: one ``Complete`` event (or one ``Failed``). It is natively async too: the
    async API awaits :meth:`aexecute` on the event loop (the work is a fingerprint, no I/O).
    """

    def reach(self) -> RuntimeReach:
        """Offline: the answer is the caller's ``fixture_output``; nothing leaves the process."""
        return OFFLINE_RUNTIME

    def descriptor(self) -> AdapterDescriptor:
        return FAKE_RUNTIME_DESCRIPTOR

    def request_fingerprint(self, request: ExecutionRequest) -> str:
        try:
            return fingerprint(request.interaction)
        except CanonicalJSONError as exc:
            raise InvalidDataError(str(exc)) from exc

    def execute(self, request: ExecutionRequest) -> ExecutionReceipt:
        if request.fixture_output is None:
            raise InvalidDataError("fake runtime requires fixture_output", help=FIXTURE_OUTPUT_HELP)
        output = request.fixture_output
        try:
            request_fingerprint = fingerprint(request.interaction)
            output_fingerprint = fingerprint(output)
        except CanonicalJSONError as exc:
            raise InvalidDataError(str(exc)) from exc
        valid = output_valid(request.interaction, output)
        return ExecutionReceipt(
            adapter=FAKE_RUNTIME_DESCRIPTOR,
            request_fingerprint=request_fingerprint,
            output_fingerprint=output_fingerprint,
            output=output,
            output_schema_valid=valid,
        )

    async def aexecute(self, request: ExecutionRequest) -> ExecutionReceipt:
        return self.execute(request)


def create_fake_runtime() -> DeterministicFakeRuntime:
    """Zero-argument factory of the ``fake`` entry point in ``templiqx.runtimes``."""
    return DeterministicFakeRuntime()
