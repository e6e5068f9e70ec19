"""``templiqx demo``: the example package end to end, offline, with live streaming.

It validates the ``welcome`` package, compiles its ``onboarding-summary`` contract, then executes
it with ``--stream`` on the scripted mock runtime replaying ``scenarios/stream-vip``, paced so the
deltas visibly arrive one by one: on a terminal the structured answer is drawn growing in place,
as ``execute --stream`` draws it; elsewhere each event is a line. It needs no credentials and no
network.

The example package ships inside this distribution (``templiqx_cli/examples/welcome``, the
repository's ``fixtures/packages/welcome``, kept equal by a test), so the demo works from an
installed CLI as well as from a clone; it runs on a temporary copy and writes nothing where it
is run. ``--copy-to DIR`` also copies the package to ``DIR/welcome`` to try things on. The
mock runtime is conformance-only and not a dependency of the CLI: it is found through the
``templiqx.runtimes`` entry point when ``templiqx-mock`` is installed beside it (it is in the
workspace: ``uv run --frozen --all-packages``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from templiqx_cli.commands import GLOBAL_NOTE, global_options, resolve_globals
from templiqx_cli.composition import compose_service, runtime_names
from templiqx_cli.inputs import CliError, read_json

if TYPE_CHECKING:
    from pathlib import Path

    from templiqx_application import TempliqxService
    from templiqx_contracts import OperationEnvelope

__all__ = ["DEMO_PACKAGE", "EXAMPLE", "demo_command", "find_demo_package", "invoked_as"]  # noqa: F822


def _example() -> Path:
    from pathlib import Path

    return Path(__file__).resolve().parent / "examples" / DEMO_PACKAGE


def __getattr__(name: str) -> Any:
    if name == "EXAMPLE":
        return _example()
    if name == "shutil":  # the module this one uses, imported where it is used
        import shutil

        return shutil
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DEMO_PACKAGE = "welcome"
DEMO_CONTRACT = "onboarding-summary"
DEMO_SCENARIO = "scenarios/stream-vip/manifest.json"
DEMO_CAPABILITIES = ["structured_output"]
DEMO_RUNTIME = "mock"
# EXAMPLE, the example package shipped with the CLI, is a Path computed on first use
# (module __getattr__ below): `templiqx --help` builds this command and needs no pathlib.
SCENARIO_ENV = "TEMPLIQX_MOCK_SCENARIO"
PACE_ENV = "TEMPLIQX_MOCK_PACE_MS"
DEFAULT_PACE_MS = 60

_MAIN_JOB = "python3 -m pip install uv && uv run --frozen --all-packages templiqx demo"
_INSTALL_MOCK = (
    "uv tool install --find-links dist templiqx-cli --with templiqx-mock (after uv build "
    "--all-packages --out-dir dist in a clone), or pip install templiqx-mock into the CLI's "
    "environment once it is published"
)


def find_demo_package() -> Path | None:
    """The example package folder shipped with the CLI (``None`` if it was removed)."""
    example = _example()
    return example if (example / "templiqx.yaml").is_file() else None


def invoked_as() -> str:
    """How to run this same CLI again from this shell, for the lines that name a command:
    ``templiqx`` when that is what PATH finds, ``uv run ... templiqx`` under ``uv run``
    (which does not put the environment on PATH), else the program's full path."""
    from pathlib import Path

    if os.environ.get("UV_RUN_RECURSION_DEPTH"):  # uv run puts its environment on PATH
        environment = os.environ.get("VIRTUAL_ENV")  # for this process only, not the shell's
        clone = Path(environment).parent if environment else None
        if clone is not None and (clone / "packages" / "templiqx-cli").is_dir():
            return "uv run --frozen --all-packages templiqx"  # this repository's workspace
        return "uv run templiqx"
    program = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    import shutil  # where used: `templiqx --help` builds this command (issue #33)

    found = shutil.which("templiqx")
    if program is None or (found is not None and Path(found).resolve() == program):
        return "templiqx"
    if program.name == "templiqx" and program.is_file():
        return str(program)
    return "templiqx"


def _require_setup() -> Path:
    package = find_demo_package()
    if package is None:
        raise CliError(
            f"demo: the example package is missing from this installation ({_example()}); "
            f"reinstall templiqx-cli, or run the demo from a clone: {_MAIN_JOB}"
        )
    if DEMO_RUNTIME not in runtime_names():
        raise CliError(
            "demo: the scripted mock runtime ('mock' in the templiqx.runtimes entry points) is "
            f"not installed beside the CLI; install templiqx-mock with it: {_INSTALL_MOCK}; or "
            f"run from a clone: {_MAIN_JOB}"
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
    from templiqx_cli.output import render_diagnostic  # printing: not imported by `--help`

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
    from templiqx_cli.output import stream_operation

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


def _copy_example(source: Path, folder: str) -> Path:
    """Copy the example package to ``folder/welcome`` (the folder is created; an existing
    package there is never overwritten)."""
    from pathlib import Path

    target = Path(folder) / DEMO_PACKAGE
    if target.exists():
        raise CliError(f"demo: {target} already exists; choose another --copy-to folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        import shutil

        shutil.copytree(source, target)
    except OSError as exc:
        raise CliError(f"demo: copy the example package to {target}: {exc}") from exc
    return target


def _demo(options: dict[str, Any], pace_ms: int | None, copy_to: str | None = None) -> int:
    from pathlib import Path

    settings = resolve_globals(options)
    if settings.runtime_given and settings.runtime != DEMO_RUNTIME:
        raise click.UsageError(
            f"demo always runs on the scripted mock runtime ('{DEMO_RUNTIME}'), not "
            f"'{settings.runtime}'. To run a contract on another runtime, use execute: "
            f"templiqx --runtime {settings.runtime} --root DIR execute PACKAGE CONTRACT ..."
        )
    import tempfile

    source = _require_setup()
    if copy_to is not None and (Path(copy_to) / DEMO_PACKAGE).exists():
        raise CliError(
            f"demo: {Path(copy_to) / DEMO_PACKAGE} already exists; choose another --copy-to folder"
        )
    narrator = _Narrator(quiet=settings.as_json)
    with tempfile.TemporaryDirectory(prefix="templiqx-demo-") as scratch:
        root = Path(scratch) / "packages"
        import shutil

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
        from templiqx_cli.output import dump_json

        click.echo(dump_json(report, compact=True))
    copied = _copy_example(source, copy_to) if copy_to is not None else None
    if not settings.as_json:
        templiqx = invoked_as()
        if copied is not None:
            folder = str(copied.parent)
            narrator.say(f"Copied the example package to {copied}.")
        else:
            folder = "my-packages"
            narrator.say(
                f"Next: `{templiqx} demo --copy-to {folder}` copies the example package "
                "into a folder of your own; then"
            )
        narrator.say(
            f"try `{templiqx} --root {folder} explain welcome onboarding-summary` or "
            f"`{templiqx} --root {folder} run-eval welcome account-digest quiet-week "
            f"--capability text`; `{templiqx} --help` lists every command."
        )
    if interrupted:
        return 130
    return 0 if all(envelope.ok for envelope in envelopes.values()) else 2


def demo_command() -> click.Command:
    """The ``demo`` command."""

    def callback(pace_ms: int | None, copy_to: str | None, **options: Any) -> int:
        return _demo(options, pace_ms, copy_to)

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
            click.Option(
                ["--copy-to", "copy_to"],
                metavar="DIR",
                default=None,
                help="Also copy the example package to DIR/welcome (DIR is created; an "
                "existing DIR/welcome is never overwritten), to try your own changes on.",
            ),
            *global_options(hidden=True),
        ],
        callback=callback,
        help=(
            "Run the example package end to end: validate, compile, and execute with live "
            "streaming on the scripted mock runtime. No credentials, no network; works on a "
            "temporary copy of the example package shipped with the CLI (the repository's "
            "fixtures/packages/welcome), and needs templiqx-mock installed beside the CLI.\n\n"
            "With --json, stdout holds one JSON object with the three envelopes and stderr one "
            "JSON stream event per line. --runtime other than mock is refused: the demo's "
            "scenario is scripted for the mock.\n\n\b\nExample:\n  "
            + _MAIN_JOB
            + "\n\n"
            + GLOBAL_NOTE
        ),
        short_help="Run the example package end to end with live streaming (offline).",
    )
