"""TempliqxService: the one service every surface calls.

Two ways in, one path through:

* typed methods, one per catalog operation (``service.compile_contract("demo", "greeting",
  inputs={...}, capabilities=["structured_output"])``);
* :meth:`TempliqxService.invoke` with an operation name and a mapping of arguments, which is
  what generated surfaces (CLI, MCP) call.

Both check arguments against the catalog strictly, run the operation, and always return an
:class:`~templiqx_contracts.OperationEnvelope`: nothing raises, prints or exits. An unexpected
exception becomes a ``TQX_INTERNAL`` diagnostic.

Batch runs: :meth:`TempliqxService.batch` (an iterator of row results) and
:meth:`TempliqxService.abatch` run a contract over a dataset
(:mod:`templiqx_application.batch_operations`).

Streams and asyncio: :meth:`TempliqxService.stream_contract` returns an iterator over a
streamed execution and :meth:`TempliqxService.astream_contract` its async twin;
:meth:`TempliqxService.ainvoke` and the ``a``-prefixed typed methods are awaitable and never
block the event loop (:mod:`templiqx_application.async_operations`, mixed into the service).

Work and cancellation: every call runs with one render-fuel budget
(:mod:`templiqx_core.fuel`; ``render_fuel``, default ``TEMPLIQX_RENDER_FUEL`` or one million
steps) that its loads, include splices and renders draw from, and with its cancel token (the
``cancel`` argument, and the worker pool's own when an awaiting task is cancelled), which is
checked as fuel is drawn: a cancelled call ends within milliseconds with ``TQX_CANCELLED``
(``TQX_RUNTIME_CANCELLED`` for an execution), whatever operation it is.

Thread-safety: one service may be shared by any number of threads and event loops. It holds no
per-call state; its contract cache (:mod:`templiqx_application.prepared`) and worker pool are
locked; runtimes must be thread-safe (the port requires it). A stream object is used by one
thread or task at a time.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from templiqx_application import observability
from templiqx_application.async_operations import AsyncOperations
from templiqx_application.authorized_context import Clock, utc_now
from templiqx_application.batch_operations import BatchOperations
from templiqx_application.call_arguments import cancelled_envelope, compile_like_arguments
from templiqx_application.call_arguments import given as _given
from templiqx_application.call_arguments import internal_failure as _internal
from templiqx_application.call_arguments import render_request as _request
from templiqx_application.catalog import (
    OperationSpec,
    bind_arguments,
    catalog_result,
    operation_spec,
)
from templiqx_application.context import ServiceContext, envelope
from templiqx_application.diagnostics import error
from templiqx_application.fake_runtime import DeterministicFakeRuntime
from templiqx_application.loading import ContractLoader
from templiqx_application.stream_record import DEFAULT_STREAM_LIMITS, StreamLimits
from templiqx_application.workers import DEFAULT_WORKER_THREADS, CpuSlots, WorkerPool
from templiqx_contracts import (
    AdapterDescriptor,
    OperationEnvelope,
    RenderRequest,
    quote_input,
)
from templiqx_core.fuel import (
    FUEL_ENV,
    CallCancelledError,
    Fuel,
    current_fuel,
    fuel_limit,
    metered,
)
from templiqx_ports import (
    ArtifactWorkspace,
    CancelToken,
    PackageStore,
    RuntimeAdapter,
    RuntimeReach,
    StreamSink,
)

__all__ = ["TempliqxService"]

_Implementation = Callable[..., OperationEnvelope]

_OPERATIONS: dict[str, tuple[str, str, bool]] = {
    "discover_packages": ("packages", "discover_packages", False),
    "create_package": ("packages", "create_package", False),
    "update_package": ("packages", "update_package", False),
    "delete_package": ("packages", "delete_package", False),
    "export_package_identity": ("packages", "export_package_identity", False),
    "sign_package": ("packages", "sign_package", False),
    "verify_package_trust": ("packages", "verify_package_trust", False),
    "inspect_contract": ("authoring", "inspect_contract", False),
    "put_contract": ("authoring", "put_contract", False),
    "delete_contract": ("authoring", "delete_contract", False),
    "validate_contract": ("validation", "validate_contract", False),
    "validate_package": ("validation", "validate_package", False),
    "compile_contract": ("execution", "compile_contract", True),
    "render_contract": ("execution", "render_contract", True),
    "list_workspace_artifacts": ("artifacts", "list_workspace_artifacts", False),
    "read_artifact": ("artifacts", "read_artifact", False),
    "delete_workspace_artifact": ("artifacts", "delete_workspace_artifact", False),
    "test_package": ("evals", "test_package", False),
    "list_evals": ("evals", "list_evals", False),
    "run_eval": ("evals", "run_eval", False),
    "diff_contract": ("authoring", "diff_contract", False),
    "explain_contract": ("authoring", "explain_contract", False),
}
"""Every catalog operation but ``catalog`` and ``execute_contract``: the module of
``templiqx_application`` that implements it, the function, and whether it takes the inputs and
context as one render request. Imported on the operation's first call."""


class TempliqxService(AsyncOperations, BatchOperations):
    """The catalog of operations over a package store, a workspace and a runtime.

    ``runtime`` defaults to the deterministic fake. Evals always run on the fake, whatever
    ``runtime`` is. ``clock`` (returning an aware datetime) is what authorized-context
    freshness is judged against; it defaults to the UTC wall clock. ``worker_threads`` bounds
    the threads the async and iterator APIs use for blocking work (started on demand);
    ``stream_limits`` bounds what an envelope keeps of a stream. ``render_fuel`` is the work
    budget of one call in steps (1 to ``MAX_RENDER_FUEL``; default: ``TEMPLIQX_RENDER_FUEL``
    from the environment, else ``DEFAULT_RENDER_FUEL``); a value out of range raises
    ``ValueError`` naming it. ``cpu_slots`` bounds the calls doing CPU-bound work at once
    (default: one per CPU, at least two; :class:`~templiqx_application.workers.CpuSlots`): the
    read-only operations and the preparation of an execution take a slot, writes (which may
    wait for a package lock) and runtime calls do not.
    """

    def __init__(
        self,
        store: PackageStore,
        workspace: ArtifactWorkspace,
        runtime: RuntimeAdapter | None = None,
        *,
        clock: Clock | None = None,
        worker_threads: int = DEFAULT_WORKER_THREADS,
        stream_limits: StreamLimits = DEFAULT_STREAM_LIMITS,
        render_fuel: int | None = None,
        cpu_slots: int | None = None,
    ) -> None:
        self._fuel = fuel_limit(
            render_fuel if render_fuel is not None else os.environ.get(FUEL_ENV)
        )
        self._cpu = CpuSlots(cpu_slots)
        self._pool = WorkerPool(worker_threads)
        self._limits = stream_limits
        fake = DeterministicFakeRuntime()
        self._ctx = ServiceContext(
            store=store,
            workspace=workspace,
            runtime=runtime if runtime is not None else fake,
            eval_runtime=fake,
            clock=clock if clock is not None else utc_now,
            loader=ContractLoader(store),
        )
        ctx = self._ctx

        implementations: dict[str, _Implementation] = {
            "catalog": lambda view: envelope("catalog", result=catalog_result(view)),
            "execute_contract": self._execute,
        }

        def resolve(name: str) -> _Implementation:
            # Operation modules take (ctx, **catalog arguments): the parameter names match.
            where, attribute, takes_request = _OPERATIONS[name]
            module = importlib.import_module(f"templiqx_application.{where}")
            operation: _Implementation = getattr(module, attribute)
            if not takes_request:
                return functools.partial(operation, ctx)

            def run(
                inputs: dict[str, Any], context: dict[str, Any], **rest: Any
            ) -> OperationEnvelope:
                return operation(ctx, request=_request(inputs, context), **rest)

            return run

        def deferred(name: str) -> _Implementation:
            # A command runs one operation: its module is imported on its first call (start-up
            # of a short process is mostly imports), then called directly.
            def first_call(**arguments: Any) -> OperationEnvelope:
                implementation = resolve(name)
                implementations[name] = implementation
                return implementation(**arguments)

            return first_call

        for name in _OPERATIONS:
            implementations[name] = deferred(name)
        self._implementations = implementations

    @property
    def render_fuel(self) -> int:
        """The work budget of one call, in render-fuel steps."""
        return self._fuel

    @contextmanager
    def _metered(self, cancel: CancelToken | None) -> Iterator[Fuel]:
        """One call's budget and cancel token for everything the block runs."""
        with metered(Fuel(self._fuel, cancel)) as fuel:
            yield fuel

    @contextmanager
    def _cpu_bound(self, fuel: Fuel) -> Iterator[None]:
        """Hold one of the service's CPU slots (waiting, cancellably, for one)."""
        with self._cpu.slot(lambda: fuel.cancelled):
            yield

    @property
    def runtime_descriptor(self) -> AdapterDescriptor:
        """The identity of the runtime ``execute_contract`` uses (evals always use the fake)."""
        return self._ctx.runtime.descriptor()

    @property
    def runtime_reach(self) -> RuntimeReach:
        """What ``execute_contract``'s runtime does beyond this process: live (it calls a model
        service) and paid, or offline. Evals always run offline, on the fake."""
        return self._ctx.runtime.reach()

    def close(self) -> None:
        """Release the worker threads (running calls finish first); the service stays usable."""
        self._pool.shutdown()

    # --- generic entry ----------------------------------------------------------------------

    def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        """Run the catalog operation ``name`` with ``arguments`` (checked strictly).

        ``sink`` and ``cancel`` are not arguments of the catalog: they reach
        ``execute_contract`` (the live event sink of a streamed execution and its cancellation
        token) and are ignored by every other operation.
        """
        return self._call(name, {} if arguments is None else arguments, sink=sink, cancel=cancel)

    def invoke_bound(
        self,
        name: str,
        bound: Mapping[str, Any],
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        """Run the catalog operation ``name`` with arguments that are already bound.

        ``bound`` is what :func:`~templiqx_application.bind_arguments` returned for the
        operation's spec without diagnostics; it is not checked again. This is for a surface
        that binds first to report argument problems its own way (the MCP server answers them
        as a tool error) and would otherwise bind every call twice. An unknown ``name`` is
        ``TQX_UNKNOWN_OPERATION`` as with :meth:`invoke`; ``sink`` and ``cancel`` are passed on
        as :meth:`invoke` does.
        """
        found = self._operation(name)
        if isinstance(found, OperationEnvelope):
            return found
        spec, implementation = found
        return self._run(spec.name, implementation, dict(bound), sink, cancel)

    def _operation(self, name: object) -> tuple[OperationSpec, _Implementation] | OperationEnvelope:
        """The spec and implementation of ``name``, or the envelope refusing it."""
        spec = operation_spec(name) if isinstance(name, str) else None
        implementation = None
        if spec is not None:
            implementation = self._implementations.get(spec.name)
        if spec is not None and implementation is not None:
            return spec, implementation
        # Never str() an arbitrary object: a deeply nested one raises RecursionError, a
        # huge one would be echoed whole. Non-strings are named by type, long names cut.
        if isinstance(name, str):
            label = name
            message = f"unknown operation {quote_input(name)}"
        else:
            label = ""
            message = f"an operation name is a string, not {type(name).__name__}"
        return envelope(
            label,
            diagnostics=[
                error(
                    "TQX_UNKNOWN_OPERATION",
                    message,
                    help="call `catalog` for the operations this service offers",
                )
            ],
        )

    def _call(
        self,
        name: object,
        arguments: Any,
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        found = self._operation(name)
        if isinstance(found, OperationEnvelope):
            return found
        spec, implementation = found
        if not isinstance(arguments, Mapping):
            return envelope(
                spec.name,
                diagnostics=[
                    error(
                        "TQX_ARGUMENT_INVALID",
                        f"arguments must be a JSON object, not {type(arguments).__name__}",
                        "/",
                    )
                ],
            )
        bound, diagnostics = bind_arguments(spec, arguments)
        if diagnostics:
            return envelope(spec.name, diagnostics=diagnostics)
        return self._run(spec.name, implementation, bound, sink, cancel)

    def _run(
        self,
        name: str,
        implementation: _Implementation,
        bound: dict[str, Any],
        sink: StreamSink | None,
        cancel: CancelToken | None,
    ) -> OperationEnvelope:
        traced = observability.operation(name, bound)  # None unless a host set up OTel
        if name == "execute_contract":
            bound["sink"] = sink
            bound["cancel"] = cancel
        if traced is None:
            return self._guarded(name, implementation, bound, cancel)
        with traced.active():
            result = self._guarded(name, implementation, bound, cancel)
            traced.finish(result)
        return result

    def _guarded(
        self,
        name: str,
        implementation: _Implementation,
        bound: dict[str, Any],
        cancel: CancelToken | None,
    ) -> OperationEnvelope:
        """Run the operation under its fuel and CPU slot; never raises."""
        try:
            with self._metered(cancel) as fuel:
                if fuel.cancelled:
                    raise CallCancelledError
                spec = operation_spec(name)
                if spec is None or not spec.read_only:
                    return implementation(**bound)  # a write may wait for a lock: no slot
                with self._cpu_bound(fuel):
                    return implementation(**bound)
        except CallCancelledError as exc:
            return cancelled_envelope(name, exc, stream=bound.get("stream") is True)
        except Exception as exc:  # the service never raises
            return _internal(name, exc)

    def _execute(
        self,
        package: str,
        contract: str,
        inputs: dict[str, Any],
        context: dict[str, Any],
        capabilities: list[str] | None,
        fixture_output: Any,
        stream: bool,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        from templiqx_application.execution import execute_contract

        return execute_contract(
            self._ctx,
            self._ctx.runtime,
            package,
            contract,
            _request(inputs, context),
            capabilities,
            fixture_output=fixture_output,
            stream=stream,
            sink=sink,
            cancel=cancel,
            limits=self._limits,
            preparing=self._cpu_bound(current_fuel()),
        )

    # --- typed methods, one per operation ---------------------------------------------------

    def catalog(self, *, view: str | None = None) -> OperationEnvelope:
        """The operations this service offers: described in full (name, summary, parameters,
        behaviour), or with ``view="names"`` only their names, in catalog order."""
        return self._call("catalog", _given(view=view))

    def discover_packages(self) -> OperationEnvelope:
        """Every package under the root, sorted by (package, version)."""
        return self._call("discover_packages", {})

    def create_package(self, name: str, version: str) -> OperationEnvelope:
        """Create an empty package."""
        return self._call("create_package", _given(name=name, version=version))

    def update_package(
        self,
        package: str,
        *,
        expected_fingerprint: str,
        version: str | None = None,
        description: str | None = None,
    ) -> OperationEnvelope:
        """Set version and/or description (compare-and-swap on the manifest fingerprint)."""
        return self._call(
            "update_package",
            _given(
                package=package,
                expected_fingerprint=expected_fingerprint,
                version=version,
                description=description,
            ),
        )

    def delete_package(self, package: str, *, expected_fingerprint: str) -> OperationEnvelope:
        """Delete a package (compare-and-swap on the manifest fingerprint)."""
        return self._call(
            "delete_package", _given(package=package, expected_fingerprint=expected_fingerprint)
        )

    def export_package_identity(self, package: str) -> OperationEnvelope:
        """The package identity and the manifest fingerprint."""
        return self._call("export_package_identity", _given(package=package))

    def sign_package(
        self, package: str, *, key_id: str, expected_fingerprint: str
    ) -> OperationEnvelope:
        """Sign the package with the environment's key."""
        return self._call(
            "sign_package",
            _given(package=package, key_id=key_id, expected_fingerprint=expected_fingerprint),
        )

    def verify_package_trust(self, package: str, *, strict: bool = False) -> OperationEnvelope:
        """Verify the package's signatures."""
        return self._call("verify_package_trust", _given(package=package, strict=strict))

    def inspect_contract(self, package: str, contract: str) -> OperationEnvelope:
        """The loaded contract and its fingerprint (the compare-and-swap token)."""
        return self._call("inspect_contract", _given(package=package, contract=contract))

    def put_contract(
        self,
        package: str,
        contract: str,
        source: str,
        *,
        expected_fingerprint: str | None = None,
    ) -> OperationEnvelope:
        """Create a contract, or replace it when ``expected_fingerprint`` is current."""
        return self._call(
            "put_contract",
            _given(
                package=package,
                contract=contract,
                source=source,
                expected_fingerprint=expected_fingerprint,
            ),
        )

    def delete_contract(
        self, package: str, contract: str, *, expected_fingerprint: str
    ) -> OperationEnvelope:
        """Delete a contract when ``expected_fingerprint`` is current."""
        return self._call(
            "delete_contract",
            _given(package=package, contract=contract, expected_fingerprint=expected_fingerprint),
        )

    def validate_contract(self, package: str, contract: str) -> OperationEnvelope:
        """Validate one contract."""
        return self._call("validate_contract", _given(package=package, contract=contract))

    def contract_text(self, package: str, contract: str) -> tuple[OperationEnvelope, str | None]:
        """``inspect_contract``'s envelope and the contract's stored text (``None`` when it
        cannot be read; the envelope says why). The text is given also when the contract does
        not load, so an editor can show its diagnostics at their spans. Not a catalog
        operation: a read of what ``inspect_contract`` reads, for editors (the playground)."""
        found: list[str] = []

        from templiqx_application.authoring import inspect_contract_text

        def run(package: str, contract: str) -> OperationEnvelope:
            answer, text = inspect_contract_text(self._ctx, package, contract)
            if text is not None:
                found.append(text)
            return answer

        answer = self._bound_call("inspect_contract", run, package=package, contract=contract)
        return answer, (found[0] if found else None)

    def validate_contract_source(
        self, package: str, contract: str, source: str
    ) -> OperationEnvelope:
        """``validate_contract`` of ``source`` as if it were saved as the contract, writing
        nothing: the check an editor runs on an edit before ``put_contract`` saves it."""

        from templiqx_application.validation import validate_contract_source

        def run(package: str, contract: str) -> OperationEnvelope:
            return validate_contract_source(self._ctx, package, contract, source)

        return self._bound_call("validate_contract", run, package=package, contract=contract)

    def _bound_call(
        self, name: str, implementation: _Implementation, **arguments: Any
    ) -> OperationEnvelope:
        """``implementation`` with ``arguments`` checked as the catalog operation ``name``
        checks them, under its fuel and CPU slot."""
        spec = operation_spec(name)
        assert spec is not None, name
        bound, diagnostics = bind_arguments(spec, arguments)
        if diagnostics:
            return envelope(name, diagnostics=diagnostics)
        return self._guarded(name, implementation, bound, None)

    def validate_package(self, package: str) -> OperationEnvelope:
        """Validate a whole package."""
        return self._call("validate_package", _given(package=package))

    def compile_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
    ) -> OperationEnvelope:
        """Compile into one interaction (values as ``inputs``/``context`` or a ``request``)."""
        return self._compile_like(
            "compile_contract", package, contract, inputs, context, capabilities, request, {}
        )

    def render_contract(
        self,
        package: str,
        contract: str,
        *,
        inputs: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        capabilities: list[str] | None = None,
        request: RenderRequest | None = None,
    ) -> OperationEnvelope:
        """Render the messages (values as ``inputs``/``context`` or a ``request``)."""
        return self._compile_like(
            "render_contract", package, contract, inputs, context, capabilities, request, {}
        )

    def execute_contract(
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
        """Compile and run on the composed runtime.

        With ``stream=True`` the runtime streams; ``sink`` (if given) receives each event as
        it arrives, ``cancel`` (anything with ``is_set()``) asks the runtime to stop, and the
        envelope carries every event in ``stream_events`` on success.
        """
        extra: dict[str, Any] = {"fixture_output": fixture_output, "stream": stream}
        return self._compile_like(
            "execute_contract",
            package,
            contract,
            inputs,
            context,
            capabilities,
            request,
            extra,
            sink=sink,
            cancel=cancel,
        )

    def list_workspace_artifacts(
        self, package: str, *, workspace: str | None = None, prefix: str | None = None
    ) -> OperationEnvelope:
        """The package's workspace artifacts."""
        return self._call(
            "list_workspace_artifacts", _given(package=package, workspace=workspace, prefix=prefix)
        )

    def read_artifact(
        self, package: str, path: str, *, workspace: str | None = None
    ) -> OperationEnvelope:
        """Read one workspace artifact."""
        return self._call("read_artifact", _given(package=package, path=path, workspace=workspace))

    def delete_workspace_artifact(
        self,
        package: str,
        path: str,
        *,
        expected_fingerprint: str,
        workspace: str | None = None,
    ) -> OperationEnvelope:
        """Delete one workspace artifact (compare-and-swap on its SHA-256)."""
        return self._call(
            "delete_workspace_artifact",
            _given(
                package=package,
                path=path,
                expected_fingerprint=expected_fingerprint,
                workspace=workspace,
            ),
        )

    def test_package(
        self, package: str, *, capabilities: list[str] | None = None
    ) -> OperationEnvelope:
        """Run every eval fixture of the package on the fake runtime."""
        return self._call("test_package", _given(package=package, capabilities=capabilities))

    def list_evals(self, package: str) -> OperationEnvelope:
        """Every (contract, fixture) pair of the package."""
        return self._call("list_evals", _given(package=package))

    def run_eval(
        self,
        package: str,
        contract: str,
        fixture_id: str,
        *,
        capabilities: list[str] | None = None,
    ) -> OperationEnvelope:
        """Run one eval fixture on the fake runtime."""
        return self._call(
            "run_eval",
            _given(
                package=package,
                contract=contract,
                fixture_id=fixture_id,
                capabilities=capabilities,
            ),
        )

    def diff_contract(
        self, left_package: str, left_contract: str, right_package: str, right_contract: str
    ) -> OperationEnvelope:
        """Compare two loaded contracts."""
        return self._call(
            "diff_contract",
            _given(
                left_package=left_package,
                left_contract=left_contract,
                right_package=right_package,
                right_contract=right_contract,
            ),
        )

    def explain_contract(self, package: str, contract: str) -> OperationEnvelope:
        """Explain a contract."""
        return self._call("explain_contract", _given(package=package, contract=contract))

    def _compile_like(
        self,
        name: str,
        package: str,
        contract: str,
        inputs: Mapping[str, Any] | None,
        context: Mapping[str, Any] | None,
        capabilities: list[str] | None,
        request: RenderRequest | None,
        extra: dict[str, Any],
        *,
        sink: StreamSink | None = None,
        cancel: CancelToken | None = None,
    ) -> OperationEnvelope:
        arguments = compile_like_arguments(
            name, package, contract, inputs, context, capabilities, request, extra
        )
        if isinstance(arguments, OperationEnvelope):
            return arguments
        return self._call(name, arguments, sink=sink, cancel=cancel)
