"""Lifecycle commands on a big workspace: a run of 200 actions on a 10,000-file workspace.

:func:`build` makes the run the way the kernel logs one (a baseline snapshot, then for each action a
snapshot window through the watch, its ``action.rollback`` receipt and ``action.completed``), so the
numbers include reading the real log and the real blobs. Each action changes one file: most modify,
every fifth creates one (in a new directory, every tenth), every seventh deletes one, every eleventh
makes a script executable.

Prints, for ``tether undo`` of the whole run (200 actions), of the last 20 (``--to``) and of one
action: the time, and its ratio to two baselines measured in the same run — restoring the same files
with plain ``open().write()`` and no checks (the least any undo must do), and one full snapshot walk
of the workspace (what an undo that re-read the tree would pay). Aim: under 1 s for the whole run.

Prints, for ``tether fork`` at the end of the same run: the time to log the fork (it shares the parent's
log, so this is one row), rebuild the workspace as it was there from the log (``workspace_at``) and
write it into a new directory from the blobs (``materialise``), against ``shutil.copytree`` of the
live workspace (what a fork that copied the directory would pay at least). Aim: under 1 s. And for
``tether export``: the package's size when the run is cut after 0, half and all of its actions (forks at
those points, exported), and the growth per action against the bytes each action changed and the
workspace's size: it should follow the changed bytes.

    python benchmarks/lifecycle.py [--files N] [--actions N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.events.kinds import ActionCompleted, ActionProposed, ActionStarted, Checkpoint, RunForked, RunStarted
from tether.events.store import EventStore
from tether.kernel.fork import workspace_at
from tether.kernel.snapshots import Snapshots
from tether.kernel.undo import Selection, rollback_receipt, undo
from tether.observe.episode import export_run
from tether.snapshot import materialise, take


def make_workspace(root: Path, files: int) -> Path:
    ws = root / "ws"
    for i in range(files):
        d = ws / f"pkg{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i % 100:02d}.py").write_text(f"# module {i}\nVALUE = {i}\n" + "x = 1\n" * 20)
    return ws


def act(ws: Path, i: int) -> None:
    """Action ``i``'s change to the workspace."""
    if i % 5 == 0:
        d = ws / ("new" if i % 10 else f"new{i}")
        d.mkdir(exist_ok=True)
        (d / f"created{i}.py").write_text(f"created = {i}\n")
    elif i % 7 == 0:
        (ws / f"pkg{i % 100:03d}" / f"m{i % 100:02d}.py").unlink(missing_ok=True)
    elif i % 11 == 0:
        os.chmod(ws / f"pkg{(i + 1) % 100:03d}" / "m01.py", 0o755)
    else:
        p = ws / f"pkg{(i * 37) % 100:03d}" / f"m{(i * 13) % 100:02d}.py"
        if p.exists():
            p.write_text(p.read_text() + f"# edited by action {i}\n")


def build(root: Path, files: int = 10_000, actions: int = 200) -> tuple[EventStore, str, Path]:
    """A store under ``root`` holding one run of ``actions`` actions on a ``files``-file workspace."""
    ws = make_workspace(root, files)
    store = EventStore.open(root / "t.db", create=True)
    snaps = Snapshots(store, ws, None)
    baseline, _ = snaps.take_baseline()
    run_id = store.create_run(
        "bench", [RunStarted(task="bench", workspace=str(ws)), Checkpoint(label="start", snapshot=baseline)]
    )
    for i in range(actions):
        call = f"c{i}"
        store.append(run_id, ActionProposed(call_id=call, tool="bash", args_hash="h", turn=i))
        store.append(run_id, ActionStarted(call_id=call, tool="bash", args_hash="h"))
        before = snaps.latest
        assert before is not None
        act(ws, i)
        after = snaps.take()
        receipt = rollback_receipt(call, before, after)
        done = ActionCompleted(
            call_id=call,
            tool="bash",
            ok=True,
            result={"content": "ok", "effects": ["exec"]},
            observed_files=[f.path for f in receipt.files] if receipt else [],
        )
        store.append_many(run_id, [done] if receipt is None else [receipt, done], durable=False)
    snaps.close()
    return store, run_id, ws


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def undo_once(label: str, files: int, actions: int, pick: Callable[[list[int]], Selection]) -> None:
    """Build the run, undo ``pick(completion seqs)`` of it, and print the time against the two baselines."""
    with tempfile.TemporaryDirectory() as tmp:
        store, run_id, ws = build(Path(tmp), files, actions)
        selection = pick([e.seq for e in store.events(run_id) if e.kind == ActionCompleted.KIND])
        t0 = time.perf_counter()
        out = undo(store, run_id, selection)
        took = time.perf_counter() - t0
        store.close()
        assert out.ok and out.seq is not None, out.refusals
        restored = [(ws / f.path, b"x" * (f.after.size if f.after else 0)) for f in out.restored]
        raw = timed(lambda: [p.parent.mkdir(parents=True, exist_ok=True) or p.write_bytes(b) for p, b in restored])
        walk = timed(lambda: take(ws))
    print(
        f"undo {label}: {took * 1000:.0f} ms for {len(restored)} files "
        f"({took / max(raw, 1e-9):.1f}x plain writes of the same files, {took / walk:.2f}x one full walk "
        f"of the {files}-file workspace at {walk * 1000:.0f} ms)" + ("" if took < 1 else "  ABOVE the 1 s aim")
    )


def undo_lines(files: int, actions: int) -> None:
    undo_once(f"whole run ({actions} actions)", files, actions, lambda ends: Selection())
    undo_once("last 20 actions (--to)", files, actions, lambda ends: Selection(to_seq=ends[-21]))
    undo_once("one action (--action)", files, actions, lambda ends: Selection(call_id=f"c{actions - 2}"))


def fork_and_export_lines(files: int, actions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store, run_id, ws = build(Path(tmp), files, actions)
        fork_line(store, run_id, ws, Path(tmp))
        export_line(store, run_id, ws, Path(tmp))
        store.close()


def fork_line(store: EventStore, run_id: str, ws: Path, tmp: Path) -> None:
    log = store.events(run_id)
    head, dest = log[-1], tmp / "fork"

    def fork() -> None:
        forked = RunForked(parent_run=run_id, at_seq=head.seq, parent_hash=head.hash, workspace=str(dest))
        store.create_fork("bench", forked)
        materialise(workspace_at(store, store.events(run_id)), store, dest)

    took = timed(fork)
    copy = timed(lambda: shutil.copytree(ws, tmp / "copy"))
    files = sum(1 for p in dest.rglob("*") if p.is_file())
    actions = sum(1 for e in log if e.kind == ActionCompleted.KIND)
    print(
        f"fork at the end of {actions} actions: {took * 1000:.0f} ms to log it and rebuild the {files}-file "
        f"workspace from the log ({took / copy:.2f}x shutil.copytree of the workspace at {copy * 1000:.0f} ms)"
        + ("" if took < 1 else "  ABOVE the 1 s aim")
    )


def export_line(store: EventStore, run_id: str, ws: Path, tmp: Path) -> None:
    log = store.events(run_id)
    ends = [e.seq for e in log if e.kind == ActionCompleted.KIND]
    actions = len(ends)
    changed = sum(
        f["after"]["size"] for e in log if e.kind == "action.rollback" for f in e.payload["files"] if f["after"]
    )
    workspace = sum(p.stat().st_size for p in ws.rglob("*") if p.is_file())
    sizes = []
    for cut in (0, actions // 2, actions):
        at = ends[cut - 1] if cut else 1  # 1: the start checkpoint, before any action
        forked = RunForked(parent_run=run_id, at_seq=at, parent_hash=log[at].hash, workspace="/bench")
        out = tmp / f"p{cut}.tar.gz"
        manifest = export_run(store, store.create_fork("bench", forked), out, environ={})
        sizes.append((cut, out.stat().st_size, sum(f["size"] for f in manifest["files"].values())))
    (_, z0, r0), (n, zn, rn) = sizes[0], sizes[-1]
    print(
        "export size after 0, half, all actions: "
        + ", ".join(f"{c}: {z / 1024:.0f} KiB ({r / 1024:.0f} KiB unpacked)" for c, z, r in sizes)
        + f"; per action {(rn - r0) / n / 1024:.2f} KiB unpacked, {(zn - z0) / n / 1024:.2f} KiB packed, "
        f"for {changed / actions / 1024:.2f} KiB of changed files per action on a {workspace / 1024:.0f} KiB workspace"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--actions", type=int, default=200)
    args = ap.parse_args()
    undo_lines(args.files, args.actions)
    fork_and_export_lines(args.files, args.actions)


if __name__ == "__main__":
    main()
