"""What a batch produces: one :class:`BatchResult` per row, and a :class:`BatchSummary`.

A result is one line of a batch's JSONL output (``msgspec.json.encode(result)``). Its
``source`` says where the outcome came from:

* ``executed`` — the runtime was called for this row (``attempts`` times);
* ``duplicate`` — an earlier row of the run had the same request fingerprint, and its outcome
  is copied (the model is asked once per distinct request);
* ``cache`` — the opt-in result cache held the answer to this request from an earlier run;
* ``refused`` — the row never reached the runtime (invalid inputs, a contract that does not
  compile, a row the reader could not decode).

The summary is built as rows finish, in memory that does not grow with the dataset: counts,
and latencies in a fixed histogram whose quantiles are within 2% of the exact ones.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import msgspec

from templiqx_application.batch.scoring import pointer
from templiqx_contracts import Diagnostic, Usage

__all__ = [
    "BatchResult",
    "BatchSummary",
    "EvalOutcome",
    "EvalScore",
    "FieldScore",
    "LatencyHistogram",
    "LatencySummary",
    "RowDiagnostic",
    "Source",
    "SummaryBuilder",
    "TokenTotals",
]

Source = Literal["executed", "duplicate", "cache", "refused"]


class RowDiagnostic(msgspec.Struct, kw_only=True, frozen=True):
    """A diagnostic of a row's outcome: its stable code, its severity and its message."""

    code: str
    severity: str
    message: str

    @classmethod
    def of(cls, diagnostic: Diagnostic) -> RowDiagnostic:
        return cls(code=diagnostic.code, severity=diagnostic.severity, message=diagnostic.message)


class EvalOutcome(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """How an eval row scored: ``passed`` when the execution was ok and the output matched.

    ``matched`` is ``None`` when the row gave no ``expected``; ``fields`` names the expected
    object's top-level fields, compared one by one, and ``mismatched`` the JSON pointers of those
    that differ (``""``: the output as a whole); at most 256 of each.
    """

    passed: bool
    matched: bool | None = None
    fields: list[str] = msgspec.field(default_factory=list)
    mismatched: list[str] = msgspec.field(default_factory=list)


class BatchResult(msgspec.Struct, kw_only=True, frozen=True):
    """The outcome of one row (one line of the JSONL output; every field is always written,
    ``null`` when unknown, so each line has the same keys)."""

    index: int
    id: str | None = None
    contract: str | None = None
    request_fingerprint: str | None = None
    ok: bool
    output: Any = None
    diagnostics: list[RowDiagnostic] = msgspec.field(default_factory=list)
    usage: Usage | None = None
    latency_ms: float | None = None
    attempts: int = 0
    source: Source
    eval: EvalOutcome | None = None

    @property
    def error_code(self) -> str | None:
        """The code of the first error diagnostic (what a failed row is counted under)."""
        for diagnostic in self.diagnostics:
            if diagnostic.severity == "error":
                return diagnostic.code
        return None


class LatencySummary(msgspec.Struct, kw_only=True, frozen=True):
    """Latencies of the runtime calls, in milliseconds (``None`` without any call)."""

    p50: float | None
    p95: float | None
    max: float | None


class TokenTotals(msgspec.Struct, kw_only=True, frozen=True):
    """Tokens the run spent (rows the runtime was called for, as it reported them)."""

    prompt: int
    completion: int
    total: int


class FieldScore(msgspec.Struct, kw_only=True, frozen=True):
    """How often one expected field matched."""

    matched: int
    total: int


class EvalScore(msgspec.Struct, kw_only=True, frozen=True):
    """The score summary of an eval run."""

    cases: int
    passed: int
    failed: int
    pass_rate: float | None
    by_contract: dict[str, dict[str, int]]
    fields: dict[str, FieldScore]


class BatchSummary(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """Counts by outcome and code, latency quantiles and tokens of one batch run.

    ``ok`` is true when every row that ran is ok (for an eval run: every case passed) and the
    run was neither refused nor interrupted. ``rows`` counts the results in the output,
    ``skipped`` those a resumed run found already there (the counts cover both; ``calls``,
    ``elapsed_s`` and ``rows_per_s`` are this run's); ``by_code`` counts failed rows by their
    first error code.
    """

    ok: bool
    package: str
    contract: str | None
    runtime: str
    package_identity: str | None = None
    rows: int = 0
    succeeded: int = 0
    failed: int = 0
    skipped: int = 0
    by_source: dict[str, int] = msgspec.field(default_factory=dict)
    by_code: dict[str, int] = msgspec.field(default_factory=dict)
    calls: int = 0
    retries: int = 0
    rate_limited: int = 0
    latency_ms: LatencySummary | None = None
    tokens: TokenTotals | None = None
    elapsed_s: float = 0.0
    rows_per_s: float | None = None
    concurrency: dict[str, float] = msgspec.field(default_factory=dict)
    interrupted: bool = False
    diagnostics: list[RowDiagnostic] = msgspec.field(default_factory=list)
    score: EvalScore | None = None


class LatencyHistogram:
    """Latencies in logarithmic buckets 2% wide (1 µs to ~28 hours): fixed memory, quantiles
    within 2% of the exact value."""

    _RATIO = 1.02
    _BASE_MS = 0.001
    _BUCKETS = 1600

    def __init__(self) -> None:
        self._counts = [0] * self._BUCKETS
        self.count = 0
        self.max: float | None = None

    def add(self, value_ms: float) -> None:
        value = max(value_ms, self._BASE_MS)
        bucket = min(int(math.log(value / self._BASE_MS, self._RATIO)), self._BUCKETS - 1)
        self._counts[bucket] += 1
        self.count += 1
        self.max = value_ms if self.max is None else max(self.max, value_ms)

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (the upper edge of its bucket, never above the maximum)."""
        if self.count == 0 or self.max is None:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for bucket, count in enumerate(self._counts):
            seen += count
            if seen >= rank:
                edge = self._BASE_MS * self._RATIO ** (bucket + 1)
                return round(min(edge, self.max), 3)
        return round(self.max, 3)


class SummaryBuilder:
    """Accumulates results into a :class:`BatchSummary` (fixed memory)."""

    def __init__(self) -> None:
        self.rows = 0
        self.succeeded = 0
        self.failed = 0
        self.skipped = 0
        self.by_source: dict[str, int] = {}
        self.by_code: dict[str, int] = {}
        self.latency = LatencyHistogram()
        self.prompt = 0
        self.completion = 0
        self.total = 0
        self.tokens_known = False
        self.evaluated = False
        self.eval_passed = 0
        self.eval_failed = 0
        self.by_contract: dict[str, dict[str, int]] = {}
        self.fields: dict[str, list[int]] = {}

    def add(self, result: BatchResult) -> None:
        self.rows += 1
        self.by_source[result.source] = self.by_source.get(result.source, 0) + 1
        if result.ok:
            self.succeeded += 1
        else:
            self.failed += 1
            code = result.error_code or "(no code)"
            self.by_code[code] = self.by_code.get(code, 0) + 1
        if result.source == "executed":
            if result.latency_ms is not None:
                self.latency.add(result.latency_ms)
            if result.usage is not None:
                self.tokens_known = True
                self.prompt += result.usage.prompt_tokens
                self.completion += result.usage.completion_tokens
                self.total += result.usage.total_tokens
        if result.eval is not None:
            self._score(result)

    def _score(self, result: BatchResult) -> None:
        assert result.eval is not None
        self.evaluated = True
        if result.eval.fields:
            wrong = set(result.eval.mismatched)
            self.add_fields({name: pointer(name) not in wrong for name in result.eval.fields})
        outcome = "passed" if result.eval.passed else "failed"
        if result.eval.passed:
            self.eval_passed += 1
        else:
            self.eval_failed += 1
        contract = result.contract or ""
        counts = self.by_contract.setdefault(contract, {"passed": 0, "failed": 0})
        counts[outcome] += 1

    def add_fields(self, compared: dict[str, bool]) -> None:
        """Count one row's expected top-level fields (name -> matched)."""
        for name, matched in compared.items():
            if name not in self.fields and len(self.fields) >= 256:
                continue  # a bounded table: fields past the 256th are not scored one by one
            tally = self.fields.setdefault(name, [0, 0])
            tally[0] += 1 if matched else 0
            tally[1] += 1

    def score(self) -> EvalScore | None:
        if not self.evaluated:
            return None
        cases = self.eval_passed + self.eval_failed
        return EvalScore(
            cases=cases,
            passed=self.eval_passed,
            failed=self.eval_failed,
            pass_rate=round(self.eval_passed / cases, 6) if cases else None,
            by_contract=dict(sorted(self.by_contract.items())),
            fields={
                name: FieldScore(matched=tally[0], total=tally[1])
                for name, tally in sorted(self.fields.items())
            },
        )

    def latency_summary(self) -> LatencySummary | None:
        if self.latency.count == 0:
            return None
        return LatencySummary(
            p50=self.latency.quantile(0.5),
            p95=self.latency.quantile(0.95),
            max=None if self.latency.max is None else round(self.latency.max, 3),
        )

    def token_totals(self) -> TokenTotals | None:
        if not self.tokens_known:
            return None
        return TokenTotals(prompt=self.prompt, completion=self.completion, total=self.total)
