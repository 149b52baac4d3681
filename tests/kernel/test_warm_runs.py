"""A run's shell commands start in warm shells (sandbox/warm.py), started when the command before (the preflight's,
the step before's) ended; each is still let go only once its ``action.started`` is on disk, and none is left when
the run ends."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from test_commits import probing_model, with_probe

from tether import EventStore, Harness
from tether.sandbox.warm import VAR

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))
from test_warm import warm_children

STEPS = 4
# Which shell ran the command (its command line: the warm line, or the command), and what the log's head was then.
SHELL = f"tr '\\0' ' ' < /proc/$$/cmdline | grep -c {VAR}; "


def test_a_runs_commands_run_in_warm_shells_each_let_go_after_its_start_is_on_disk(bugfix: Path) -> None:
    db = with_probe(bugfix)
    Harness(bugfix / "envelope.yaml", model=probing_model(STEPS, SHELL), db=db, sandbox="local").run("probe")
    with EventStore.open(db, readonly=True) as store:
        (info,) = store.runs()
        outputs = [e.payload["result"]["content"] for e in store.events(info.run_id) if e.kind == "action.completed"]
        assert store.verify(info.run_id) == len(store.events(info.run_id))
    # Each command's bash was waiting when its call came (the first one's since the preflight's command ended),
    # and the log's head, read by the command, was its own action.started: it went only after the synced write.
    assert [re.findall(r"(\d)\nLOG-HEAD (\S+) (\S+)", out) for out in outputs] == [
        [("1", "action.started", f"c{i}")] for i in range(1, STEPS + 1)
    ]
    assert warm_children() == []
