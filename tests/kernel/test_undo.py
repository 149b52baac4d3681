"""``tether undo`` end to end: real runs (file tools and shell commands), real files, the CLI in a subprocess.

Every refusal is checked to change nothing: the workspace tree (every path's kind, bytes and mode) and the
log's length are compared before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from runkit import FINISH, FIX, recompile, tether, write_script

from tether import EventStore, Harness, ToolResult, tool
from tether.events.kinds import ActionStarted, RunForked, RunStarted
from tether.events.kinds_files import FileChange
from tether.kernel.undo import STAGING_PREFIX, Selection, UndoFailed, undo

SHELL_1 = "echo x > src/f.txt; rm src/g.txt; mkdir src/d; echo y > src/d/new.txt"
SHELL_2 = "chmod +x src/h.sh; ln -s f.txt src/link; printf '\\000\\377' > src/bin.dat"
BINARY = bytes(range(256))


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "args": {"command": command}}]}


def tree(ws: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every file and symlink under the workspace (tether's and git's directories aside): kind, bytes, mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__", ".pytest_cache", ".benchmarks")]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath, name)
            st = p.lstat()
            rel = p.relative_to(ws).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p).encode(), 0)
            else:
                out[rel] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def events(db: Path, run: str) -> list[Any]:
    with EventStore.open(db, readonly=True) as store:
        return store.events(run)


def completed(db: Path, run: str) -> dict[str, int]:
    """call id -> seq of its action.completed."""
    return {e.payload["call_id"]: e.seq for e in events(db, run) if e.kind == "action.completed"}


def undo_cli(bugfix: Path, run_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    return tether("undo", run_id, "--db", str(bugfix / "t.db"), *args)


@pytest.fixture
def shell_run(bugfix: Path) -> tuple[Path, str, dict[str, tuple[str, bytes, int]]]:
    """A run that changes the workspace with two shell commands and a file tool; the tree before it."""
    ws = bugfix / "project"
    (ws / "src" / "g.txt").write_text("g\n")
    (ws / "src" / "h.sh").write_text("#!/bin/sh\n")
    (ws / "src" / "bin.dat").write_bytes(BINARY)
    before = tree(ws)
    write_script(bugfix, [bash(SHELL_1), bash(SHELL_2), {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    proc = tether(
        "run", "fix it", "-e", str(bugfix / "envelope.yaml"), "--db", str(bugfix / "t.db"), "--sandbox", "local"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with EventStore.open(bugfix / "t.db", readonly=True) as store:
        run_id = store.runs()[0].run_id
    after = tree(ws)
    assert after["src/link"] == ("link", b"f.txt", 0) and after["src/bin.dat"][1] == b"\0\377"
    assert "src/g.txt" not in after and after["src/h.sh"][2] & 0o111
    return bugfix, run_id, before


def calls(db: Path, run_id: str) -> list[str]:
    return list(completed(db, run_id))


def test_undo_of_the_whole_run_restores_every_file_created_deleted_modified_and_chmodded(shell_run: Any) -> None:
    bugfix, run_id, before = shell_run
    ws = bugfix / "project"
    proc = undo_cli(bugfix, run_id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tree(ws) == before  # bytes, modes, the binary file, the symlink gone, the deleted file back
    assert not (ws / "src" / "d").exists()  # the directory the removals left empty is gone, as git does
    assert not list(ws.glob(STAGING_PREFIX + "*"))
    log = events(bugfix / "t.db", run_id)
    receipt = log[-1]
    assert receipt.kind == "run.undone" and receipt.payload["scope"] == "run"
    assert {f["path"] for f in receipt.payload["files"]} == {
        "src/bin.dat", "src/d/new.txt", "src/f.txt", "src/g.txt", "src/h.sh", "src/link", "src/stats/core.py"
    }  # fmt: skip
    g = next(f for f in receipt.payload["files"] if f["path"] == "src/g.txt")
    assert g["before"] is None and g["after"]["kind"] == "file"  # who, what, each file with both hashes
    assert tether("log", "verify", run_id, "--db", str(bugfix / "t.db")).returncode == 0


def test_undo_of_one_shell_action_takes_back_only_its_changes(shell_run: Any) -> None:
    bugfix, run_id, before = shell_run
    ws = bugfix / "project"
    second = calls(bugfix / "t.db", run_id)[1]
    proc = undo_cli(bugfix, run_id, "--action", second)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    now = tree(ws)
    assert now["src/bin.dat"] == before["src/bin.dat"]  # binary content back
    assert now["src/h.sh"] == before["src/h.sh"] and not now["src/h.sh"][2] & 0o111  # mode back
    assert "src/link" not in now  # the symlink it created is removed
    assert now["src/f.txt"] == ("file", b"x\n", now["src/f.txt"][2])  # the first command's changes stay
    assert now["src/stats/core.py"] != before["src/stats/core.py"]  # the later fix stays


def test_undo_to_a_seq_restores_the_workspace_as_it_was_then(shell_run: Any) -> None:
    bugfix, run_id, before = shell_run
    ws = bugfix / "project"
    first = calls(bugfix / "t.db", run_id)[0]
    at = completed(bugfix / "t.db", run_id)[first]
    proc = undo_cli(bugfix, run_id, "--to", str(at))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    now = tree(ws)
    assert now["src/stats/core.py"] == before["src/stats/core.py"]  # the fix, after the seq: undone
    assert now["src/h.sh"] == before["src/h.sh"] and "src/link" not in now
    assert now["src/f.txt"][1] == b"x\n" and "src/g.txt" not in now  # the first command, at or before it: kept


def test_undo_twice_is_a_clear_no_op(shell_run: Any) -> None:
    bugfix, run_id, before = shell_run
    assert undo_cli(bugfix, run_id).returncode == 0
    n = len(events(bugfix / "t.db", run_id))
    again = undo_cli(bugfix, run_id)
    assert again.returncode == 0 and "already undone" in again.stdout
    assert len(events(bugfix / "t.db", run_id)) == n and tree(bugfix / "project") == before


def test_a_file_changed_outside_the_run_refuses_the_undo_and_changes_nothing(shell_run: Any) -> None:
    bugfix, run_id, _ = shell_run
    ws = bugfix / "project"
    (ws / "src" / "f.txt").write_text("edited by a human\n")
    (ws / "src" / "g.txt").write_text("recreated by a human\n")
    snapshot, n = tree(ws), len(events(bugfix / "t.db", run_id))
    proc = undo_cli(bugfix, run_id, "--json")
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert not out["ok"] and len(out["refusals"]) == 2
    f = next(r for r in out["refusals"] if r.startswith("src/f.txt"))
    assert "changed outside the run" in f and "expected sha256:" in f and "found sha256:" in f
    assert any(r.startswith("src/g.txt") and "expected absent, found sha256:" in r for r in out["refusals"])
    assert tree(ws) == snapshot and len(events(bugfix / "t.db", run_id)) == n


def test_undo_of_one_action_that_a_later_action_overwrote_is_refused(bugfix: Path) -> None:
    ws = bugfix / "project"
    write_script(bugfix, [bash("echo 1 > src/n.txt"), bash("echo 2 > src/n.txt"), {"tool_calls": [FINISH]}] * 1)
    tether("run", "t", "-e", str(bugfix / "envelope.yaml"), "--db", str(bugfix / "t.db"), "--sandbox", "local")
    with EventStore.open(bugfix / "t.db", readonly=True) as store:
        run_id = store.runs()[0].run_id
    first, second = calls(bugfix / "t.db", run_id)[:2]
    snapshot = tree(ws)
    proc = undo_cli(bugfix, run_id, "--action", first)
    assert proc.returncode == 1 and f"changed again by the later action {second}" in proc.stdout
    assert tree(ws) == snapshot
    assert undo_cli(bugfix, run_id, "--action", second).returncode == 0
    assert (ws / "src" / "n.txt").read_text() == "1\n"
    assert undo_cli(bugfix, run_id, "--action", first).returncode == 0  # the later one is undone now
    assert not (ws / "src" / "n.txt").exists()


def _publish_envelope(bugfix: Path) -> Path:
    env = bugfix / "envelope.yaml"
    contract = "  - name: publish\n    purpose: Publish a release note.\n    effects: [write, network]\n"
    contract += "    timeout_s: 5\n    idempotent: false\n    on_failure: return_error\n"
    contract += "    evidence: [changed_files]\n    rollback: none (a published note cannot be unpublished)\n"
    text = env.read_text().replace("\npermissions:", "\n" + contract + "\npermissions:", 1)
    rule = "    - id: allow-publish\n      rule: publish\n      reason: under test\n      match: [{}]\n"
    text = text.replace("  allow:\n", "  allow:\n" + rule)
    text = text.replace("max_external: 0", "max_external: 5")  # the limit is another test's subject
    env.write_text(text)
    recompile(env)
    return env


def test_an_action_with_an_external_effect_refuses_the_undo_and_says_why(bugfix: Path) -> None:
    ws = bugfix / "project"

    @tool(effects=["write", "network"], idempotent=False, timeout_s=5)
    def publish() -> ToolResult:
        """Publishes a note (writes a local copy too)."""
        (ws / "src" / "NOTE.md").write_text("released\n")
        return ToolResult(ok=True, content="published", changed_files=("src/NOTE.md",))

    env = _publish_envelope(bugfix)
    publish_call = {"tool_calls": [{"name": "publish", "args": {}}]}
    write_script(bugfix, [{"tool_calls": [FIX]}, publish_call, bash("echo z > src/z.txt")])
    contract = Harness(env, db=bugfix / "t.db", sandbox="local", tools=[publish]).run("fix and publish")
    run_id = contract.run_id
    fix, pub = calls(bugfix / "t.db", run_id)[:2]
    snapshot, n = tree(ws), len(events(bugfix / "t.db", run_id))
    proc = undo_cli(bugfix, run_id)
    assert proc.returncode == 1
    assert f"{pub} (publish" in proc.stdout and "network" in proc.stdout and "cannot be taken back" in proc.stdout
    assert tree(ws) == snapshot and len(events(bugfix / "t.db", run_id)) == n
    shown = json.loads(tether("show", run_id, "--db", str(bugfix / "t.db"), "--json").stdout)["undo"]
    assert shown[fix] == "undoable: 1 file" and shown[pub].startswith("not undoable: its effect network")
    # what came after the publish can still be taken back
    proc = undo_cli(bugfix, run_id, "--to", str(completed(bugfix / "t.db", run_id)[pub]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (ws / "src" / "z.txt").exists() and (ws / "src" / "NOTE.md").exists()


def test_show_marks_each_action_undoable_or_why_not(shell_run: Any) -> None:
    bugfix, run_id, _ = shell_run
    proc = tether("show", run_id, "--db", str(bugfix / "t.db"))
    assert "undoable: 3 files" in proc.stdout and "undoable: 1 file" in proc.stdout
    assert "nothing to undo: it changed no file" in proc.stdout
    undo_cli(bugfix, run_id)
    proc = tether("show", run_id, "--db", str(bugfix / "t.db"))
    assert "undone by" in proc.stdout and "undone (seq" in proc.stdout


def test_a_failure_while_applying_puts_every_path_back(shell_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    bugfix, run_id, _ = shell_run
    ws = bugfix / "project"
    snapshot = tree(ws)
    real_rename, seen = os.rename, []

    def failing_rename(src: Any, dst: Any, **kw: Any) -> None:
        seen.append(dst)
        if len(seen) == 4:
            raise OSError(28, "No space left on device", str(dst))
        real_rename(src, dst, **kw)

    monkeypatch.setattr(os, "rename", failing_rename)
    with EventStore.open(bugfix / "t.db") as store, pytest.raises(UndoFailed, match="every path was put back"):
        undo(store, run_id)
    monkeypatch.setattr(os, "rename", real_rename)
    assert tree(ws) == snapshot and not list(ws.glob(STAGING_PREFIX + "*"))
    assert events(bugfix / "t.db", run_id)[-1].kind != "run.undone"


CRASH = """
import os, sys
from pathlib import Path
from tether import EventStore
from tether.kernel.undo import undo
real, n = os.rename, [0]
def rename(src, dst, **kw):
    n[0] += 1
    if n[0] == 4:
        os._exit(9)  # the process dies between two renames
    real(src, dst, **kw)
os.rename = rename
undo(EventStore.open(Path(sys.argv[1])), sys.argv[2])
"""


def test_a_crash_mid_undo_leaves_no_partial_file_and_a_second_undo_finishes(shell_run: Any) -> None:
    bugfix, run_id, before = shell_run
    ws = bugfix / "project"
    after = tree(ws)
    proc = subprocess.run([sys.executable, "-c", CRASH, str(bugfix / "t.db"), run_id], capture_output=True)
    assert proc.returncode == 9, proc.stderr
    middle = {p: e for p, e in tree(ws).items() if not p.startswith(STAGING_PREFIX)}  # staged copies: swept later
    assert list(ws.glob(STAGING_PREFIX + "*"))
    assert middle != after and middle != before  # cut off half-way ...
    for path, entry in middle.items():  # ... yet every file is whole: the old version or the restored one
        assert entry in (after.get(path), before.get(path)), path
    proc = undo_cli(bugfix, run_id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tree(ws) == before and not list(ws.glob(STAGING_PREFIX + "*"))


def test_undo_never_writes_through_a_symlink_planted_since(bugfix: Path, tmp_path: Path) -> None:
    ws = bugfix / "project"
    (ws / "src" / "sub").mkdir()
    (ws / "src" / "sub" / "g.txt").write_text("g\n")
    write_script(bugfix, [bash("rm -r src/sub"), {"tool_calls": [FINISH]}])
    tether("run", "t", "-e", str(bugfix / "envelope.yaml"), "--db", str(bugfix / "t.db"), "--sandbox", "local")
    with EventStore.open(bugfix / "t.db", readonly=True) as store:
        run_id = store.runs()[0].run_id
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "src" / "sub").symlink_to(outside)
    proc = undo_cli(bugfix, run_id)
    assert proc.returncode == 3 and "put back" in proc.stderr
    assert list(outside.iterdir()) == [] and (ws / "src" / "sub").is_symlink()


def test_a_fork_undoes_in_its_own_workspace_and_leaves_the_parent_alone(shell_run: Any, tmp_path: Path) -> None:
    bugfix, run_id, before = shell_run
    ws, copy = bugfix / "project", tmp_path / "fork-ws"
    shutil.copytree(ws, copy, symlinks=True)  # the workspace as materialised at the fork point
    parent_tree = tree(ws)
    with EventStore.open(bugfix / "t.db") as store:
        head = store.events(run_id)[-1]
        fork = store.create_fork(
            "t", RunForked(parent_run=run_id, at_seq=head.seq, parent_hash=head.hash, workspace=str(copy))
        )
    proc = undo_cli(bugfix, fork)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tree(copy) == before and tree(ws) == parent_tree
    assert tether("log", "verify", fork, "--db", str(bugfix / "t.db")).returncode == 0
    assert undo_cli(bugfix, run_id).returncode == 0 and tree(ws) == before  # the parent's own undo is untouched


def test_a_run_being_driven_refuses_the_undo(shell_run: Any) -> None:
    bugfix, run_id, _ = shell_run
    snapshot = tree(bugfix / "project")
    with EventStore.open(bugfix / "t.db") as driver:
        driver.acquire(run_id)  # a live driver holds the run
        proc = undo_cli(bugfix, run_id)
        driver.release(run_id)
    assert proc.returncode == 3 and "is being driven by" in proc.stderr, proc.stderr
    assert tree(bugfix / "project") == snapshot
    assert undo_cli(bugfix, run_id).returncode == 0  # once the driver is gone


def test_an_action_that_never_completed_cannot_be_undone(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db", create=True) as store:
        run_id = store.create_run("t", [RunStarted(task="t", workspace=str(tmp_path))])
        store.append(run_id, ActionStarted(call_id="c1", tool="bash", args_hash="h"))
        out = undo(store, run_id)
    assert not out.ok and "never completed: what it changed is unknown" in out.refusals[0]


def test_a_receipt_cannot_name_a_path_outside_the_workspace() -> None:
    for bad in ("../etc/passwd", "/etc/passwd", "a/../../b", "a//b", "./a"):
        with pytest.raises(ValidationError):
            FileChange(path=bad, before=None, after=None)


def test_bad_selections_are_input_errors(shell_run: Any) -> None:
    bugfix, run_id, _ = shell_run
    assert undo_cli(bugfix, run_id, "--action", "nope").returncode == 2
    assert undo_cli(bugfix, run_id, "--to", "100000").returncode == 2
    assert undo_cli(bugfix, run_id, "--to", "3", "--action", "x").returncode == 2
    with pytest.raises(Exception, match="at most one"):
        Selection(to_seq=1, call_id="x")
