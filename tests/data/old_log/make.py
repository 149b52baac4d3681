"""Write ``run.db`` and ``expected.json``: a log in the ``(kind, dict)`` form, and what the fold made of it.

Run at commit 0c8a76f (before payload objects were the currency), with that commit's ``src`` on the path:
``git archive 0c8a76f src | tar -x -C /tmp/old && PYTHONPATH=/tmp/old/src python tests/data/old_log/make.py``.
The test (tests/test_event_payloads.py) reads both with today's code: the chain must still verify and the
fold and the control layer's next output must be the same.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from tether.control import observe
from tether.envelope.schema import Envelope
from tether.events.store import EventStore
from tether.state import RunState

HERE = Path(__file__).parent
ENVELOPE: dict[str, Any] = {
    "plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64},
    "environment": {"filesystem": {"read": ["**"], "write": ["src/**", "tests/**"]}},
    "verification": {"sensors": [{"name": "tests", "required": True}], "max_refusals": 2},
}


def state_json(state: RunState) -> Any:
    return json.loads(json.dumps(dataclasses.asdict(state), default=str, sort_keys=True))


def main() -> None:
    db = HERE / "run.db"
    for p in (db, Path(str(db) + "-wal"), Path(str(db) + "-shm"), Path(str(db) + ".lock")):
        p.unlink(missing_ok=True)
    env = Envelope.model_validate(ENVELOPE)
    store = EventStore.open(db)
    run = store.create_run("fix the parser", run_id="20260101-000000-0ld10g")

    def add(*items: tuple[str, dict[str, Any]]) -> None:
        store.append_many(run, list(items))
        out = observe(store.events(run), env)
        if out:
            store.append_many(run, out)

    add(
        (
            "run.started",
            {
                "task": "fix the parser",
                "envelope": ENVELOPE,
                "plan_hash": "sha256:" + "1" * 64,
                "contract_hash": "sha256:" + "2" * 64,
                "model": "scripted:old",
                "workspace": "/ws",
                "budgets": {"turns": 20, "tokens": 100000, "usd": 1.5, "tool_calls": 30, "wall_s": None},
                "max_external": 1,
                "acknowledged": [{"risk": "net", "path": "network", "found": "on", "reason": "needed"}],
            },
        ),
        ("run.checkpoint", {"label": "start", "snapshot": "sha256:" + "3" * 64, "files": 4}),
        ("preflight.completed", {"ok": True, "checks": [{"name": "tests", "ok": True, "detail": "3 collected"}]}),
    )
    for turn, (call, tool, args, ok) in enumerate(
        [
            ("c1", "read_file", {"path": "src/p.py"}, True),
            ("c2", "run_tests", {}, False),
            ("c3", "write_file", {"path": "src/p.py", "content": "x"}, True),
            ("c4", "run_tests", {}, True),
        ]
    ):
        add(
            ("model.requested", {"turn": turn, "model": "scripted:old", "n_messages": 2 * turn + 1}),
            (
                "model.responded",
                {
                    "turn": turn,
                    "model": "scripted:old",
                    "text": f"step {turn}",
                    "tool_calls": [{"id": call, "name": tool, "args": args}],
                    "termination": "tool_request",
                    "input_tokens": 800 + turn,
                    "output_tokens": 40,
                    "cost_usd": 0.002,
                },
            ),
            ("action.proposed", {"call_id": call, "tool": tool, "args": args, "args_hash": f"h{turn}", "turn": turn}),
            (
                "action.decided",
                {
                    "call_id": call,
                    "verdict": "ALLOW",
                    "deciding_rule": "scope",
                    "reason": "in scope",
                    "rules": [{"id": "scope", "verdict": "ALLOW", "reason": "in scope"}],
                },
            ),
            ("action.started", {"call_id": call, "tool": tool, "args_hash": f"h{turn}", "attempt": 1}),
        )
        if tool == "run_tests":
            add(
                (
                    "action.completed",
                    {
                        "call_id": call,
                        "tool": tool,
                        "ok": ok,
                        "result": {
                            "content": "1 failed" if not ok else "3 passed",
                            "data": {"failing": ["tests/test_p.py::test_a"] if not ok else [], "passed": 3},
                            "effects": ["read"],
                        },
                    },
                ),
                (
                    "sensor.result",
                    {
                        "sensor": "tests",
                        "result": "PASS" if ok else "FAIL",
                        "required": True,
                        "summary": "tests",
                        "diagnostics": []
                        if ok
                        else [{"file": "tests/test_p.py", "line": 3, "message": "assert", "code": "t::a"}],
                    },
                ),
            )
        else:
            changed = [args["path"]] if tool == "write_file" else []
            add(
                (
                    "action.completed",
                    {
                        "call_id": call,
                        "tool": tool,
                        "ok": ok,
                        "result": {"content": "done", "effects": ["write"] if changed else ["read"]},
                        "changed_files": changed,
                        "observed_files": changed,
                        "undo": {"path": args["path"], "blob": "sha256:" + "4" * 64} if changed else None,
                    },
                )
            )
    # an action that fails, one that is invalid, a model failure, an approval of each outcome
    add(
        (
            "action.proposed",
            {"call_id": "c5", "tool": "bash", "args": {"command": "make"}, "args_hash": "h5", "turn": 4},
        ),
        ("action.decided", {"call_id": "c5", "verdict": "ALLOW", "deciding_rule": "r", "reason": "ok"}),
        ("action.started", {"call_id": "c5", "tool": "bash", "args_hash": "h5"}),
        ("action.failed", {"call_id": "c5", "tool": "bash", "error": "exit 2", "failure_class": "command_failed"}),
        ("action.proposed", {"call_id": "c6", "tool": "nope", "args": {}, "args_hash": "h6", "turn": 4}),
        ("action.invalid", {"call_id": "c6", "tool": "nope", "error": "unknown tool"}),
        ("model.failed", {"turn": 5, "model": "scripted:old", "error": "HTTP 503", "transient": True, "status": 503}),
    )
    for call, answer in (("c7", "granted"), ("c8", "denied"), ("c9", "expired")):
        add(
            (
                "action.proposed",
                {"call_id": call, "tool": "bash", "args": {"command": call}, "args_hash": call, "turn": 6},
            ),
            ("action.decided", {"call_id": call, "verdict": "ASK", "deciding_rule": "ask", "reason": "needs a human"}),
            (
                "approval.requested",
                {
                    "approval_id": "a-" + call,
                    "call_id": call,
                    "tool": "bash",
                    "args_hash": call,
                    "preview": call,
                    "reason": "needs a human",
                    "expires_at": 1.5e9,
                },
            ),
            ("run.waiting", {"status": "WAITING_APPROVAL", "reason": "approval a-" + call}),
        )
        if answer == "granted":
            add(("approval.granted", {"approval_id": "a-c7", "by": "alice", "scope": "run", "rule": "bash(c7)"}))
        elif answer == "denied":
            add(("approval.denied", {"approval_id": "a-c8", "by": "bob", "reason": "no"}))
        else:
            add(("approval.expired", {"approval_id": "a-c9", "outcome": "deny"}))
        add(("run.resumed", {"reason": answer}))
    add(
        (
            "action.proposed",
            {"call_id": "f1", "tool": "finish", "args": {"summary": "done"}, "args_hash": "hf", "turn": 7},
        ),
        ("action.decided", {"call_id": "f1", "verdict": "ALLOW", "deciding_rule": "finish", "reason": "ok"}),
        ("action.started", {"call_id": "f1", "tool": "finish", "args_hash": "hf"}),
        ("action.completed", {"call_id": "f1", "tool": "finish", "ok": True, "result": {"content": "claimed"}}),
        ("completion.claimed", {"call_id": "f1", "summary": "done"}),
        ("verify.completed", {"trigger": "completion", "results": {"tests": "PASS"}, "accepted": True}),
        ("completion.accepted", {"call_id": "f1", "evidence": [f"{run}#1"]}),
        ("budget.exceeded", {"budget": "usd", "used": 1, "limit": 1}),
        (
            "run.finished",
            {
                "status": "COMPLETE",
                "result": "done",
                "evidence": [f"{run}#1"],
                "unknowns": ["none"],
                "next_action": "review",
                "last_error": None,
            },
        ),
    )
    events = store.events(run)
    expected = {
        "run_id": run,
        "events": len(events),
        "kinds": sorted({e.kind for e in events}),
        "state": state_json(RunState.from_events(events)),
        # what the control layer adds to each prefix of the log (where it adds anything)
        "observe": {
            n: [[k, p] for k, p in out] for n in range(1, len(events) + 1) if (out := observe(events[:n], env))
        },
    }
    store.close()
    Path(str(db) + ".lock").unlink()
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
