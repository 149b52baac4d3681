"""events.protocol.has_run: a run of exactly this id, where Store.run also answers a unique prefix of one."""

from __future__ import annotations

from pathlib import Path

from tether.events.protocol import has_run
from tether.events.store import EventStore

STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})


def test_only_the_exact_id_of_a_run_is_held(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "tether.db") as store:
        run = store.create_run("t", [STARTED])
        assert store.run(run[:6]).run_id == run  # a prefix finds the run ...
        assert has_run(store, run)
        other_last = run[:-1] + ("1" if run.endswith("0") else "0")
        for other in (run[:6], run[:-1], run + "x", "", "no-such-run", other_last):  # ... but is not its id
            assert not has_run(store, other), other
