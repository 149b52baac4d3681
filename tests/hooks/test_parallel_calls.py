"""Claude Code runs the tool calls of one turn in parallel, so the hooks of one session run at once, some cold, some
through the daemon, and a call's PostToolUse may be handled before its PreToolUse is (a PreToolUse that timed out at
the agent, which then ran the tool; two processes scheduled out of order).

A receipt that comes first records the call as run (proposed by the receipt, never decided). The PreToolUse that
follows found the call id known with the same arguments and answered its "current verdict": ALLOW with no rule and
no reason, for `rm -rf /` as for `ls`: the gate never judged it. Now such a proposal is judged by the gate, under an
id of its own, and the answer is the gate's."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hookkit import TETHER, Hook, hook_process, payload, wait_for

from tether.events.store import Event, EventStore
from tether.hooks.daemon import stop_daemon
from tether.hooks.session import run_id_for

SESSION = str(payload("claude-code.PreToolUse", Path("/"))["session_id"])
RUN = run_id_for("claude-code", SESSION)
DANGER = "rm -rf /"


def events(db: Path) -> list[Event]:
    with EventStore.open(db, readonly=True) as store:
        assert store.verify_run(RUN).events > 0
        return list(store.events(RUN))


def decided(out_stdout: str) -> tuple[str, str]:
    spec = json.loads(out_stdout)["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


@pytest.mark.parametrize(("command", "verdict"), [(DANGER, "deny"), ("ls", "allow")])
def test_a_pre_tool_use_after_its_receipt_is_judged_by_the_gate(tmp_path: Path, command: str, verdict: str) -> None:
    hook = Hook(tmp_path)
    hook("SessionStart")
    ran = hook("PostToolUse", tool_input={"command": command}, tool_use_id="late")
    assert ran.exit == 0
    got, reason = decided(hook("PreToolUse", tool_input={"command": command}, tool_use_id="late").stdout)
    assert got == verdict, reason
    assert reason.startswith(f"tether {verdict.upper()} (") and "()" not in reason, reason
    log = events(tmp_path / ".tether" / "tether.db")
    decisions = [e.payload for e in log if e.kind == "action.decided"]
    assert len(decisions) == 1 and decisions[0]["verdict"] == verdict.upper()
    assert decisions[0]["call_id"].startswith("late~"), "judged under an id of its own: the receipt's call stays run"
    receipts = [e.payload["call_id"] for e in log if e.kind == "action.completed"]
    assert receipts == ["late"]
    bypassed = [e.payload for e in log if e.kind == "hook.bypassed"]
    if verdict == "deny":  # it ran before tether could say no: flagged, naming the call the receipt recorded
        assert [(b["call_id"], b["verdict"], b["event"]) for b in bypassed] == [("late", "DENY", "PreToolUse")]
    else:
        assert bypassed == []
    again, _ = decided(hook("PreToolUse", tool_input={"command": command}, tool_use_id="late").stdout)
    assert again == verdict, "asked again (a client that retried), the same answer"
    log = events(tmp_path / ".tether" / "tether.db")
    assert len([e for e in log if e.kind == "action.decided"]) == 1, "and not judged twice"
    assert len([e for e in log if e.kind == "hook.bypassed"]) == len(bypassed), "nor flagged twice"


def test_a_pre_tool_use_decided_before_its_receipt_is_answered_as_before(tmp_path: Path) -> None:
    """The usual order, and a PreToolUse asked again (a client that retried): its current verdict, nothing new."""
    hook = Hook(tmp_path)
    assert decided(hook("PreToolUse", tool_input={"command": DANGER}, tool_use_id="t").stdout)[0] == "deny"
    assert decided(hook("PreToolUse", tool_input={"command": DANGER}, tool_use_id="t").stdout)[0] == "deny"
    assert len([e for e in events(tmp_path / ".tether" / "tether.db") if e.kind == "action.decided"]) == 1


@pytest.mark.slow
def test_eight_hook_processes_of_one_session_at_once_cold_and_daemon_then_the_daemon_killed(tmp_path: Path) -> None:
    """Real processes: PreToolUse and PostToolUse of eight calls, eight at a time, half through the daemon and half
    decided cold, each call's two hooks on different paths; then the daemon is killed (SIGKILL) while calls are in
    flight. Every PreToolUse is answered with the gate's verdict (never an unjudged allow), every call has one
    receipt and one judged decision, every hook call one ``hook.received`` (a call the daemon took and then died on
    is asked again in-process: at most one more), the log verifies, and the next call is answered (the stale socket
    and endpoint left by the killed daemon are not a refusal)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    sock = run / "hookd.sock"
    base = {**os.environ, "CLAUDE_PROJECT_DIR": str(ws), "TETHER_HOOK_SOCKET": str(sock)}
    cold = {**base, "TETHER_HOOK_DAEMON": "0"}
    daemon = subprocess.Popen([*TETHER, "daemon", "--socket", str(sock), "--idle", "120"])
    try:
        wait_for(sock)
        assert hook_process(base, payload("claude-code.SessionStart", ws), ws).returncode == 0
        jobs = []
        for i in range(8):
            command = DANGER if i % 2 == 0 else "ls"
            call = {"tool_input": {"command": command}, "tool_use_id": f"p{i}"}
            pre, post = (base, cold) if i % 2 else (cold, base)
            jobs.append((pre, payload("claude-code.PreToolUse", ws, **call), command))
            jobs.append((post, payload("claude-code.PostToolUse", ws, **call), command))

        def one(
            job: tuple[dict[str, str], dict[str, Any], str],
        ) -> tuple[dict[str, Any], str, subprocess.CompletedProcess[str]]:
            return job[1], job[2], hook_process(job[0], job[1], ws)

        with ThreadPoolExecutor(8) as pool:
            answered = list(pool.map(one, jobs))
            killed = [
                pool.submit(
                    one,
                    (
                        base,
                        payload("claude-code.PreToolUse", ws, tool_input={"command": DANGER}, tool_use_id=f"k{i}"),
                        DANGER,
                    ),
                )
                for i in range(4)
            ]
            daemon.kill()  # SIGKILL, while those four are in flight
            answered += [f.result() for f in killed]
        daemon.wait(timeout=30)
        after = hook_process(
            base, payload("claude-code.PreToolUse", ws, tool_input={"command": DANGER}, tool_use_id="after"), ws
        )
        answered.append((payload("claude-code.PreToolUse", ws), DANGER, after))
    finally:
        if daemon.poll() is None:
            daemon.kill()
        stop_daemon(str(sock))  # the one the call after the kill started, if any
    for data, command, out in answered:
        assert out.returncode == 0, out.stderr
        if data["hook_event_name"] == "PreToolUse":
            verdict, reason = decided(out.stdout)
            assert verdict == ("deny" if command == DANGER else "allow"), reason
            assert "()" not in reason, reason
    log = events(ws / ".tether" / "tether.db")
    for i in range(8):
        mine = [e for e in log if str(e.payload.get("call_id", "")).split("~")[0] == f"p{i}"]
        kinds = [e.kind for e in mine]
        assert kinds.count("action.completed") == 1, kinds
        verdicts = [e.payload["verdict"] for e in mine if e.kind == "action.decided"]
        assert verdicts == ["DENY" if i % 2 == 0 else "ALLOW"], kinds
    received = [e for e in log if e.kind == "hook.received"]
    assert len(jobs) + 1 + 5 <= len(received) <= len(jobs) + 1 + 5 + 4
