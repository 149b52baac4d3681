"""How a running scheduler stops (``cli/schedule_cmds.serve``): SIGTERM mid-pass lets the pass finish and stops
cleanly; between passes it stops at once; Ctrl-C mid-pass still interrupts the pass. The signals are real and
arrive exactly where each case needs them: raised in this thread from inside the pass (``raise_signal``: Python
runs the handler before it returns; ``os.kill`` of the process let the pass go on once under load), or sent to
the main thread during its sleep."""

from __future__ import annotations

import signal
import threading

import pytest

from tether.cli.schedule_cmds import serve


def test_sigterm_during_a_pass_lets_it_finish_then_stops_cleanly() -> None:
    passes: list[str] = []

    def step() -> None:
        passes.append("started")
        signal.raise_signal(signal.SIGTERM)  # handled here, in the middle of the pass
        passes.append("finished")

    before = signal.getsignal(signal.SIGTERM)
    serve(step, interval=0.01)  # returns: a clean stop, no KeyboardInterrupt (exit 130) escaping
    assert passes == ["started", "finished"]  # the pass ran to its end, and no other began
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is given back


def test_sigterm_between_passes_stops_without_waiting_for_the_interval() -> None:
    passes: list[int] = []

    def step() -> None:
        passes.append(len(passes))
        if len(passes) == 1:  # arrives while the loop sleeps its (long) interval
            threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGTERM)).start()

    serve(step, interval=60)
    assert passes == [0]


def test_ctrl_c_during_a_pass_still_interrupts_it() -> None:
    def step() -> None:
        signal.raise_signal(signal.SIGINT)
        raise AssertionError("the pass went on after Ctrl-C")  # pragma: no cover — Python raises at the signal

    # Ctrl-C as a CLI process has it: Python's own handler (another test in this worker may have left its own)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            serve(step, interval=0.01)
    finally:
        signal.signal(signal.SIGINT, previous)
