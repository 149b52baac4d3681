"""A run's and a fork's creation (StoreBase._create: the run's row, its first events, its lease, one transaction)
attacked on both stores with real processes: two forking one base at once, a fork of a fork at its base's head, a
fork whose base is being appended to, a fork named by its parent's id prefix, and a creator SIGKILLed inside its
transaction (before its commit, and after it, before its heartbeat started): never a run without its first events,
never a lease a dead creator keeps from the next driver."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pgkit import Postgres

from tether.errors import InputError, RunLeased
from tether.events import Store, open_store
from tether.events.kinds import RunForked

STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})
TIMEOUT_S = 120.0


def turn(i: int) -> tuple[str, dict[str, object]]:
    return ("model.requested", {"turn": i, "model": "scripted:x"})


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "tether.db")
    postgres: Postgres = request.getfixturevalue("postgres")
    return postgres.tether_store()


@pytest.fixture
def opened(where: str, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Another store on the same log each call (another connection: another process's view), closed at the end."""
    stores: list[Store] = []

    def another() -> Store:
        stores.append(open_store(where, local=tmp_path))
        return stores[-1]

    yield another
    for store in stores:
        store.close()


def _forked(store: Store, parent: str, at: int) -> RunForked:
    base = store.events(parent, after=at - 1, upto=at)[0]
    return RunForked(parent_run=parent, at_seq=at, parent_hash=base.hash, workspace="/w", by="t")


def test_a_fork_named_by_its_parents_prefix_is_its_parents_fork(opened: Callable[[], Store]) -> None:
    """The parent is found by a unique prefix, as every run is; the fork's run.forked names the parent's id, so its
    log is the parent's prefix and its own events (it named the prefix, and read as its own events alone, which
    failed to verify: 'event seq 0: missing or reordered event')."""
    store = opened()
    parent = store.create_run("p", [STARTED, turn(1), turn(2)])
    fork = store.create_fork("f", _forked(store, parent, 1).model_copy(update={"parent_run": parent[:12]}))
    assert [(e.run_id, e.seq) for e in store.events(fork)] == [(parent, 0), (parent, 1), (fork, 2)]
    assert store.events(fork)[-1].payload["parent_run"] == parent
    assert store.verify(fork) == 3


def test_a_fork_of_a_fork_at_its_bases_head(opened: Callable[[], Store]) -> None:
    """A fork of a fork, at the seq where the first fork left its base (an event of the base), and at the first fork's
    own run.forked: each log is its lineage's events, and verifies."""
    store = opened()
    base = store.create_run("b", [STARTED, turn(1), turn(2)])
    first = store.create_fork("f1", _forked(store, base, 2), [turn(3)])
    at_base = store.create_fork("f2", _forked(store, first, 2), [turn(9)])
    at_fork = store.create_fork("f3", _forked(store, first, 3))
    assert [(e.run_id, e.seq) for e in store.events(at_base)] == [
        (base, 0),
        (base, 1),
        (base, 2),
        *((at_base, s) for s in (3, 4)),
    ]
    assert [(e.run_id, e.seq) for e in store.events(at_fork)] == [
        (base, 0), (base, 1), (base, 2), (first, 3), (at_fork, 4)
    ]  # fmt: skip
    assert [store.verify(r) for r in (base, first, at_base, at_fork)] == [3, 5, 5, 5]
    with pytest.raises(InputError, match="no event seq 5"):
        store.create_fork("f4", RunForked(parent_run=first, at_seq=5, parent_hash="0" * 64, workspace="/w"))


FORKER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from tether.errors import RunExists
    from tether.events import open_store
    from tether.events.kinds import RunForked
    db, parent, at, h, run_id, go = sys.argv[1:7]
    with open_store(db, create=False, local=Path(go).parent) as store:
        forked = RunForked(parent_run=parent, at_seq=int(at), parent_hash=h, workspace="/w")
        while not os.path.exists(go):
            time.sleep(0.001)
        try:
            made = store.create_fork("f", forked, [("model.requested", {"turn": 9, "model": "x"})],
                                     run_id=run_id or None, lease=True)
        except RunExists:
            print("exists", flush=True)
        else:
            print("made", made, store.holds(made), flush=True)
            sys.stdin.read()  # hold the lease until the test has looked
    """
)


@pytest.mark.parametrize("same_id", [True, False], ids=["one-id", "own-ids"])
def test_processes_forking_one_base_at_once(
    where: str, opened: Callable[[], Store], tmp_path: Path, same_id: bool
) -> None:
    """Four processes fork one base at one instant, each taking the fork's lease: named one id, exactly one makes it
    (the others: RunExists) and holds its lease; each with its own id, all four are made, each holding its own."""
    store = opened()
    base = store.create_run("b", [STARTED, turn(1)])
    forked = _forked(store, base, 1)
    go = tmp_path / "go"
    name = "fork-of-b" if same_id else ""
    forkers = [
        subprocess.Popen(
            [sys.executable, "-c", FORKER, where, base, "1", forked.parent_hash, name, str(go)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        time.sleep(1.0)  # let them connect; a slow one only races less
        go.touch()
        said = [p.stdout.readline().split() for p in forkers if p.stdout is not None]
        made = [s for s in said if s[0] == "made"]
        assert len(made) == (1 if same_id else 4) and len(said) == 4
        assert all(s == ["exists"] for s in said if s[0] != "made")
        other = opened()
        for _, fork, holds in made:
            assert holds == "True"
            with pytest.raises(RunLeased):
                other.acquire(fork)
            assert store.verify(fork) == 4 and store.run(fork).parent_run == base
        assert len(store.runs()) == 1 + len(made)
    finally:
        for p in forkers:
            p.kill()
            p.wait()


APPENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tether.events import open_store
    db, run, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open_store(db, create=False, local=Path(sys.argv[4])) as store:
        for i in range(n):
            store.append(run, "model.requested", {"turn": i, "model": "x"})
    """
)


def test_a_fork_whose_base_is_being_appended_to(where: str, opened: Callable[[], Store], tmp_path: Path) -> None:
    """Forks made at the base's head as another process appends to it: each has the base's events up to its fork
    point and its own, and verifies; the base verifies whole."""
    store = opened()
    base = store.create_run("b", [STARTED])
    appender = subprocess.Popen([sys.executable, "-c", APPENDER, where, base, "60", str(tmp_path)])
    forks: list[tuple[str, int]] = []
    try:
        while appender.poll() is None or not forks:
            at = store.head(base)[0]
            forks.append((store.create_fork("f", _forked(store, base, at), [turn(99)]), at))
        assert appender.wait(timeout=TIMEOUT_S) == 0
    finally:
        appender.kill()
        appender.wait()
    assert store.verify(base) == 61
    for fork, at in forks:
        assert [e.run_id for e in store.events(fork)] == [base] * (at + 1) + [fork] * 2
        assert store.verify(fork) == at + 3


CREATOR = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from tether.events import open_store
    db, local, run_id, where, fork = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    store = open_store(db, create=False, local=local)
    step = getattr(store, where)

    def killed(*args, **kwargs):
        out = step(*args, **kwargs)
        print("killing", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return out

    setattr(store, where, killed)
    first = [("run.started", {"task": "t", "budgets": {"turns": 10}})]
    if fork:
        from tether.events.kinds import RunForked
        parent, h = fork.split(":")
        store.create_fork("f", RunForked(parent_run=parent, at_seq=0, parent_hash=h, workspace="/w"),
                          run_id=run_id, lease=True)
    else:
        store.create_run("t", first, run_id=run_id, lease=True)
    """
)


@pytest.mark.parametrize("fork", [False, True], ids=["run", "fork"])
@pytest.mark.parametrize("where_killed", ["_insert_run", "_append_locked", "_lease_locked"])
def test_a_creator_killed_inside_its_transaction_leaves_nothing(
    where: str, opened: Callable[[], Store], tmp_path: Path, where_killed: str, fork: bool
) -> None:
    """SIGKILLed after its run's row, after its first events, after its lease row, all before the commit: no run,
    no lease; the id is free for the next creator, who takes the lease."""
    store = opened()
    spec = ""
    if fork:
        parent = store.create_run("p", [STARTED])
        spec = f"{parent}:{store.head(parent)[1]}"
    done = subprocess.run(
        [sys.executable, "-c", CREATOR, where, str(tmp_path), "r-killed", where_killed, spec],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == -signal.SIGKILL and done.stdout.strip() == "killing", done.stderr
    with pytest.raises(InputError, match="no run"):
        store.run("r-killed")
    assert store.lease("r-killed") is None
    assert "r-killed" not in [r.run_id for r in store.runs()]
    made = opened().create_run("t", [STARTED], run_id="r-killed", lease=True)
    assert store.verify(made) == 1


def test_a_creator_killed_before_its_heartbeat_does_not_keep_the_lease(
    where: str, opened: Callable[[], Store], tmp_path: Path
) -> None:
    """SIGKILLed once its creation committed, before its heartbeat started: the run is whole, and its lease row names
    a process that is gone, so the next driver takes it at once."""
    store = opened()
    done = subprocess.run(
        [sys.executable, "-c", CREATOR, where, str(tmp_path), "r-killed", "_start_heartbeat", ""],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert store.verify("r-killed") == 1
    held = store.lease("r-killed")
    assert held is not None
    taken = opened().acquire("r-killed")
    assert taken.owner != held.owner
