"""The scenario manifest format ``templiqx.mock/v1alpha1``: types, loading and validation.

A manifest scripts one deterministic runtime execution, either as *steps* (request received,
virtual delays, then exactly one success or failure) or as a *stream* of events (start, text
deltas, reasoning, tool-call fragments, usage, end, finish). Every object rejects unknown
fields. Expectations (diagnostics, evidence, documents) are payload-free and only fingerprinted.

Reading is strict in two stages: the document must have the manifest's shape
(:class:`~templiqx_mock.errors.ScenarioJSONError` / :class:`~templiqx_mock.errors.ScenarioYAMLError`
otherwise), then :meth:`ScenarioManifest.validate` checks the lifecycle rules and raises
:class:`~templiqx_mock.errors.ScenarioError` with the reference's exact message.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeAlias

import msgspec

from templiqx_contracts import JSONDecodeError, decode_json
from templiqx_mock.errors import (
    ScenarioError,
    ScenarioIOError,
    ScenarioJSONError,
    ScenarioYAMLError,
)
from templiqx_mock.limits import (
    TOO_DEEP,
    document_size,
    nesting_problem,
    size_problem,
)
from templiqx_mock.tool_calls import StreamToolCall, check_tool_calls
from templiqx_mock.yaml_reader import YAMLReadError, read_yaml
from templiqx_ports import RuntimeFailureCode

__all__ = [
    "COMPUTED",
    "MOCK_API_VERSION",
    "DocumentExpectation",
    "EvidenceExpectation",
    "ReceiptPayloadPolicy",
    "RuntimeFailureSpec",
    "ScenarioKind",
    "ScenarioManifest",
    "ScenarioStep",
    "ScenarioStepKind",
    "ScenarioStreamEvent",
    "StreamDelta",
    "StreamEnd",
    "StreamFinish",
    "StreamReasoning",
    "StreamStart",
    "StreamToolCall",
    "StreamUsage",
    "expected_output_schema_valid",
    "load_scenario",
    "decode_json_document",
    "read_json_file",
    "read_scenario_file",
    "validate_scenario",
]

MOCK_API_VERSION = "templiqx.mock/v1alpha1"
"""The only ``api_version`` a manifest or an inventory may declare."""

COMPUTED: Final = "computed"
""":func:`expected_output_schema_valid` of a success that leaves its validity to the runtime."""

U64 = Annotated[int, msgspec.Meta(ge=0)]  # values above 2**64-1 never decode as integers
U32 = Annotated[int, msgspec.Meta(ge=0, le=(1 << 32) - 1)]


class ScenarioKind(StrEnum):
    """What a scenario exercises. Descriptive only (it is fingerprinted, it changes nothing)."""

    HAPPY_PATH = "happy_path"
    AMBIGUOUS = "ambiguous"
    MISSING = "missing"
    INVALID = "invalid"
    DRAFTING = "drafting"
    FAILURE = "failure"
    DOCUMENT_WARNING = "document_warning"


class ReceiptPayloadPolicy(StrEnum):
    """What the envelope of the scenario's execution must (not) carry; checked by harnesses."""

    FINGERPRINTS_ONLY = "fingerprints_only"
    NO_SUCCESSFUL_RECEIPT = "no_successful_receipt"


class ScenarioStepKind(StrEnum):
    """The lifecycle step kinds."""

    REQUEST_RECEIVED = "request_received"
    DELAY = "delay"
    RUNTIME_SUCCESS = "runtime_success"
    RUNTIME_FAILURE = "runtime_failure"


class _Strict(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every manifest object: keyword-only, unknown fields rejected."""


class RuntimeFailureSpec(_Strict):
    """The failure a ``runtime_failure`` step raises.

    ``code`` is one of the stable runtime failure codes (the reference's six, plus
    ``TQX_RUNTIME_CANCELLED`` which this port adds).
    """

    code: RuntimeFailureCode
    detail: str
    retry_after_ms: U64 | None = None


class ScenarioStep(_Strict):
    """One lifecycle step. ``output`` and ``output_schema_valid`` set to JSON null mean absent.

    A ``runtime_success`` without ``output_schema_valid`` reports the validity computed against
    the request's output schema (the reference reported ``true``). Fields that do not apply to a
    kind are accepted and ignored, except ``failure`` on ``runtime_success``, which validation
    rejects.
    """

    id: str
    kind: ScenarioStepKind
    delay_ms: U64 | None = None
    output: Any = None
    output_schema_valid: bool | None = None
    failure: RuntimeFailureSpec | None = None


class _StreamEventBase(_Strict, tag_field="kind"):
    """Base of the fixture stream events (tagged by lowercase ``kind``)."""

    @property
    def kind(self) -> str:
        """The tag: ``start``, ``delta``, ``reasoning``, ``usage``, ``end`` or ``finish``."""
        return str(type(self).__struct_config__.tag)


class StreamStart(_StreamEventBase, tag="start"):
    """Opens the stream; must come first."""

    id: str


class StreamDelta(_StreamEventBase, tag="delta"):
    """A fragment of output text; streamed as a ``Delta`` event."""

    id: str
    text: str


class StreamReasoning(_StreamEventBase, tag="reasoning"):
    """A fragment of reasoning text; aggregated into the synthesized output, never streamed."""

    id: str
    text: str


class StreamUsage(_StreamEventBase, tag="usage"):
    """Token counts; summed into the synthesized output."""

    id: str
    input_tokens: U64
    output_tokens: U64


class StreamEnd(_StreamEventBase, tag="end"):
    """Closes the stream of fragments."""

    id: str


class StreamFinish(_StreamEventBase, tag="finish"):
    """Ends the scenario.

    ``output_schema_valid`` is ``UNSET`` when omitted: the runtime then computes it against the
    request's output schema (the reference defaulted it to false). JSON null is an error.
    """

    id: str
    output: Any = None
    output_schema_valid: bool | msgspec.UnsetType = msgspec.UNSET


ScenarioStreamEvent: TypeAlias = (
    StreamStart
    | StreamDelta
    | StreamReasoning
    | StreamToolCall
    | StreamUsage
    | StreamEnd
    | StreamFinish
)


class EvidenceExpectation(_Strict):
    """A grounding quote the scenario expects, by document, fragment and quote SHA-256."""

    document_id: str
    fragment_id: str
    quote_sha256: str


class DocumentExpectation(_Strict):
    """The document outcome the scenario expects (only fingerprinted)."""

    status: str = ""
    unresolved_references: U32 = 0


class ScenarioManifest(_Strict):
    """One scripted scenario. Exactly one of a non-empty ``steps`` list or ``events`` is used.

    ``input`` and ``expected_output`` are paths relative to the manifest's folder.
    """

    api_version: str
    id: str
    contract: str
    kind: ScenarioKind
    receipt_payload_policy: ReceiptPayloadPolicy
    input: str | None = None
    expected_output: str | None = None
    expected_output_fingerprint: str | None = None
    expected_diagnostics: list[str] = msgspec.field(default_factory=list)
    expected_status: str = ""
    expected_failure: str | None = None
    steps: list[ScenarioStep] = msgspec.field(default_factory=list)
    events: list[ScenarioStreamEvent] | None = None
    evidence: list[EvidenceExpectation] = msgspec.field(default_factory=list)
    document_expectation: DocumentExpectation = msgspec.field(default_factory=DocumentExpectation)
    golden_receipt_fingerprint: str | None = None

    @classmethod
    def from_json(cls, data: bytes | str) -> ScenarioManifest:
        """Decode and validate a JSON manifest."""
        try:
            plain = decode_json_document(data)
        except JSONDecodeError as exc:
            raise ScenarioJSONError(str(exc)) from exc
        return _convert(plain, ScenarioJSONError)

    @classmethod
    def from_yaml(cls, data: bytes | str) -> ScenarioManifest:
        """Decode and validate a YAML manifest (YAML 1.2 core-schema typing)."""
        try:
            plain = read_yaml(data)
        except YAMLReadError as exc:
            raise ScenarioYAMLError(str(exc)) from exc
        return _convert(plain, ScenarioYAMLError)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ScenarioManifest:
        """Read a manifest file: YAML for ``.yaml`` / ``.yml``, JSON otherwise."""
        data = read_scenario_file(Path(path))
        if Path(path).suffix.lower() in (".yaml", ".yml"):
            return cls.from_yaml(data)
        return cls.from_json(data)

    def validate(self) -> None:
        """Check every lifecycle rule; raise :class:`ScenarioError` naming the first broken one."""
        validate_scenario(self)

    def is_stream(self) -> bool:
        """Whether the scenario is scripted as stream events rather than steps."""
        return self.events is not None


def load_scenario(path: str | os.PathLike[str]) -> ScenarioManifest:
    """Read and validate a manifest file (see :meth:`ScenarioManifest.load`)."""
    return ScenarioManifest.load(path)


def read_scenario_file(path: Path) -> bytes:
    """The bytes of a scenario file; a file over ``MAX_SCENARIO_BYTES`` is refused unread."""
    if "\x00" in str(path):
        raise ScenarioError(f"{str(path)!r}: a file path must not contain NUL")
    try:
        with path.open("rb") as handle:
            problem = size_problem(os.fstat(handle.fileno()).st_size)
            if problem is not None:
                raise ScenarioError(f"{path}: {problem}")
            return handle.read()
    except OSError as exc:
        raise ScenarioIOError(str(path), exc.strerror or str(exc)) from exc


def decode_json_document(data: bytes | str) -> Any:
    """Decode a JSON scenario document within the size and nesting limits.

    Raises :class:`~templiqx_contracts.JSONDecodeError` naming the limit that was exceeded.
    """
    problem = size_problem(document_size(data))
    if problem is not None:
        raise JSONDecodeError(problem)
    try:
        value = decode_json(data)
    except JSONDecodeError as exc:
        if "nested too deeply" in str(exc):  # the decoder's recursion ran out first
            raise JSONDecodeError(TOO_DEEP) from None
        raise
    problem = nesting_problem(value)
    if problem is not None:
        raise JSONDecodeError(problem)
    return value


def read_json_file(path: str | os.PathLike[str]) -> Any:
    """Read a JSON document (e.g. a manifest's ``expected_output``) with the reference's rules."""
    data = read_scenario_file(Path(path))
    try:
        return decode_json_document(data)
    except JSONDecodeError as exc:
        raise ScenarioJSONError(f"{path}: {exc}") from exc


def _convert(
    plain: Any, error: type[ScenarioJSONError] | type[ScenarioYAMLError]
) -> ScenarioManifest:
    try:
        manifest = msgspec.convert(plain, ScenarioManifest, strict=True)
    except msgspec.ValidationError as exc:
        raise error(str(exc)) from exc
    manifest.validate()
    return manifest


# --- validation -------------------------------------------------------------------------------


def validate_scenario(manifest: ScenarioManifest) -> None:
    """Check a manifest's rules in the reference's order; raise :class:`ScenarioError`."""
    if manifest.api_version != MOCK_API_VERSION:
        raise ScenarioError(f"unsupported mock api_version '{manifest.api_version}'")
    if not manifest.id.strip() or not manifest.contract.strip():
        raise ScenarioError("scenario id and contract must be non-empty")
    has_steps = bool(manifest.steps)
    has_events = manifest.events is not None
    if has_steps == has_events:
        raise ScenarioError("scenario must contain exactly one non-empty steps or events sequence")
    if manifest.events is not None:
        _validate_stream(manifest.events)
        return
    _validate_steps(manifest.steps)


def _validate_steps(steps: list[ScenarioStep]) -> None:
    seen: set[str] = set()
    received = False
    terminal = False
    for index, step in enumerate(steps):
        if not step.id.strip():
            raise ScenarioError("step id must be non-empty")
        if step.id in seen:
            raise ScenarioError(f"duplicate event id '{step.id}'")
        seen.add(step.id)
        if terminal:
            raise ScenarioError(f"step '{step.id}' appears after terminal runtime step")
        kind = step.kind
        if kind is ScenarioStepKind.REQUEST_RECEIVED:
            if index != 0:
                raise ScenarioError("request_received must be the first step")
            received = True
        elif kind is ScenarioStepKind.DELAY:
            if not received:
                raise ScenarioError("delay cannot occur before request_received")
            if not step.delay_ms:
                raise ScenarioError(f"delay step '{step.id}' must set delay_ms > 0")
        elif kind is ScenarioStepKind.RUNTIME_SUCCESS:
            if not received:
                raise ScenarioError("runtime_success cannot occur before request_received")
            if step.failure is not None:
                raise ScenarioError(f"runtime_success step '{step.id}' cannot include failure")
            terminal = True
        else:
            if not received:
                raise ScenarioError("runtime_failure cannot occur before request_received")
            if step.failure is None:
                raise ScenarioError(f"runtime_failure step '{step.id}' must include failure")
            terminal = True
    if not terminal:
        raise ScenarioError("scenario must end in runtime_success or runtime_failure")


def _validate_stream(events: list[ScenarioStreamEvent]) -> None:
    if not events:
        raise ScenarioError("stream event sequence cannot be empty")
    seen: set[str] = set()
    started = ended = finished = False
    for event in events:
        if not event.id.strip():
            raise ScenarioError("stream event id must be non-empty")
        if event.id in seen:
            raise ScenarioError(f"duplicate event id '{event.id}'")
        seen.add(event.id)
        if isinstance(event, StreamStart):
            if started or ended:
                raise ScenarioError("stream start must be first and unique")
            started = True
        elif isinstance(event, (StreamDelta, StreamReasoning)):
            if not started or ended or event.text == "":
                raise ScenarioError(
                    "delta/reasoning requires a started, non-empty stream before end"
                )
        elif isinstance(event, StreamToolCall):
            if not started or ended:
                raise ScenarioError("tool_call requires a started stream before end")
        elif isinstance(event, StreamUsage):
            if not started or ended or finished:
                raise ScenarioError("usage requires an active stream")
        elif isinstance(event, StreamEnd):
            if not started or ended or finished:
                raise ScenarioError("end requires an active stream")
            ended = True
        else:
            if not started or not ended or finished:
                raise ScenarioError("finish requires start followed by end")
            finished = True
    if not (started and ended and finished):
        raise ScenarioError("stream must contain start, end and finish")
    check_tool_calls(events)


def expected_output_schema_valid(manifest: ScenarioManifest) -> bool | Literal["computed"] | None:
    """The output validity the scenario produces, as far as the manifest alone decides it.

    The first ``runtime_success`` step's flag, otherwise the first ``finish`` event's flag;
    :data:`COMPUTED` when that success omits it (the runtime checks the output against the
    request's schema, which the manifest does not hold); ``None`` when the scenario fails before
    any output.
    """
    for step in manifest.steps:
        if step.kind is ScenarioStepKind.RUNTIME_SUCCESS:
            return COMPUTED if step.output_schema_valid is None else step.output_schema_valid
    for event in manifest.events or []:
        if isinstance(event, StreamFinish):
            flag = event.output_schema_valid
            return COMPUTED if isinstance(flag, msgspec.UnsetType) else flag
    return None
