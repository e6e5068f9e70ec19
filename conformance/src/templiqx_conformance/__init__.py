"""templiqx-conformance: the offline proof that a runtime adapter keeps the port's contract.

Three ways in, one set of named checks:

* the pytest plugin (auto-loaded): define a ``templiqx_adapter_factory`` fixture (or
  ``templiqx_openai_adapter_factory`` for an OpenAI-compatible HTTP adapter) and run ``pytest``;
* the command ``templiqx-conformance run package.module:factory [--transport openai] [--json]``
  (also ``templiqx conformance run ...``);
* the library: :func:`run_conformance` returns a :class:`ConformanceReport`;
  :func:`replay_scenarios` replays reference scenario manifests (``[scenarios]`` extra).
"""

from templiqx_conformance.probes import (
    KIT_COMPILER,
    STRUCTURED_SCHEMA,
    Probe,
    structured_interaction,
    text_interaction,
    without_fixture_output,
)
from templiqx_conformance.report import (
    REPORT_API_VERSION,
    CheckResult,
    CheckStatus,
    ConformanceReport,
    render_table,
)
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

__version__ = KIT_VERSION

__all__ = [
    "KIT_COMPILER",
    "KIT_VERSION",
    "REPORT_API_VERSION",
    "STRUCTURED_SCHEMA",
    "TRANSPORTS",
    "AdapterFactory",
    "AdapterTarget",
    "CheckResult",
    "CheckStatus",
    "ConformanceReport",
    "FailureCase",
    "Probe",
    "TargetError",
    "TransportAdapterFactory",
    "__version__",
    "check_names",
    "render_table",
    "replay_scenarios",
    "run_check",
    "run_conformance",
    "structured_interaction",
    "text_interaction",
    "without_fixture_output",
]
