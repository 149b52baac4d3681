"""What finding the workspace's earlier hook session costs a session's first call (``tether.hooks.earlier.latest``).

    python benchmarks/earlier_lookup.py [--runs 2000] [--repeat 20]

A real session is made in a temporary git workspace through the hook (SessionStart, a Write, four Stops: the last one
let through unverified), and its events are copied into stores holding other sessions: the rows below time
``latest()`` on each (median of ``--repeat``, warm, in this process), with the session's whole baseline
(``integrity.take_baseline``, which calls it) on the empty store as the baseline of the ratios:

* no history: a store with no earlier session (a workspace's first);
* one earlier: the unverified session, alone;
* N of this workspace: N ended sessions of this workspace, the unverified one the newest (one run.started read);
* N of others: N sessions of other workspaces sharing the store, this one's older than all of them (``MAX_LOOKED``
  run.started read, then none found).

No thresholds; figures only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.events.store import EventStore
from tether.hooks import earlier
from tether.hooks.answer import answer
from tether.hooks.integrity import take_baseline

#: The stop refuses a changed test (tests may not change): the session below ends unverified.
ENVELOPE = json.dumps(
    {
        "version": 1,
        "plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64},
        "environment": {
            "sandbox": {"backend": "local", "required": False},
            "filesystem": {"read": ["**"], "write": ["**"]},
        },
        "tools": [{"name": "write_file", "purpose": "Write a file.", "effects": ["write"]}],
        "verification": {"tests_may_change": False},
    }
)


def session(ws: Path, sid: str) -> list[tuple[str, dict[str, object]]]:
    """A session whose agent weakens the test and stops unverified; its events as (kind, payload)."""
    request = {"agent": "claude-code", "db": str(ws / ".tether" / "tether.db")}

    def call(event: str, **fields: object) -> None:
        answer(request, {"session_id": sid, "cwd": str(ws), "hook_event_name": event, **fields})

    call("SessionStart", source="startup")
    tool_input = {"file_path": str(ws / "tests" / "test_calc.py"), "content": "def test_f():\n    pass\n"}
    call("PreToolUse", tool_name="Write", tool_input=tool_input, tool_use_id="w1")
    (ws / "tests" / "test_calc.py").write_text(str(tool_input["content"]))
    call("PostToolUse", tool_name="Write", tool_input=tool_input, tool_response={}, tool_use_id="w1")
    for _ in range(4):
        call("Stop", stop_hook_active=False)
    with EventStore.open(ws / ".tether" / "tether.db") as store:
        run = next(r.run_id for r in store.runs() if r.run_id.endswith(sid))
        return [(e.kind, dict(e.payload)) for e in store.events(run)]


def store_with(path: Path, events: list[tuple[str, dict[str, object]]], mine: int, others: int) -> None:
    """``mine`` sessions of this workspace (all copies of the unverified one), then ``others`` of other workspaces."""
    with EventStore.open(path) as store:
        for i in range(mine):
            store.create_run(f"claude-code session m{i}", events, run_id=f"claude-code-m{i}")
        for i in range(others):
            elsewhere = [(k, {**p, "workspace": f"/elsewhere/{i}"} if k == "run.started" else p) for k, p in events]
            store.create_run(f"claude-code session o{i}", elsewhere, run_id=f"claude-code-o{i}")


def timed(fn: Callable[[], object], repeat: int) -> float:
    fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".tether").mkdir(parents=True)
        (ws / ".tether" / "envelope.yaml").write_text(ENVELOPE)
        (ws / ".gitignore").write_text(".tether/\n")
        (ws / "tests").mkdir()
        (ws / "tests" / "test_calc.py").write_text("def test_f():\n    assert 1\n")
        git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
        for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
            subprocess.run([*git, *cmd], cwd=ws, check=True)
        events = session(ws, "s1")
        events = [(k, {**p, "workspace": str(ws)} if k == "run.started" else p) for k, p in events]
        rows = {}
        for name, mine, others in [
            ("no history", 0, 0),
            ("one earlier", 1, 0),
            (f"{args.runs} of this workspace", args.runs, 0),
            (f"{args.runs} of others", 1, args.runs),
        ]:
            db = Path(tmp) / f"{mine}-{others}.db"
            store_with(db, events, mine, others) if mine or others else EventStore.open(db).close()
            with EventStore.open(db) as store:
                if name == "no history":
                    rows["take_baseline, no history (the ratios' base)"] = timed(
                        lambda store=store: take_baseline(store, ws), args.repeat
                    )
                rows[f"latest(), {name}"] = timed(lambda store=store: earlier.latest(store, ws), args.repeat)
        base = rows["take_baseline, no history (the ratios' base)"]
        for name, ms in rows.items():
            print(json.dumps({"row": name, "ms": round(ms, 3), "ratio": round(ms / base, 3)}))


if __name__ == "__main__":
    main()
