"""Event log throughput, with a raw-SQLite baseline measured in the same run.

Prints: durable single appends/s vs. a raw ``sqlite3`` insert with the same
settings (WAL, synchronous=FULL, one commit per row) and their ratio; batched
appends/s; fold events/s (of the batched log, and of a run's usual mix of kinds,
through ``RunState`` and through the control layer's ``RunFold``, each over events
read fresh from the store); the same two folds timed together with the read, against
reading the rows as JSON dicts (``sqlite3`` + ``json.loads``: what any reader of the log
pays before it folds anything) in the same run; verify events/s. Fold and read lines
are the best of ``REPEAT`` tries (the machine is shared).

To compare two commits, run this file with each one's ``src`` first on ``PYTHONPATH``,
alternating (see docs/log.md).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.control.fold import RunFold
from tether.events.store import Event, EventStore
from tether.state import RunState

PAYLOAD = {"turn": 0, "model": "scripted:bench", "n_messages": 3}
REPEAT = 3


def turn(i: int) -> list[tuple[str, dict[str, Any]]]:
    """One turn of a run, as the runtime logs it: a model call, one action through the gate, a sensor."""
    call, args = f"c{i}", {"path": f"src/m{i % 7}.py"}
    return [
        ("model.requested", {"turn": i, "model": "scripted:bench", "n_messages": 2 * i + 1}),
        (
            "model.responded",
            {
                "turn": i,
                "model": "scripted:bench",
                "text": "editing",
                "tool_calls": [{"id": call, "name": "write_file", "args": args}],
                "termination": "tool_request",
                "input_tokens": 900,
                "output_tokens": 60,
            },
        ),
        ("action.proposed", {"call_id": call, "tool": "write_file", "args": args, "args_hash": "h" * 64, "turn": i}),
        ("action.decided", {"call_id": call, "verdict": "ALLOW", "deciding_rule": "write", "reason": "in scope"}),
        ("action.started", {"call_id": call, "tool": "write_file", "args_hash": "h" * 64}),
        (
            "action.completed",
            {
                "call_id": call,
                "tool": "write_file",
                "ok": True,
                "result": {"content": f"wrote {args['path']}", "effects": ["write"]},
                "changed_files": [args["path"]],
            },
        ),
        ("sensor.result", {"sensor": "syntax", "result": "PASS", "required": True, "summary": "ok"}),
    ]


def raw_inserts(db: Path, n: int) -> float:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE ev (run_id TEXT, seq INTEGER, ts TEXT, kind TEXT, payload TEXT, prev TEXT, hash TEXT)")
    start = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO ev VALUES (?,?,?,?,?,?,?)", ("r", i, "ts", "k", '{"turn":0}', "p" * 64, "h" * 64))
        conn.execute("COMMIT")
    return n / (time.perf_counter() - start)


def read_dicts(conn: sqlite3.Connection, run_id: str) -> float:
    """The floor of any reader: the run's rows from SQLite, each payload parsed as a JSON dict."""
    start = time.perf_counter()
    rows = conn.execute("SELECT seq, kind, payload FROM events WHERE run_id=? ORDER BY seq", (run_id,)).fetchall()
    [(seq, kind, json.loads(payload)) for seq, kind, payload in rows]
    return time.perf_counter() - start


def timed(store: EventStore, run_id: str, fold: Callable[[list[Event]], object], *, with_read: bool) -> float:
    """Seconds to fold the run's events, read fresh from the store (the read counted only ``with_read``)."""
    start = time.perf_counter()
    events = store.events(run_id)
    if not with_read:
        start = time.perf_counter()
    fold(events)
    return time.perf_counter() - start


def control_fold(events: list[Event]) -> None:
    RunFold().extend(events)


def best(once: Callable[[], float]) -> float:
    return min(once() for _ in range(REPEAT))


def main(n: int = 2000, batch_n: int = 50_000, mix_turns: int = 3000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = raw_inserts(Path(tmp) / "raw.db", n)
        store = EventStore.open(Path(tmp) / "tether.db")
        run = store.create_run("bench")
        store.append(run, "run.started", {"task": "bench"})
        start = time.perf_counter()
        for _ in range(n):
            store.append(run, "model.requested", PAYLOAD)
        durable = n / (time.perf_counter() - start)

        run2 = store.create_run("bench-batch")
        store.append(run2, "run.started", {"task": "bench"})
        start = time.perf_counter()
        for _ in range(batch_n // 500):
            store.append_many(run2, [("model.requested", PAYLOAD)] * 500)
        batched = batch_n / (time.perf_counter() - start)

        events = store.events(run2)
        start = time.perf_counter()
        RunState.from_events(events)
        fold = len(events) / (time.perf_counter() - start)

        start = time.perf_counter()
        count = store.verify(run2)
        verify = count / (time.perf_counter() - start)

        run3 = store.create_run("bench-mix")
        store.append(run3, "run.started", {"task": "bench"})
        for i in range(mix_turns // 100):
            store.append_many(run3, [item for t in range(100) for item in turn(i * 100 + t)])
        n_mix = len(store.events(run3))

        mixed = n_mix / best(lambda: timed(store, run3, RunState.from_events, with_read=False))
        control = n_mix / best(lambda: timed(store, run3, control_fold, with_read=False))
        raw = sqlite3.connect(Path(tmp) / "tether.db")
        dicts = n_mix / best(lambda: read_dicts(raw, run3))
        raw.close()
        read_mixed = n_mix / best(lambda: timed(store, run3, RunState.from_events, with_read=True))
        read_control = n_mix / best(lambda: timed(store, run3, control_fold, with_read=True))

    print(f"raw sqlite3 insert (WAL, synchronous=FULL): {base:>10,.0f} /s")
    print(
        f"tether durable append:                      {durable:>10,.0f} /s   ratio {durable / base:.2f}x (aim >= 0.80)"
    )
    print(f"tether batched append (500 per commit):     {batched:>10,.0f} /s")
    print(f"fold (RunState.from_events):                {fold:>10,.0f} events/s")
    print(f"fold of a run's mix of kinds (RunState):    {mixed:>10,.0f} events/s")
    print(f"control fold of that mix (RunFold):         {control:>10,.0f} events/s")
    print(f"read rows as JSON dicts (sqlite3 + json):   {dicts:>10,.0f} events/s")
    print(f"read + fold of the mix (RunState):          {read_mixed:>10,.0f} events/s   {read_mixed / dicts:.2f}x")
    print(f"read + control fold of the mix (RunFold):   {read_control:>10,.0f} events/s   {read_control / dicts:.2f}x")
    print(f"verify (hash chain):                        {verify:>10,.0f} events/s (aim >= 100,000)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
