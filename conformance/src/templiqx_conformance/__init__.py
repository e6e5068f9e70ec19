"""templiqx-conformance: the offline proof that a runtime adapter keeps the port's contract.

Three ways in, one set of named checks:

* the pytest plugin (auto-loaded): define a ``templiqx_adapter_factory`` fixture (or
  ``templiqx_openai_adapter_factory`` for an OpenAI-compatible HTTP adapter, or
  ``templiqx_wire_adapter_factory`` with a ``templiqx_wire`` fixture for any other HTTP
  provider) and run ``pytest``;
* the command ``templiqx-conformance run package.module:factory [--transport NAME] [--json]``
  (also ``templiqx conformance run ...``);
* the library: :func:`run_conformance` returns a :class:`ConformanceReport`;
  :func:`replay_scenarios` replays reference scenario manifests (``[scenarios]`` extra).

An HTTP adapter for a provider the kit does not know is proven through a :class:`Wire`: a few
methods saying how that provider writes an answer, an error and a stream; the kit's loopback
server then plays the model in those bytes (see :mod:`templiqx_conformance.wire`).
"""

from templiqx_conformance.loopback import SSEEvent
from templiqx_conformance.probes import (
    KIT_COMPILER,
    PROBES,
    STRUCTURED_SCHEMA,
    Probe,
    structured_interaction,
    text_interaction,
    tool_interaction,
    without_fixture_output,
)
from templiqx_conformance.report import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
    render_table,
)
from templiqx_conformance.rig import KIT_SECRET
from templiqx_conformance.runner import (
    KIT_VERSION,
    check_names,
    run_check,
    run_conformance,
)
from templiqx_conformance.scenarios import replay_scenarios
from templiqx_conformance.target import (
    TRANSPORTS,
    AdapterFactory,
    AdapterTarget,
    FailureCase,
    TargetError,
    TransportAdapterFactory,
)
from templiqx_conformance.transports import transport_names
from templiqx_conformance.wire import (
    WIRE_ENTRY_POINTS,
    Answer,
    Recording,
    ToolCall,
    UnrepresentableError,
    Wire,
    WireFault,
    fragments,
)

__version__ = KIT_VERSION

__all__ = [
    "KIT_COMPILER",
    "KIT_SECRET",
    "KIT_VERSION",
    "PROBES",
    "REPORT_API_VERSION",
    "STRUCTURED_SCHEMA",
    "TRANSPORTS",
    "WIRE_ENTRY_POINTS",
    "AdapterFactory",
    "AdapterTarget",
    "Answer",
    "CheckResult",
    "CheckStatus",
    "ConformanceReport",
    "FailureCase",
    "Probe",
    "Recording",
    "SSEEvent",
    "TargetError",
    "ToolCall",
    "TransportAdapterFactory",
    "UnrepresentableError",
    "Wire",
    "WireFault",
    "__version__",
    "check_names",
    "fragments",
    "render_table",
    "replay_scenarios",
    "run_check",
    "run_conformance",
    "structured_interaction",
    "text_interaction",
    "tool_interaction",
    "transport_names",
    "without_fixture_output",
]
