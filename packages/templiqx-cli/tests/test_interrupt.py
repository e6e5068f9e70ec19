"""Ctrl-C during a call: the first SIGINT sets the cancel token, the second stops waiting."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from templiqx_cli.interrupt import run_interruptible


@pytest.fixture(autouse=True)
def _sigint_as_at_a_terminal() -> Iterator[None]:
    """Python's own SIGINT handler for the test, whatever this process inherited.

    A process started in the background (``nohup ... &``) inherits SIGINT ignored, and Python
    then installs no handler: these tests send SIGINT to their own process, so they restore
    the disposition a terminal gives (and put the inherited one back afterwards).
    """
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, inherited)


def _interrupt_soon(delay: float = 0.1) -> None:
    threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)).start()


def test_first_sigint_cancels_and_waits_for_the_call() -> None:
    seen: list[str] = []

    def work(cancel: threading.Event) -> str:
        _interrupt_soon()
        assert cancel.wait(5), "the cancel token was never set"
        time.sleep(0.2)  # the runtime winds down; the caller must wait for it
        seen.append("finished")
        return "cancelled envelope"

    result, interrupted = run_interruptible(work)
    assert result == "cancelled envelope"
    assert interrupted is True
    assert seen == ["finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_call_without_interrupt() -> None:
    assert run_interruptible(lambda cancel: cancel.is_set()) == (False, False)


def test_second_sigint_stops_waiting() -> None:
    release = threading.Event()

    def stubborn(cancel: threading.Event) -> None:
        _interrupt_soon(0.05)
        _interrupt_soon(0.3)
        release.wait(10)

    try:
        with pytest.raises(KeyboardInterrupt):
            run_interruptible(stubborn)
    finally:
        release.set()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_failures_of_the_call_are_raised_in_the_caller() -> None:
    def broken(cancel: threading.Event) -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_interruptible(broken)
