"""How a running scheduler stops (``cli/schedule_cmds.serve``): SIGTERM mid-pass lets the pass finish and stops
cleanly; between passes it stops at once; Ctrl-C mid-pass still interrupts the pass. The signals are real (sent
to this process) and arrive exactly where each case needs them: from inside the pass, or during the sleep."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tether.cli.schedule_cmds import serve


def test_sigterm_during_a_pass_lets_it_finish_then_stops_cleanly() -> None:
    passes: list[str] = []

    def step() -> None:
        passes.append("started")
        os.kill(os.getpid(), signal.SIGTERM)  # delivered here, in the middle of the pass
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
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()

    serve(step, interval=60)
    assert passes == [0]


def test_ctrl_c_during_a_pass_still_interrupts_it() -> None:
    def step() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("the pass went on after Ctrl-C")  # pragma: no cover — Python raises at the kill

    with pytest.raises(KeyboardInterrupt):
        serve(step, interval=0.01)
