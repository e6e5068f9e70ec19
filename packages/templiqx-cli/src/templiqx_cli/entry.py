"""The console-script entry point: a fast path for ``catalog``, click for everything else.

``templiqx catalog`` must answer as fast as the interpreter starts (a benchmark holds it to a few
times ``python3 -c pass``), so it is recognised here, with plain string checks, and answered from
the snapshot of the service catalog shipped beside this module; neither click nor the service is
imported. Every other command line goes to the click application.

Output that cannot be written ends in one line, never a traceback: while a command runs, the
standard streams are guarded, so a write or flush that fails (``ENOSPC`` on ``>/dev/full``,
``EPIPE`` when the reader has gone) is remembered instead of raised, and the command then exits
with 1 and ``templiqx: write standard output: <reason>`` on stderr. A standard output that is
closed before the command starts (``>&-``) is refused before anything runs.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would slow `catalog` down
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TextIO

__all__ = ["EXIT_OUTPUT_FAILED", "main"]

EXIT_OUTPUT_FAILED = 1
"""The exit code when the output could not be written (an I/O error, as for unreadable files)."""

_VALUE_OPTIONS = ("--root", "--runtime")


class _GuardedStream:
    """A text stream whose write failures are remembered instead of raised."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self.failure = exc
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.failure is None:
            try:
                self._stream.flush()
            except OSError as exc:
                self.failure = exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _is_plain_catalog_call(argv: list[str]) -> bool | None:
    """``None`` unless ``argv`` is exactly ``catalog`` with global options; else ``--json``."""
    command_seen = False
    as_json = False
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "catalog" and not command_seen:
            command_seen = True
        elif token == "--json":
            as_json = True
        elif token in _VALUE_OPTIONS:
            if index + 1 >= len(argv):
                return None
            index += 1
        elif not any(token.startswith(f"{option}=") for option in _VALUE_OPTIONS):
            return None
        index += 1
    return as_json if command_seen else None


def _dispatch(args: list[str]) -> int:
    as_json = _is_plain_catalog_call(args)
    if as_json is not None:
        from templiqx_cli.snapshot import print_catalog

        return print_catalog(as_json=as_json)
    from templiqx_cli.app import run

    return run(args)


def _say(stream: TextIO | None, line: str) -> None:
    """Write one line to stderr if it can be written at all."""
    if stream is None:
        return
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def _silence(stream: TextIO) -> None:
    """Point the failed stream's descriptor at /dev/null, so the interpreter's last flush of
    what is still buffered cannot fail again (and print a traceback) at exit."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return  # not a real descriptor (a test's capture): nothing is flushed at exit
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, descriptor)
    finally:
        os.close(null)


def main(argv: list[str] | None = None) -> int:
    """Run ``templiqx`` with ``argv`` (default: the process arguments); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    stdout, stderr = sys.stdout, sys.stderr
    if stdout is None:
        _say(stderr, "templiqx: standard output is closed; nothing was run")
        return EXIT_OUTPUT_FAILED
    guarded_out = _GuardedStream(stdout)
    guarded_err = _GuardedStream(stderr) if stderr is not None else None
    sys.stdout = guarded_out
    if guarded_err is not None:
        sys.stderr = guarded_err
    try:
        try:
            code = _dispatch(args)
        except OSError as exc:  # a write that went around the guard
            if guarded_out.failure is None:
                guarded_out.failure = exc
            code = EXIT_OUTPUT_FAILED
        guarded_out.flush()
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    failure = guarded_out.failure
    if failure is None:
        return code
    reason = failure.strerror or type(failure).__name__
    _say(stderr, f"templiqx: write standard output: {reason} (os error {failure.errno})")
    _silence(stdout)
    return EXIT_OUTPUT_FAILED
