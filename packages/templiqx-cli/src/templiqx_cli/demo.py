"""``templiqx demo``: the project's example package end to end, offline, with live streaming.

It validates the ``welcome`` package, compiles its ``onboarding-summary`` contract, then executes
it with ``--stream`` on the scripted mock runtime replaying ``scenarios/stream-vip``, paced so the
deltas visibly arrive one by one: on a terminal the structured answer is drawn growing in place,
as ``execute --stream`` draws it; elsewhere each event is a line. It needs no credentials and no
network.

The example package is the repository's ``fixtures/packages/welcome``, found from the working
directory upwards (or beside this source tree when it is installed from a clone). The demo runs
on a temporary copy, so the clone is never written to. The mock runtime is conformance-only and
not a dependency of the CLI: it is found through the ``templiqx.runtimes`` entry point when
``templiqx-mock`` is installed (it is in the workspace: ``uv run --frozen --all-packages``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from templiqx_cli.commands import GLOBAL_NOTE, global_options, resolve_globals
from templiqx_cli.composition import compose_service, runtime_names
from templiqx_cli.inputs import CliError, read_json
from templiqx_cli.output import dump_json, render_diagnostic, stream_operation

if TYPE_CHECKING:
    from templiqx_application import TempliqxService
    from templiqx_contracts import OperationEnvelope

__all__ = ["DEMO_PACKAGE", "demo_command", "find_demo_package"]

DEMO_PACKAGE = "welcome"
DEMO_CONTRACT = "onboarding-summary"
DEMO_SCENARIO = "scenarios/stream-vip/manifest.json"
DEMO_CAPABILITIES = ["structured_output"]
DEMO_RUNTIME = "mock"
FIXTURES = Path("fixtures") / "packages" / DEMO_PACKAGE
SCENARIO_ENV = "TEMPLIQX_MOCK_SCENARIO"
PACE_ENV = "TEMPLIQX_MOCK_PACE_MS"
DEFAULT_PACE_MS = 60

_MAIN_JOB = "python3 -m pip install uv && uv run --frozen --all-packages templiqx demo"


def find_demo_package(start: Path | None = None) -> Path | None:
    """The example package folder: from ``start`` (default: cwd) upwards, then this tree."""
    here = Path(__file__).resolve()
    origin = (start or Path.cwd()).resolve()
    for folder in [origin, *origin.parents, *here.parents]:
        candidate = folder / FIXTURES
        if (candidate / "templiqx.yaml").is_file():
            return candidate
    return None


def _require_setup() -> Path:
    package = find_demo_package()
    if package is None:
        raise CliError(
            f"demo: the example package {FIXTURES}/ was not found from {Path.cwd()} upwards; "
            f"run the demo from a clone of the templiqx repository: {_MAIN_JOB}"
        )
    if DEMO_RUNTIME not in runtime_names():
        raise CliError(
            "demo: the scripted mock runtime ('mock' in the templiqx.runtimes entry points) is "
            "not installed; install templiqx-mock beside templiqx-cli (pip install "
            f"templiqx-mock), or run from a clone: {_MAIN_JOB}"
        )
    return package


class _Narrator:
    """Progress lines for people (stdout); silent with ``--json``."""

    def __init__(self, *, quiet: bool) -> None:
        self._quiet = quiet

    def say(self, text: str = "") -> None:
        if not self._quiet:
            click.echo(text)


def _status(envelope: OperationEnvelope) -> str:
    if envelope.ok:
        return "ok"
    codes = ", ".join(d.code for d in envelope.diagnostics if d.severity == "error")
    return f"NOT OK ({codes})"


def _show_diagnostics(narrator: _Narrator, envelope: OperationEnvelope) -> None:
    for diagnostic in envelope.diagnostics:
        for line in render_diagnostic(diagnostic).splitlines():
            narrator.say(f"      {line}")


def _run(
    service: TempliqxService, values: dict[str, Any], as_json: bool, narrator: _Narrator
) -> tuple[dict[str, OperationEnvelope], bool]:
    envelopes: dict[str, OperationEnvelope] = {}
    validated = service.validate_package(DEMO_PACKAGE)
    envelopes["validate"] = validated
    narrator.say(f"1/3 validate {DEMO_PACKAGE}: {_status(validated)}")
    _show_diagnostics(narrator, validated)
    arguments: dict[str, Any] = {
        "package": DEMO_PACKAGE,
        "contract": DEMO_CONTRACT,
        "capabilities": list(DEMO_CAPABILITIES),
        **values,
    }
    compiled = service.invoke("compile_contract", arguments)
    envelopes["compile"] = compiled
    narrator.say(f"2/3 compile {DEMO_CONTRACT}: {_status(compiled)}")
    _show_diagnostics(narrator, compiled)
    if compiled.ok:
        narrator.say(
            f"    compiled_interaction fingerprint "
            f"{compiled.fingerprints.get('compiled_interaction', '-')}"
        )
    narrator.say(
        f"3/3 execute {DEMO_CONTRACT} --stream on the scripted mock runtime; "
        "the answer arrives on stderr as it is generated (on a terminal, the JSON object "
        "grows in place):"
    )
    executed, interrupted = stream_operation(
        service, "execute_contract", {**arguments, "stream": True}, as_json=as_json
    )
    envelopes["execute"] = executed
    deltas = sum(1 for event in executed.stream_events if type(event).__name__ == "Delta")
    narrator.say(f"    execute: {_status(executed)}, {deltas} deltas streamed")
    _show_diagnostics(narrator, executed)
    for name in ("request", "output"):
        if name in executed.fingerprints:
            narrator.say(f"    {name} fingerprint {executed.fingerprints[name]}")
    return envelopes, interrupted


def _demo(options: dict[str, Any], pace_ms: int | None) -> int:
    settings = resolve_globals(options)
    if settings.runtime_given and settings.runtime != DEMO_RUNTIME:
        raise click.UsageError(
            f"demo always runs on the scripted mock runtime ('{DEMO_RUNTIME}'), not "
            f"'{settings.runtime}'. To run a contract on another runtime, use execute: "
            f"templiqx --runtime {settings.runtime} --root DIR execute PACKAGE CONTRACT ..."
        )
    import shutil
    import tempfile

    source = _require_setup()
    narrator = _Narrator(quiet=settings.as_json)
    with tempfile.TemporaryDirectory(prefix="templiqx-demo-") as scratch:
        root = Path(scratch) / "packages"
        shutil.copytree(source, root / DEMO_PACKAGE)
        scenario = root / DEMO_PACKAGE / DEMO_SCENARIO
        manifest = read_json(str(scenario))
        values = read_json(str(scenario.parent / str(manifest.get("input", "request.json"))))
        os.environ[SCENARIO_ENV] = str(scenario)
        if pace_ms is not None:
            os.environ[PACE_ENV] = str(pace_ms)
        else:
            os.environ.setdefault(PACE_ENV, str(DEFAULT_PACE_MS))
        narrator.say(
            f"templiqx demo: the '{DEMO_PACKAGE}' example package end to end, offline "
            f"(a temporary copy of {source})"
        )
        service = compose_service(str(root), DEMO_RUNTIME)
        request = {key: values[key] for key in ("inputs", "context") if key in values}
        envelopes, interrupted = _run(service, request, settings.as_json, narrator)
    if settings.as_json:
        report = {step: envelope.to_builtins() for step, envelope in envelopes.items()}
        click.echo(dump_json(report, compact=True))
    else:
        narrator.say(
            "Next: copy fixtures/packages/welcome into a folder of your own, then try "
            "`templiqx --root <folder> explain welcome onboarding-summary` or "
            "`templiqx --root <folder> run-eval welcome account-digest quiet-week --capability "
            "text`; `templiqx --help` lists every command."
        )
    if interrupted:
        return 130
    return 0 if all(envelope.ok for envelope in envelopes.values()) else 2


def demo_command() -> click.Command:
    """The ``demo`` command."""

    def callback(pace_ms: int | None, **options: Any) -> int:
        return _demo(options, pace_ms)

    return click.Command(
        "demo",
        params=[
            click.Option(
                ["--pace-ms", "pace_ms"],
                type=click.IntRange(min=0),
                default=None,
                help=f"Milliseconds between streamed deltas (default {DEFAULT_PACE_MS}, "
                f"or ${PACE_ENV}).",
            ),
            *global_options(hidden=True),
        ],
        callback=callback,
        help=(
            "Run the example package end to end: validate, compile, and execute with live "
            "streaming on the scripted mock runtime. No credentials, no network; works on a "
            "temporary copy of fixtures/packages/welcome.\n\n"
            "With --json, stdout holds one JSON object with the three envelopes and stderr one "
            "JSON stream event per line. --runtime other than mock is refused: the demo's "
            "scenario is scripted for the mock.\n\n\b\nExample:\n  "
            + _MAIN_JOB
            + "\n\n"
            + GLOBAL_NOTE
        ),
        short_help="Run the example package end to end with live streaming (offline).",
    )
