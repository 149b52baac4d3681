"""A command tool's ``action.started`` is recorded inside the commit its held command waits for (issue 18): built,
chained and folded while the command's process starts, then written and synced, and only then may the command begin.

Attacked here on both backends: the event is recorded while the child is up and held (its command has done nothing);
recording it failing leaves the command unrun, no process behind, and a log that verifies without the step's start;
a command tool whose call never starts a command still records the start before its completion.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from runkit import FINISH, write_script
from test_crash_resume import MARK, marker_lines
from test_held_commit import marking

import tether.kernel.runtime as runtime_module
from tether import EventStore, Harness
from tether.events.payload import InvalidPayload
from tether.sandbox.doctor import survivors
from tether.sandbox.local import LocalSandbox

BACKENDS = ["local", pytest.param("bwrap", marks=pytest.mark.bwrap)]


def kinds_of(db: Path) -> list[str]:
    with EventStore.open(db) as store:
        (info,) = store.runs()
        kinds = [e.kind for e in store.events(info.run_id)]
        assert store.verify(info.run_id) == len(kinds)
    return kinds


@pytest.mark.parametrize("backend", BACKENDS)
def test_action_started_is_recorded_while_the_command_is_held(
    bugfix: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tether-held-" + secrets.token_hex(6)
    write_script(bugfix, [{"tool_calls": [marking(token)]}, {"tool_calls": [FINISH]}])
    seen: list[tuple[bool, int]] = []
    real = runtime_module.started

    def watched(*args: Any) -> Any:
        for _ in range(300):  # bubblewrap's child shows the token once its namespaces are up
            if survivors(token, grace_s=0):
                break
            time.sleep(0.01)
        seen.append((bool(survivors(token, grace_s=0)), marker_lines(bugfix)))
        return real(*args)

    monkeypatch.setattr(runtime_module, "started", watched)
    Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox=backend).run("fix the median")
    # the bash step's: its child up and holding, its command not run; then the finish call's (no command: no child)
    assert seen[0] == (True, 0)
    assert marker_lines(bugfix) == 1
    kinds = kinds_of(bugfix / "t.db")
    assert kinds.count("action.started") == len(seen) == 2
    first = kinds.index("action.started")
    assert kinds[first - 1] == "action.decided" and "action.completed" in kinds[first + 1 : first + 3]


@pytest.mark.parametrize("backend", BACKENDS)
def test_recording_action_started_failing_leaves_the_command_unrun(
    bugfix: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tether-held-" + secrets.token_hex(6)
    write_script(bugfix, [{"tool_calls": [marking(token)]}, {"tool_calls": [FINISH]}])

    def broken(*args: Any) -> Any:
        raise InvalidPayload("invalid payload for event kind 'action.started': broken on purpose")

    monkeypatch.setattr(runtime_module, "started", broken)
    with pytest.raises(InvalidPayload, match="broken on purpose"):
        Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox=backend).run("fix the median")
    assert survivors(token, grace_s=5) == []
    assert marker_lines(bugfix) == 0
    kinds = kinds_of(bugfix / "t.db")
    assert "action.started" not in kinds and kinds[-1] == "action.decided"


def test_a_command_tool_whose_command_never_starts_records_its_start_first(
    bugfix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bash cannot be executed (the sandbox starts no process, so nothing ran the commit): ``settle`` records and
    writes the start after the call, before its result, and no process ever held anything."""
    write_script(bugfix, [{"tool_calls": [MARK]}, {"tool_calls": [FINISH]}])

    real = LocalSandbox.captured

    def no_bash(self: LocalSandbox, argv: list[str], *args: Any) -> Any:
        if "marker.txt" not in argv[2]:  # the pre-flight's test collection runs as usual
            return real(self, argv, *args)
        raise FileNotFoundError(2, "No such file or directory", "/usr/bin/bash")

    monkeypatch.setattr(LocalSandbox, "captured", no_bash)
    Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix the median")
    assert marker_lines(bugfix) == 0
    with EventStore.open(bugfix / "t.db") as store:
        (info,) = store.runs()
        events = store.events(info.run_id)
    kinds = [e.kind for e in events]
    first = kinds.index("action.started")
    assert kinds[first - 1] == "action.decided" and kinds[first + 1] == "action.completed"
    assert events[first + 1].payload["result"]["data"]["exit_code"] == 127
