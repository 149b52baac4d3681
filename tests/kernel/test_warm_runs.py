"""A run's shell commands after its first start in warm shells (sandbox/warm.py), started when the step before ended;
each is still let go only once its ``action.started`` is on disk, and none is left when the run ends."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from test_commits import probing_model, with_probe

from tether import EventStore, Harness
from tether.kernel.outcome import OutputContract
from tether.kernel.runtime import Runtime
from tether.sandbox import warm
from tether.sandbox.warm import VAR

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))
from test_warm import warm_children

STEPS = 4
# Which shell ran the command (its command line: the warm line, or the command), and what the log's head was then.
# The pattern is spelled so that it does not match itself: a fresh shell's command line holds the command.
SHELL = f"tr '\\0' ' ' < /proc/$$/cmdline | grep -c '{VAR[:-1]}[{VAR[-1]}]'; "


def test_a_runs_commands_run_in_warm_shells_each_let_go_after_its_start_is_on_disk(bugfix: Path) -> None:
    db = with_probe(bugfix)
    Harness(bugfix / "envelope.yaml", model=probing_model(STEPS, SHELL), db=db, sandbox="local").run("probe")
    with EventStore.open(db, readonly=True) as store:
        (info,) = store.runs()
        outputs = [e.payload["result"]["content"] for e in store.events(info.run_id) if e.kind == "action.completed"]
        assert store.verify(info.run_id) == len(store.events(info.run_id))
    # The first command's bash is started for it (the preflight runs before the drive's loop); each later one was
    # waiting when its call came. Each command read its own action.started as the log's head: it went only after
    # the synced write.
    assert [re.findall(r"(\d)\nLOG-HEAD (\S+) (\S+)", out) for out in outputs] == [
        [("0" if i == 1 else "1", "action.started", f"c{i}")] for i in range(1, STEPS + 1)
    ]
    assert warm_children() == []


def test_a_run_driven_one_step_at_a_time_starts_no_shell_ahead(bugfix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a distributed worker drives a run (one step per activity): a shell started at a step's end would be
    stopped unused when the drive returns, so none is started; the commands run as before."""
    drive = Runtime.drive

    def step_by_step(self: Runtime, steps: int | None = None) -> OutputContract:
        for _ in range(100):
            out = drive(self, steps=1)
            if self.state.finished:
                break
        return out

    monkeypatch.setattr(Runtime, "drive", step_by_step)
    started: list[Path] = []
    start = warm.start

    def counted(bash: str, cwd: Path, env: Mapping[str, str], token: str) -> warm.Warm | None:
        started.append(cwd)
        return start(bash, cwd, env, token)

    monkeypatch.setattr(warm, "start", counted)
    db = with_probe(bugfix)
    Harness(bugfix / "envelope.yaml", model=probing_model(STEPS, SHELL), db=db, sandbox="local").run("probe")
    with EventStore.open(db, readonly=True) as store:
        (info,) = store.runs()
        outputs = [e.payload["result"]["content"] for e in store.events(info.run_id) if e.kind == "action.completed"]
    assert [re.findall(r"(\d)\nLOG-HEAD (\S+) (\S+)", out) for out in outputs] == [
        [("0", "action.started", f"c{i}")] for i in range(1, STEPS + 1)
    ]
    assert started == [] and warm_children() == []
