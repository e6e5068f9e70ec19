"""Streams and awaitables of the service: the part of :class:`TempliqxService` for hosts that
iterate a streamed execution or run on an event loop.

:meth:`~AsyncOperations.stream_contract` returns an iterator over a streamed execution and
:meth:`~AsyncOperations.astream_contract` its async twin
(:mod:`templiqx_application.stream_runs`); :meth:`~AsyncOperations.ainvoke` and the
``a``-prefixed typed methods are awaitable and never block the event loop: blocking work runs on
the service's bounded :class:`~templiqx_application.workers.WorkerPool`, and a runtime with the
async twin (:class:`~templiqx_ports.AsyncRuntimeAdapter`) is awaited on the loop.

``asyncio`` and :mod:`~templiqx_application.stream_runs` are imported where a stream or an
awaitable call starts, so commands that never use them do not pay for them at start-up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from templiqx_application import observability
from templiqx_application.call_arguments import (
    EXECUTE_SPEC,
    cancelled_envelope,
    compile_like_arguments,
    internal_failure,
    render_request,
)
from templiqx_application.catalog import OperationSpec, bind_arguments
from templiqx_application.context import ServiceContext, envelope
from templiqx_contracts import OperationEnvelope, RenderRequest
from templiqx_core.fuel import CallCancelledError, Fuel
from templiqx_ports import CancelToken, StreamSink

if TYPE_CHECKING:
    from collections.abc import Callable

    from templiqx_application import execution, stream_runs
    from templiqx_application.stream_record import StreamLimits
    from templiqx_application.stream_runs import AsyncContractStream, ContractStream
    from templiqx_application.workers import WorkerPool

__all__ = ["AsyncOperations"]

_STREAM_RUNS = "templiqx_application.stream_runs"
"""Imported by the first async execution (tens of milliseconds: the partial view, the
incremental reader), on a worker thread so the event loop is not held meanwhile."""


def _traced(package: str, contract: str) -> dict[str, Any]:
    """What a stream object's operation span says of its call."""
    return {"package": package, "contract": contract, "stream": True}


class AsyncOperations:
    """Mixed into :class:`~templiqx_application.TempliqxService` (which provides the rest)."""

    if TYPE_CHECKING:
        from contextlib import AbstractContextManager

        _ctx: ServiceContext
        _pool: WorkerPool
        _limits: StreamLimits

        def _metered(self, cancel: CancelToken | None) -> AbstractContextManager[Fuel]: ...

        def _cpu_bound(self, fuel: Fuel) -> AbstractContextManager[None]: ...

        def _operation(
            self, name: object
        ) -> tuple[OperationSpec, Callable[..., OperationEnvelope]] | OperationEnvelope: ...

        def _call(self, name: object, arguments: Any) -> OperationEnvelope: ...

        def invoke_bound(
            self, name: str, bound: Mapping[str, Any], *, cancel: CancelToken | None = None
        ) -> OperationEnvelope: ...

    # --- preparing a streamed execution -----------------------------------------------------

    def _prepare(
        self, bound: Mapping[str, Any], cancel: CancelToken | None = None, *, stream: bool = True
    ) -> execution.Execution | OperationEnvelope:
        """Everything of an ``execute_contract`` before the runtime call (bound arguments),
        on the call's fuel budget, cancelled by ``cancel`` and by the worker pool's token."""
        from templiqx_application.execution import prepare_execution

        try:
            with self._metered(cancel) as fuel, self._cpu_bound(fuel):
                return prepare_execution(
                    self._ctx,
                    self._ctx.runtime,
                    bound["package"],
                    bound["contract"],
                    render_request(bound["inputs"], bound["context"]),
                    bound["capabilities"],
                    fixture_output=bound["fixture_output"],
                )
        except CallCancelledError as exc:
            return cancelled_envelope("execute_contract", exc, stream=stream)
        except Exception as exc:  # the service never raises
            return internal_failure("execute_contract", exc)

    def _preparer(
        self, arguments: dict[str, Any] | OperationEnvelope, cancel: CancelToken | None
    ) -> stream_runs.Prepare:
        """Bind ``execute_contract`` arguments, then prepare (run when a stream opens)."""

        def prepare() -> execution.Execution | OperationEnvelope:
            if isinstance(arguments, OperationEnvelope):
                return arguments
            bound, diagnostics = bind_arguments(EXECUTE_SPEC, arguments)
            if diagnostics:
                return envelope("execute_contract", diagnostics=diagnostics)
            return self._prepare(bound, cancel)

        return prepare

    # --- iterators ---------------------------------------------------------------------------

    def stream_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
        fixture_output: Any = None,
        cancel: CancelToken | None = None,
    ) -> ContractStream:
        """A streamed execution to iterate: ``with service.stream_contract(...) as run:``.

        Entering compiles and checks it (``run.ok`` / ``run.envelope`` answer before any model
        call); ``for event in run`` yields each event as the runtime emits it, the terminal
        one last; leaving early cancels the runtime call. ``run.envelope`` is then
        ``execute_contract(..., stream=True)``'s envelope. See
        :mod:`templiqx_application.stream_runs`.
        """
        from templiqx_application.stream_runs import ContractStream

        arguments = compile_like_arguments(
            "execute_contract",
            package,
            contract,
            inputs,
            context,
            capabilities,
            request,
            {"fixture_output": fixture_output},
        )
        return ContractStream(
            self._preparer(arguments, cancel),
            self._pool,
            self._limits,
            cancel,
            traced=_traced(package, contract),
        )

    def astream_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
        fixture_output: Any = None,
        cancel: CancelToken | None = None,
    ) -> AsyncContractStream:
        """The async twin of :meth:`stream_contract`: ``async with ... as run: async for ...``.

        Task cancellation and leaving early cancel the runtime call. A runtime with the async
        twin runs on the event loop; any other on the service's worker pool.
        """
        from templiqx_application.stream_runs import AsyncContractStream

        arguments = compile_like_arguments(
            "execute_contract",
            package,
            contract,
            inputs,
            context,
            capabilities,
            request,
            {"fixture_output": fixture_output},
        )
        return AsyncContractStream(
            self._preparer(arguments, cancel),
            self._pool,
            self._limits,
            cancel,
            traced=_traced(package, contract),
        )

    # --- awaitables --------------------------------------------------------------------------

    async def ainvoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        """The awaitable :meth:`invoke`: the same envelope, without blocking the event loop.

        ``execute_contract`` awaits a natively async runtime on the loop (``sink`` is then
        called on the loop's thread); everything else runs on the service's worker pool.
        """
        found = self._operation(name)
        if isinstance(found, OperationEnvelope):
            return found
        spec, _ = found
        given: Any = {} if arguments is None else arguments
        if not isinstance(given, Mapping):
            return await self._pool.run(lambda: self._call(name, given))
        # Checking a large argument walks every value: never on the event loop.
        bound, diagnostics = await self._pool.run(lambda: bind_arguments(spec, given))
        if diagnostics:
            return envelope(spec.name, diagnostics=diagnostics)
        return await self.ainvoke_bound(spec.name, bound, sink=sink, cancel=cancel)

    async def ainvoke_bound(
        self,
        name: str,
        bound: Mapping[str, Any],
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        """The awaitable :meth:`invoke_bound` (see :meth:`ainvoke`)."""
        if name != "execute_contract":
            # A cancelled task sets the pool's token for the work: the call stops as its fuel
            # is drawn instead of running to the end on a thread nobody waits for.
            return await self._pool.run(lambda: self.invoke_bound(name, bound, cancel=cancel))
        stream_runs = sys.modules.get(_STREAM_RUNS)
        if stream_runs is None:  # the first execution imports it on a worker, not on the loop
            stream_runs = await self._pool.run(lambda: importlib.import_module(_STREAM_RUNS))

        arguments = dict(bound)
        traced = observability.operation(name, arguments)  # None unless a host set up OTel
        streamed = arguments.get("stream") is True
        with observability.active(traced):
            result: OperationEnvelope
            try:
                result = await stream_runs.aexecute(
                    lambda: self._prepare(arguments, cancel, stream=streamed),
                    self._pool,
                    self._limits,
                    stream=streamed,
                    sink=sink,
                    cancel=cancel,
                )
            except Exception as exc:  # the service never raises (cancellation propagates)
                result = internal_failure(name, exc)
            except BaseException:
                if traced is not None:
                    traced.abandon()
                raise
        if traced is not None:
            traced.finish(result)
        return result

    async def acompile_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
    ) -> OperationEnvelope:
        """The awaitable :meth:`compile_contract` (runs on the worker pool)."""
        arguments = compile_like_arguments(
            "compile_contract", package, contract, inputs, context, capabilities, request, {}
        )
        return await self._ainvoke_typed("compile_contract", arguments)

    async def arender_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
    ) -> OperationEnvelope:
        """The awaitable :meth:`render_contract` (runs on the worker pool)."""
        arguments = compile_like_arguments(
            "render_contract", package, contract, inputs, context, capabilities, request, {}
        )
        return await self._ainvoke_typed("render_contract", arguments)

    async def aexecute_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
        fixture_output: Any = None,
        stream: bool = False,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        """The awaitable :meth:`execute_contract`: the same envelope, the loop never blocked.

        ``sink`` is called on the event loop's thread; one that raises cancels the call. Task
        cancellation cancels the runtime call and propagates.
        """
        extra = {"fixture_output": fixture_output, "stream": stream}
        arguments = compile_like_arguments(
            "execute_contract", package, contract, inputs, context, capabilities, request, extra
        )
        return await self._ainvoke_typed("execute_contract", arguments, sink=sink, cancel=cancel)

    async def _ainvoke_typed(
        self,
        name: str,
        arguments: dict[str, Any] | OperationEnvelope,
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        if isinstance(arguments, OperationEnvelope):
            return arguments
        return await self.ainvoke(name, arguments, sink=sink, cancel=cancel)
