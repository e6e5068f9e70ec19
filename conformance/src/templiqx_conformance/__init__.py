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

An HTTP adapter is proven against the kit's loopback server, which plays the model in the bytes
a :class:`Wire` describes: how the provider frames a stream (:data:`SSE`, named events or not;
:data:`NDJSON`; :data:`JSON_ARRAY`; :data:`WHOLE_BODY`) and reports errors. The kit ships wires
for OpenAI chat completions, a Messages-style API and Ollama.

The package's parts: ``wires`` (the wire hook and the shipped wires), ``rig`` (making and
calling adapters, the server playing the model), ``checks`` (every check and what it builds
on), ``loopback`` (the HTTP test server, standard library only), and the entry points
``runner``, ``plugin`` and ``cli``.
"""

from templiqx_conformance.errors import TargetError
from templiqx_conformance.loopback import SSEEvent
from templiqx_conformance.probes import without_fixture_output
from templiqx_conformance.report import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
    render_table,
)
from templiqx_conformance.rig.rig import KIT_SECRET
from templiqx_conformance.runner import KIT_VERSION, check_names, run_check, run_conformance
from templiqx_conformance.scenarios import replay_scenarios
from templiqx_conformance.target import AdapterTarget, FailureCase
from templiqx_conformance.wires import (
    JSON_ARRAY,
    NDJSON,
    SSE,
    WHOLE_BODY,
    Answer,
    Framing,
    MessagesWire,
    OllamaWire,
    OpenAIWire,
    Raw,
    Recording,
    ToolCall,
    UnrepresentableError,
    Wire,
    WireFault,
    fragments,
    transport_names,
)

__version__ = KIT_VERSION

__all__ = [
    "JSON_ARRAY",
    "KIT_SECRET",
    "NDJSON",
    "REPORT_API_VERSION",
    "SSE",
    "WHOLE_BODY",
    "AdapterTarget",
    "Answer",
    "CheckResult",
    "CheckStatus",
    "ConformanceReport",
    "FailureCase",
    "Framing",
    "MessagesWire",
    "OllamaWire",
    "OpenAIWire",
    "Raw",
    "Recording",
    "SSEEvent",
    "TargetError",
    "ToolCall",
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
    "transport_names",
    "without_fixture_output",
]
