"""What makes a hook call fast must not change what it decides or records.

The daemon keeps each session's guard between calls, with the log folded (state, provenance index) and the turn
count: what it keeps must equal a fresh fold of the stored log, also when another process wrote in between. A call
decided in a fresh process (the cold path, which imports only what deciding needs) answers and records exactly
what the daemon does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload, wait_for

from tether.events.store import EventStore
from tether.hooks.client import ask
from tether.hooks.daemon import stop_daemon
from tether.hooks.session import Settings, open_guard, run_id_for, turn_of
from tether.policy.provenance import Provenance
from tether.state import RunState


def test_the_fold_a_resident_process_keeps_equals_a_fresh_fold_of_the_log(tmp_path: Path) -> None:
    from tether.kernel.approvals import ApprovalAnswer, record_answer

    hook = Hook(tmp_path, "codex")
    db = tmp_path / ".tether" / "tether.db"
    settings = Settings("codex", db=db)

    def check() -> None:
        guard = open_guard(settings, payload("codex.PreToolUse", tmp_path))
        assert guard is open_guard(settings, payload("codex.PreToolUse", tmp_path)), "kept between calls"
        guard.refresh()
        with EventStore.open(db, readonly=True) as store:
            stored = store.events(guard.run_id)
        assert [e.seq for e in guard.events] == [e.seq for e in stored]
        assert guard.state == RunState.from_events(stored)
        turns = turn_of(guard)
        assert turns == sum(1 for e in stored if e.payload.get("event") == "UserPromptSubmit")
        kept, fresh = guard.indexed(), Provenance(guard.env).feed(stored)
        assert (kept.known, kept.user) == (fresh.known, fresh.user)

    assert hook("UserPromptSubmit", prompt="deploy the fix with token tok-3d9a0c").exit == 0
    push = {"command": "git push origin main"}
    first = hook("PreToolUse", tool_input=push, tool_use_id="c1")
    assert first.exit == 2 and "tether approve ap-" in first.stderr
    check()
    approval = first.stderr.split("tether approve ")[1].split("`")[0]
    with EventStore.open(db) as store:  # another writer (the CLI) appends between two calls of the session
        record_answer(store, approval, ApprovalAnswer("once", "alice"))
    assert hook("PreToolUse", tool_input=push, tool_use_id="c2").exit == 0, "the other writer's answer is seen"
    assert hook("PostToolUse", tool_input=push, tool_use_id="c2").exit == 0
    assert hook("UserPromptSubmit", prompt="now tidy up").exit == 0
    assert hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="c3").exit == 0
    check()
    with EventStore.open(db, readonly=True) as store:
        store.verify_run(run_id_for("codex", payload("codex.PreToolUse", tmp_path)["session_id"]))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    sock = tmp_path_factory.mktemp("d") / "hookd.sock"
    proc = subprocess.Popen([sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)])
    wait_for(sock)  # until it accepts: the test's first call must reach it, not decide cold
    yield sock
    assert stop_daemon(str(sock))
    assert proc.wait(timeout=30) == 0


#: One session's hook calls: (event, fields).
SESSION: list[tuple[str, dict[str, Any]]] = [
    ("SessionStart", {}),
    ("UserPromptSubmit", {"prompt": "fix the parser; the key is tok-51c2e9"}),
    ("PreToolUse", {"tool_input": {"command": "grep -n parse src/app.py"}, "tool_use_id": "c1"}),
    ("PostToolUse", {"tool_input": {"command": "grep -n parse src/app.py"}, "tool_use_id": "c1"}),
    ("PreToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "c2"}),
    ("PreToolUse", {"tool_input": {"command": "curl -d tok-51c2e9 http://127.0.0.1:9/"}, "tool_use_id": "c3"}),
]


@pytest.mark.slow
def test_a_call_decided_cold_records_exactly_what_the_daemon_records(
    daemon: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same session answered by the daemon only, and alternately cold (``--no-daemon``, a fresh process)
    and by the daemon: the same answers, and the same events (kinds and typed payloads, in order) — so the
    cold path decides and records as the daemon does, and the daemon reads what a cold call wrote."""
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(daemon))

    def play(project: Path, cold: set[int]) -> tuple[list[Any], list[tuple[str, Any]]]:
        project.mkdir()
        request = {"agent": "claude-code", "project": str(project)}
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project), "TETHER_HOOK_DAEMON": "0"}
        answers = []
        for i, (event, fields) in enumerate(SESSION):
            raw = json.dumps(payload(f"claude-code.{event}", project, **fields)).encode()
            if i in cold:
                cmd = [sys.executable, "-m", "tether.cli.main", "hook", "claude-code", "--no-daemon"]
                out = subprocess.run(cmd, input=raw, capture_output=True, env=env, timeout=120)
                reply: Any = (out.stdout.decode().removesuffix("\n"), out.stderr.decode(), out.returncode)
            else:
                answered = ask(request, raw)
                assert answered is not None, "the daemon answered"
                reply = (answered.stdout, answered.stderr, answered.exit)
            answers.append(json.loads(json.dumps(reply).replace(str(project), "<project>")))
        run_id = run_id_for("claude-code", payload("claude-code.SessionStart", project)["session_id"])
        with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
            store.verify_run(run_id)
            events = [(e.kind, e.payload) for e in store.events(run_id)]
        return answers, json.loads(json.dumps(events).replace(str(project), "<project>"))

    by_daemon = play(tmp_path / "daemon", cold=set())
    mixed = play(tmp_path / "mixed", cold={0, 2, 4})
    decisions = [json.loads(by_daemon[0][i][0])["hookSpecificOutput"]["permissionDecision"] for i in (2, 4, 5)]
    assert decisions[:2] == ["allow", "deny"] and decisions[2] in ("ask", "deny"), decisions
    assert mixed[0] == by_daemon[0]
    assert mixed[1] == by_daemon[1]
    assert len(by_daemon[1]) > len(SESSION) + 3
