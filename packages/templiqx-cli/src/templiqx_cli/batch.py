"""``templiqx batch``, and ``--dataset`` on ``test`` and ``run-eval``: runs over datasets.

``templiqx batch PACKAGE CONTRACT --input FILE --output FILE`` runs the contract once per row
(:func:`templiqx_local.batch.run_batch_files`): results are appended to the output as rows
finish, progress goes to stderr (a bar on a terminal, plain lines otherwise), and at the end the
summary goes to stdout (for people, or as JSON with ``--json``) and to ``OUTPUT.summary.json``.

``templiqx test PACKAGE --dataset FILE`` and ``templiqx run-eval PACKAGE CONTRACT --dataset
FILE`` score a dataset of cases on the deterministic fake (DECISIONS 14) with the same engine.

Ctrl-C stops cleanly: no new rows start, the calls in flight are cancelled, every finished row
is in the output, and the run is finished later with ``--resume``. A second Ctrl-C leaves at
once (the output is still consistent: each line is written whole).

Exit status: 0 when every row is ok, 2 when a row failed (or a case did not pass), the run was
refused, or on a usage error (an output that exists without --resume/--overwrite, a resume that
does not match, a bad mapping), 1 when a file cannot be read or written, 130 after Ctrl-C.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from templiqx_cli.commands import GLOBAL_NOTE, Globals, global_options, resolve_globals
from templiqx_cli.composition import compose_service
from templiqx_cli.inputs import CliError
from templiqx_cli.progress import MODES, Progress

if TYPE_CHECKING:
    from templiqx_application.batch import BatchSummary
    from templiqx_local.batch import BatchFiles, BatchOutcome

__all__ = ["batch_command", "with_dataset"]

EXIT_INTERRUPTED = 130

USAGE_CODES = frozenset(
    {
        "TQX_BATCH_OUTPUT_EXISTS",
        "TQX_BATCH_RESUME_MISMATCH",
        "TQX_BATCH_MAPPING_INVALID",
        "TQX_BATCH_OPTION_INVALID",
    }
)
"""File-layer codes that mean the command line asked for something it cannot have (exit 2)."""

_BATCH_HELP = """Run a contract once per row of a dataset (JSONL, CSV or Parquet).

\b
Arguments:
  PACKAGE   The package.
  CONTRACT  The contract to run for every row.

\b
Examples:
  {example}
  {example} --resume

(The example rows carry the "output" the offline fake runtime answers with. With a model:
templiqx --runtime openai --root DIR batch PACKAGE CONTRACT --input tickets.csv --output
labels.jsonl --concurrency 32 --rpm 3000 --cache answers.db.)

Results are appended to --output as rows finish, one JSON object per line: index, id, contract,
request_fingerprint, ok, output, diagnostics (code, severity, message), usage, latency_ms,
attempts and source (executed, duplicate, cache or refused). Rows whose requests are identical
are executed once. A summary (counts by outcome and code, latency p50/p95, tokens) goes to
stdout and to OUTPUT.summary.json.

Rows: a JSONL line with an "inputs" object is a row as it stands (inputs, context, id, output,
expected); any other line, CSV record or Parquet row is flat: the id column is the row's id and
every other column an input of the same name. --map COLUMN=TARGET[:TYPE] says otherwise for one
column: TARGET is inputs.NAME, context.NAME, id, contract, output, expected or - (drop), TYPE
str, int, float, bool or json (CSV cells are text: --map seats=inputs.seats:int).

Pacing: at most --concurrency calls at once; rate-limited answers halve it and successes add it
back (AIMD), a retry-after hint pauses new calls; --rpm/--tpm cap requests and tokens per
minute; timeouts, rate limits and unavailability are retried up to --max-attempts times with
back-off; every other failure is recorded once, never retried.

Resuming: an existing output is never overwritten unless --overwrite is given; --resume
finishes a run that stopped (Ctrl-C, a crash, kill -9) without running a finished row again.
--cache FILE keeps the runtime's answers across runs, so after an edit only the rows whose
requests changed are executed."""

_BATCH_HELP = _BATCH_HELP.format(
    example="templiqx --root fixtures/packages batch welcome account-digest "
    "--input fixtures/datasets/accounts.jsonl --output digests.jsonl"
)

_DATASET_NOTE = (
    "With --dataset FILE, score a dataset of cases instead (JSONL, CSV or Parquet; each case "
    "has inputs, context, the output the deterministic fake answers with, and optionally the "
    "expected output; {rows}). --output FILE also writes one scored result per case, "
    "resumably. The score summary (pass rate, by contract, per expected field) goes to stdout."
)


# --- shared pieces ------------------------------------------------------------------------


def _file_options(*, output_required: bool) -> list[click.Parameter]:
    return [
        click.Option(
            ["--output", "output"],
            metavar="FILE",
            required=output_required,
            help="Where the results go (JSONL; Parquet when it ends in .parquet or with "
            "--output-format parquet).",
        ),
        click.Option(
            ["--input-format", "input_format"],
            type=click.Choice(["jsonl", "csv", "parquet"]),
            default=None,
            help="The dataset's format (default: from its extension).",
        ),
        click.Option(
            ["--map", "mapping"],
            multiple=True,
            metavar="COLUMN=TARGET[:TYPE]",
            help="Where a column goes (repeatable); see above.",
        ),
        click.Option(
            ["--resume", "resume"],
            is_flag=True,
            default=False,
            help="Finish the run that wrote --output (same package, contract, input, mapping).",
        ),
        click.Option(
            ["--overwrite", "overwrite"],
            is_flag=True,
            default=False,
            help="Start --output again, discarding its results.",
        ),
        click.Option(
            ["--summary", "summary"],
            metavar="FILE",
            default=None,
            help="Where the JSON summary goes (default: OUTPUT.summary.json).",
        ),
        click.Option(
            ["--progress", "progress"],
            type=click.Choice(MODES),
            default="auto",
            show_default=True,
            help="A bar on a terminal, plain lines otherwise (auto), or none.",
        ),
        click.Option(
            ["--progress-interval", "progress_interval"],
            type=click.FloatRange(min=0.0),
            default=5.0,
            show_default=True,
            metavar="SECONDS",
            help="Seconds between plain progress lines.",
        ),
    ]


class _Interrupts:
    """Ctrl-C: the first press asks the run to stop, the second leaves at once."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.pressed = 0

    def handler(self, signum: int, frame: FrameType | None) -> None:
        self.pressed += 1
        self.cancel.set()
        if self.pressed > 1:
            raise KeyboardInterrupt


def _run_files(
    settings: Globals, files: BatchFiles, progress: Progress
) -> tuple[BatchOutcome, bool]:
    import signal

    from templiqx_local.batch import BatchFileError, run_batch_files

    service = compose_service(settings.root, "fake" if files.options.evaluate else settings.runtime)
    interrupts = _Interrupts()
    own = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    previous = signal.signal(signal.SIGINT, interrupts.handler) if own else None
    try:
        outcome = run_batch_files(
            service,
            files,
            on_start=progress.start,
            on_result=progress.update,
            cancel=interrupts.cancel,
        )
    except BatchFileError as exc:
        error = CliError(str(exc), code=exc.code, help=exc.help)
        if exc.code in USAGE_CODES:
            raise click.UsageError(error.render().removeprefix("templiqx: ")) from None
        raise error from None
    finally:
        if own:
            signal.signal(signal.SIGINT, previous)
        service.close()
    progress.finish()
    return outcome, interrupts.pressed > 0 or outcome.summary.interrupted


def _human_summary(outcome: BatchOutcome, command: str, label: str = "batch") -> str:
    summary = outcome.summary
    lines: list[str] = []
    target = summary.package + (f"/{summary.contract}" if summary.contract else "")
    if summary.diagnostics:
        lines.append(f"✗ {label} {target}: refused")
        for diagnostic in summary.diagnostics:
            lines.append(f"  {diagnostic.code}: {diagnostic.message}")
        return "\n".join(lines)
    mark = "✓" if summary.ok else "✗"
    head = f"{mark} {label} {target}: {summary.rows} rows, {summary.succeeded} ok"
    if summary.failed:
        head += f", {summary.failed} failed"
    if summary.skipped:
        head += f" ({summary.skipped} already done)"
    lines.append(head)
    elapsed = f"  elapsed: {summary.elapsed_s:.1f} s"
    if summary.rows_per_s:
        elapsed += f", {summary.rows_per_s:.1f} rows/s"
    lines.append(elapsed)
    if summary.by_source:
        sources = ", ".join(f"{name} {count}" for name, count in summary.by_source.items())
        lines.append(f"  sources: {sources}")
    if summary.by_code:
        codes = ", ".join(f"{code} {count}" for code, count in summary.by_code.items())
        lines.append(f"  failed by code: {codes}")
    if summary.latency_ms is not None:
        latency = summary.latency_ms
        lines.append(f"  latency: p50 {latency.p50} ms, p95 {latency.p95} ms, max {latency.max} ms")
    if summary.tokens is not None:
        tokens = summary.tokens
        lines.append(
            f"  tokens: {tokens.total} ({tokens.prompt} prompt + {tokens.completion} completion)"
        )
    if summary.calls:
        concurrency = summary.concurrency
        line = f"  calls: {summary.calls} (retries {summary.retries}"
        line += f", rate limited {summary.rate_limited})"
        if concurrency.get("decreases"):
            line += (
                f"; concurrency {int(concurrency['ceiling'])}, lowest "
                f"{concurrency.get('lowest', 0):g}, now {concurrency.get('final', 0):g}"
            )
        lines.append(line)
    if summary.score is not None:
        score = summary.score
        rate = "-" if score.pass_rate is None else f"{100 * score.pass_rate:.1f}%"
        lines.append(f"  score: {score.passed}/{score.cases} passed ({rate})")
        for contract, counts in score.by_contract.items():
            lines.append(f"    {contract}: {counts['passed']} passed, {counts['failed']} failed")
        for name, field in score.fields.items():
            lines.append(f"    field {name}: {field.matched}/{field.total} matched")
    lines.append(f"  output: {outcome.paths.output}; summary: {outcome.paths.summary}")
    if summary.interrupted:
        lines.append(
            f"  interrupted: the output holds every finished row; finish it with: {command} "
            "--resume"
        )
    return "\n".join(lines)


def _finish(outcome: BatchOutcome, interrupted: bool, settings: Globals, command: str) -> int:
    if settings.as_json:
        from templiqx_cli.output import dump_json

        click.echo(dump_json(outcome.report(), compact=True))
    else:
        click.echo(_human_summary(outcome, command))
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if outcome.summary.ok else 2


def _command_line(argv: list[str]) -> str:
    """The command as typed, for the resume hint (without a --resume/--overwrite given)."""
    import shlex

    kept = [word for word in argv if word not in ("--resume", "--overwrite")]
    return "templiqx " + shlex.join(kept)


# --- templiqx batch -----------------------------------------------------------------------


def _batch(values: dict[str, Any]) -> int:
    from templiqx_application.batch import BatchOptions, RetryPolicy
    from templiqx_local.batch import BatchFiles

    settings = resolve_globals(values)
    options = BatchOptions(
        concurrency=values["concurrency"],
        retry=RetryPolicy(max_attempts=values["max_attempts"]),
        requests_per_minute=values["rpm"],
        tokens_per_minute=values["tpm"],
        capabilities=tuple(values["capabilities"]) if values["capabilities"] else None,
        package_identity=values["package_identity"],
    )
    files = BatchFiles(
        package=values["package"],
        contract=values["contract"],
        input=values["input"],
        output=values["output"],
        input_format=values["input_format"],
        output_format=values["output_format"],
        mapping=list(values["mapping"]),
        resume=values["resume"],
        overwrite=values["overwrite"],
        cache=values["cache"],
        summary=values["summary"],
        options=options,
    )
    if files.resume and files.overwrite:
        raise click.UsageError("--resume and --overwrite contradict each other; pass one")
    progress = Progress(sys.stderr, values["progress"], interval=values["progress_interval"])
    outcome, interrupted = _run_files(settings, files, progress)
    return _finish(outcome, interrupted, settings, _command_line(sys.argv[1:]))


def batch_command() -> click.Command:
    """The ``batch`` command."""

    def callback(**values: Any) -> int:
        return _batch(values)

    params: list[click.Parameter] = [
        click.Argument(["package"], metavar="PACKAGE"),
        click.Argument(["contract"], metavar="CONTRACT"),
        click.Option(
            ["--input", "input"], metavar="FILE", required=True, help="The dataset to run."
        ),
        *_file_options(output_required=True),
        click.Option(
            ["--output-format", "output_format"],
            type=click.Choice(["jsonl", "parquet"]),
            default=None,
            help="jsonl or parquet (default: from --output's extension).",
        ),
        click.Option(
            ["--concurrency", "concurrency"],
            type=click.IntRange(1, 1024),
            default=16,
            show_default=True,
            help="Calls at once at most (rate limits lower it for a while).",
        ),
        click.Option(
            ["--rpm", "--requests-per-minute", "rpm"],
            type=click.FloatRange(min=0.0, min_open=True),
            default=None,
            metavar="N",
            help="Requests per minute at most.",
        ),
        click.Option(
            ["--tpm", "--tokens-per-minute", "tpm"],
            type=click.FloatRange(min=0.0, min_open=True),
            default=None,
            metavar="N",
            help="Tokens per minute at most (estimated before a call, settled after it).",
        ),
        click.Option(
            ["--max-attempts", "max_attempts"],
            type=click.IntRange(1, 100),
            default=4,
            show_default=True,
            help="Calls per row at most when it fails transiently (1: never retry).",
        ),
        click.Option(
            ["--capability", "capabilities"],
            multiple=True,
            metavar="VALUE",
            help="Capabilities offered (default: the runtime's). Repeat for several values.",
        ),
        click.Option(
            ["--cache", "cache"],
            metavar="FILE",
            default=None,
            help="Keep the runtime's answers in FILE (SQLite) and reuse them by request.",
        ),
        click.Option(
            ["--package-identity", "package_identity"],
            metavar="FINGERPRINT",
            default=None,
            help="Refuse to run unless the package's identity fingerprint is this one.",
        ),
        *global_options(hidden=True),
    ]
    return click.Command(
        "batch",
        params=params,
        callback=callback,
        help=_BATCH_HELP + "\n\n" + GLOBAL_NOTE,
        short_help="Run a contract over a dataset (JSONL, CSV, Parquet), resumably.",
        context_settings={"max_content_width": 100},
    )


# --- --dataset on test and run-eval --------------------------------------------------------


def with_dataset(command: click.Command, *, contract_positional: str | None) -> click.Command:
    """``command`` (``test`` or ``run-eval``) with ``--dataset FILE`` and its options.

    ``contract_positional`` is the destination of the contract argument (``run-eval``), whose
    last positional (the fixture id) becomes optional: a dataset replaces it.
    """
    original: Callable[..., Any] | None = command.callback
    assert original is not None
    extra = [
        click.Option(
            ["--dataset", "dataset"],
            metavar="FILE",
            default=None,
            help="Score a dataset of cases instead (see below).",
        ),
        *_file_options(output_required=False),
    ]
    names = {str(param.name) for param in extra}
    defaults = {str(param.name): param.default for param in extra}
    fixture = None
    if contract_positional is not None:
        fixture = next(
            p
            for p in command.params
            if isinstance(p, click.Argument) and p.name == "arg_fixture_id"
        )
        fixture.required = False
    rows = (
        "every case runs the contract named on the command line"
        if contract_positional is not None
        else "each case names its contract in a 'contract' column"
    )
    command.params[-3:-3] = extra  # before the hidden global options
    command.help = (command.help or "").replace(
        GLOBAL_NOTE, _DATASET_NOTE.format(rows=rows) + "\n\n" + GLOBAL_NOTE
    )

    def callback(**values: Any) -> Any:
        dataset = values.get("dataset")
        given = {name: values.pop(name, None) for name in names}
        if dataset is None:
            used = [
                f"--{name.replace('_', '-')}"
                for name in names
                if given.get(name) not in (defaults.get(name), None, (), False)
            ]
            if used:
                raise click.UsageError(f"{', '.join(sorted(used))} go with --dataset")
            if fixture is not None and values.get("arg_fixture_id") is None:
                raise click.UsageError("Missing argument 'FIXTURE_ID' (or give --dataset FILE).")
            return original(**values)
        if fixture is not None and values.get("arg_fixture_id") is not None:
            raise click.UsageError("give FIXTURE_ID or --dataset, not both")
        contract = values.get(contract_positional) if contract_positional else None
        return _dataset(values, given, contract)

    command.callback = callback
    return command


def _dataset(values: dict[str, Any], given: dict[str, Any], contract: str | None) -> int:
    import tempfile
    from pathlib import Path

    from templiqx_application.batch import BatchOptions
    from templiqx_local.batch import BatchFiles

    settings = resolve_globals(values)
    if given["resume"] and given["overwrite"]:
        raise click.UsageError("--resume and --overwrite contradict each other; pass one")
    capabilities = values.get("arg_capabilities") or ()
    options = BatchOptions(
        evaluate=True, capabilities=tuple(capabilities) if capabilities else None
    )
    progress = Progress(
        sys.stderr, given["progress"], interval=given["progress_interval"], label="templiqx test"
    )
    with tempfile.TemporaryDirectory(prefix="templiqx-eval-") as scratch:
        output = given["output"]
        if output is None:
            if given["resume"] or given["overwrite"] or given["summary"]:
                raise click.UsageError("--resume, --overwrite and --summary go with --output")
            output = str(Path(scratch) / "results.jsonl")
        files = BatchFiles(
            package=values["arg_package"],
            contract=contract,
            input=given["dataset"],
            output=output,
            input_format=given["input_format"],
            mapping=list(given["mapping"]),
            resume=given["resume"],
            overwrite=given["overwrite"],
            summary=given["summary"],
            options=options,
        )
        outcome, interrupted = _run_files(settings, files, progress)
        if given["output"] is None:
            return _finish_scored(outcome, interrupted, settings)
        return _finish(outcome, interrupted, settings, _command_line(sys.argv[1:]))


def _finish_scored(outcome: BatchOutcome, interrupted: bool, settings: Globals) -> int:
    """The summary of a dataset eval without --output (no files to name)."""
    summary: BatchSummary = outcome.summary
    if settings.as_json:
        report = outcome.report()
        for name in ("output", "journal"):
            report.pop(name, None)
        from templiqx_cli.output import dump_json

        click.echo(dump_json(report, compact=True))
    else:
        text = _human_summary(outcome, "", "test")
        click.echo("\n".join(line for line in text.split("\n") if not line.startswith("  output:")))
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if summary.ok else 2
