"""templiqx-mock: the scripted, deterministic runtime of the conformance suites.

* the scenario format ``templiqx.mock/v1alpha1`` (:class:`ScenarioManifest` and its parts,
  strict loading from JSON or YAML, :meth:`ScenarioManifest.validate`);
* scenario inventories (:func:`load_inventory`);
* :class:`ScriptedRuntime`, a :class:`templiqx_ports.RuntimeAdapter` that replays scripts and
  manifests without sleeping (virtual clock), streams deltas, honours cancellation, and
  computes ``output_schema_valid`` wherever the scenario does not script it;
* payload-free scenario and outcome fingerprints;
* :func:`create_runtime`, the ``mock`` entry point of ``templiqx.runtimes``;
* the size, nesting and alias limits every scenario file is read within.

Conformance only: no production composition depends on this distribution.
"""

from templiqx_mock.errors import (
    MockConfigurationError,
    ScenarioError,
    ScenarioIOError,
    ScenarioJSONError,
    ScenarioYAMLError,
)
from templiqx_mock.factory import (
    PACE_ENV,
    SCENARIO_ENV,
    create_runtime,
    load_expected_output,
    runtime_from_path,
)
from templiqx_mock.fingerprints import (
    envelope_outcome_fingerprint,
    failure_receipt_fingerprint,
    runtime_failure_fingerprint,
    scenario_fingerprint,
    success_receipt_fingerprint,
)
from templiqx_mock.inventory import (
    InventoryEntry,
    InventoryExpectation,
    InventoryScenario,
    LoadedInventory,
    ScenarioInventory,
    load_inventory,
)
from templiqx_mock.limits import (
    ALIAS_EXPANSION_FACTOR,
    MAX_EXPANDED_BYTES,
    MAX_NESTING_DEPTH,
    MAX_SCENARIO_BYTES,
)
from templiqx_mock.scenario import (
    COMPUTED,
    MOCK_API_VERSION,
    DocumentExpectation,
    EvidenceExpectation,
    ReceiptPayloadPolicy,
    RuntimeFailureSpec,
    ScenarioKind,
    ScenarioManifest,
    ScenarioStep,
    ScenarioStepKind,
    ScenarioStreamEvent,
    StreamDelta,
    StreamEnd,
    StreamFinish,
    StreamReasoning,
    StreamStart,
    StreamToolCall,
    StreamUsage,
    expected_output_schema_valid,
    load_scenario,
    read_json_file,
    validate_scenario,
)
from templiqx_mock.scripted import (
    ADAPTER_ID,
    ADAPTER_VERSION,
    CANCELLED_DETAIL,
    CAPABILITIES,
    RuntimeStats,
    ScriptedFailure,
    ScriptedRuntime,
    ScriptedScenario,
    ScriptedSuccess,
    VirtualClock,
)

__version__ = "0.2.0"

__all__ = [
    "ADAPTER_ID",
    "ALIAS_EXPANSION_FACTOR",
    "ADAPTER_VERSION",
    "CANCELLED_DETAIL",
    "CAPABILITIES",
    "COMPUTED",
    "MAX_EXPANDED_BYTES",
    "MAX_NESTING_DEPTH",
    "MAX_SCENARIO_BYTES",
    "MOCK_API_VERSION",
    "PACE_ENV",
    "SCENARIO_ENV",
    "DocumentExpectation",
    "EvidenceExpectation",
    "InventoryEntry",
    "InventoryExpectation",
    "InventoryScenario",
    "LoadedInventory",
    "MockConfigurationError",
    "ReceiptPayloadPolicy",
    "RuntimeFailureSpec",
    "RuntimeStats",
    "ScenarioError",
    "ScenarioIOError",
    "ScenarioInventory",
    "ScenarioJSONError",
    "ScenarioKind",
    "ScenarioManifest",
    "ScenarioStep",
    "ScenarioStepKind",
    "ScenarioStreamEvent",
    "ScenarioYAMLError",
    "ScriptedFailure",
    "ScriptedRuntime",
    "ScriptedScenario",
    "ScriptedSuccess",
    "StreamDelta",
    "StreamEnd",
    "StreamFinish",
    "StreamReasoning",
    "StreamStart",
    "StreamToolCall",
    "StreamUsage",
    "VirtualClock",
    "__version__",
    "create_runtime",
    "envelope_outcome_fingerprint",
    "expected_output_schema_valid",
    "failure_receipt_fingerprint",
    "load_expected_output",
    "load_inventory",
    "load_scenario",
    "read_json_file",
    "runtime_failure_fingerprint",
    "runtime_from_path",
    "scenario_fingerprint",
    "success_receipt_fingerprint",
    "validate_scenario",
]
