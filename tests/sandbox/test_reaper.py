"""The local sandbox as a child subreaper: leftovers come back to tether and are killed, and only they."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from test_sandbox_conformance import DOUBLE_FORK

from tether.sandbox import BwrapSandbox, LocalSandbox
from tether.sandbox.doctor import kill_all, survivors
from tether.sandbox.reaper import become_subreaper, children, is_subreaper, stat_fields
from tether.sandbox.receipt import Receipt

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="Linux only")

ORPHAN = (
    "( setsid env -i /bin/bash -c 'echo $$ > orphan.pid; exec -a {marker} sleep 1000' >/dev/null 2>&1 & ); "
    "for i in $(seq 1 500); do [ -s orphan.pid ] && break; sleep 0.01; done"
)
"""A double-forked ``sleep`` in a new session with no environment, whose parent exits at once."""


def test_local_sandbox_makes_tether_a_subreaper() -> None:
    box = LocalSandbox()
    assert box.subreaper and is_subreaper()


def test_without_the_reaping_step_the_orphan_survives(workspace: Path) -> None:
    """The control experiment: the same command leaves a live process when leftovers are not reaped."""
    box = LocalSandbox()
    box.subreaper = False  # keep the kernel's reparenting, skip tether's kill
    marker = "tether-test-control-" + secrets.token_hex(6)
    r = box.run(ORPHAN.format(marker=marker), cwd=workspace, timeout_s=30)
    left = survivors(marker, grace_s=0)
    try:
        assert r.ok and len(left) == 1
        fields = stat_fields(left[0])
        assert fields is not None and fields[0] == os.getpid()  # reparented to us, not to init
    finally:
        for pid in left:
            os.kill(pid, 9)
            os.waitpid(pid, 0)


def test_the_same_orphan_is_killed_by_the_sandbox(workspace: Path) -> None:
    marker = "tether-test-orphan-" + secrets.token_hex(6)
    assert LocalSandbox().run(ORPHAN.format(marker=marker), cwd=workspace, timeout_s=30).ok
    assert survivors(marker, grace_s=0) == []


def test_leftover_that_keeps_forking_is_caught(workspace: Path) -> None:
    marker = "tether-test-fork-" + secrets.token_hex(6)
    loop = f"while true; do (exec -a {marker} sleep 1000 &) ; sleep 0.05; done"
    script = f"( setsid env -i /bin/bash -c '{loop}' >/dev/null 2>&1 & ); sleep 0.3"
    assert LocalSandbox().run(script, cwd=workspace, timeout_s=30).ok
    assert survivors(marker) == []


CHAIN = """n=$1
if [ "$n" -gt 0 ]; then setsid /bin/bash chain.sh $((n - 1)) "$2" & wait; else echo ready > ready; exec sleep 1000; fi
"""
"""A chain of bash processes, each in its own session and the parent of the next, ``$2`` (a marker) on every
command line: killing one hands only the next to tether, so the reaper needs one round per link."""


def test_leftover_chain_deeper_than_any_round_limit_is_caught(workspace: Path) -> None:
    marker = "tether-test-chain-" + secrets.token_hex(6)
    (workspace / "chain.sh").write_text(CHAIN)
    script = (
        f"( env -i /bin/bash chain.sh 40 {marker} >/dev/null 2>&1 & ); "
        "for i in $(seq 1 1000); do [ -s ready ] && break; sleep 0.01; done; [ -s ready ]"
    )
    r = LocalSandbox().run(script, cwd=workspace, timeout_s=60)
    left = survivors(marker, grace_s=0)
    kill_all(left)
    assert r.ok, r.stderr
    assert left == []


def test_without_a_subreaper_the_token_sweep_kills_what_carries_the_token(workspace: Path) -> None:
    """The fallback where tether cannot be a subreaper: a ``setsid`` orphan that kept its environment is found by
    the per-run token (one that scrubbed it, ``env -i``, is not: the control test above)."""
    box = LocalSandbox()
    box.subreaper = False
    marker = "tether-test-sweep-" + secrets.token_hex(6)
    orphan = ORPHAN.replace("setsid env -i /bin/bash", "setsid /bin/bash")
    r = box.run(orphan.format(marker=marker), cwd=workspace, timeout_s=30)
    left = survivors(marker)
    kill_all(left)
    assert r.ok and left == []
    with contextlib.suppress(ChildProcessError):  # the killed orphan came back to us as a zombie: collect it
        os.waitpid(int((workspace / "orphan.pid").read_text()), 0)


def test_processes_started_before_the_command_are_left_alone(workspace: Path) -> None:
    become_subreaper()
    mine = subprocess.Popen(["sleep", "30"])
    try:
        assert LocalSandbox().run(DOUBLE_FORK, cwd=workspace, timeout_s=30).ok
        assert mine.poll() is None  # still running: it is tether's own child, not the command's leftover
    finally:
        mine.kill()
        mine.wait()


@pytest.mark.bwrap
def test_a_subreaper_running_bwrap_collects_what_comes_back(workspace: Path) -> None:
    """Once tether is a subreaper, bwrap's inner process is reparented to it when the outer one exits first;
    without collecting it, every bwrap command would leave a zombie for the life of the process."""
    become_subreaper()
    before = children()
    box = BwrapSandbox(workspace)
    for _ in range(3):
        assert box.run("true", cwd=workspace, timeout_s=30).ok
        assert box.run("sleep 30", cwd=workspace, timeout_s=0.3).timed_out
    assert children() - before == set()


def test_two_threads_commands_never_reap_each_other(workspace: Path) -> None:
    """A worker hosting two runs at once: the short command's cleanup must not take the long one's process for
    its own leftover. Each command holds the process's one-command lock, so the second waits for the first."""
    import threading
    import time

    box = LocalSandbox()
    assert box.subreaper
    results: dict[str, Receipt] = {}

    def run(name: str, command: str) -> None:
        results[name] = box.run(command, cwd=workspace, timeout_s=30)

    short = threading.Thread(target=run, args=("short", "sleep 0.4"))
    long = threading.Thread(target=run, args=("long", "sleep 1; echo survived"))
    short.start()
    time.sleep(0.1)  # the short command is running (its "before" taken) when the long one asks to start
    long.start()
    short.join()
    long.join()
    assert results["short"].ok
    assert results["long"].ok and "survived" in results["long"].stdout


def test_a_remembered_yes_is_not_believed_in_a_forked_child() -> None:
    """``is_subreaper`` remembers the kernel's yes, for this process only: a fork's child is no subreaper (the flag
    is not inherited) and says so, so its commands do not count on orphans coming back."""
    become_subreaper()
    assert is_subreaper() and is_subreaper()  # the second answer is the remembered one
    assert from_child(lambda: b"1" if is_subreaper() else b"0") == b"0"
    assert is_subreaper()


def test_an_orphan_of_a_command_run_from_another_thread_is_killed(workspace: Path) -> None:
    """Orphans come back to the main thread whichever thread started the command (the reaper reads only the main
    thread's children): a double-forked, ``setsid``, ``env -i`` orphan of a command a worker thread ran is killed."""
    import threading

    marker = "tether-test-thread-orphan-" + secrets.token_hex(6)
    results: list[Receipt] = []
    worker = threading.Thread(
        target=lambda: results.append(LocalSandbox().run(ORPHAN.format(marker=marker), cwd=workspace, timeout_s=30))
    )
    worker.start()
    worker.join()
    left = survivors(marker, grace_s=0)
    kill_all(left)
    assert results and results[0].ok
    assert left == []


def test_a_forked_child_becomes_a_subreaper_itself() -> None:
    """The flag is not inherited across fork: a child that asks to become one is made one (not told "already"
    from its parent's memory), so a local sandbox it builds does get its orphans back."""
    assert become_subreaper()

    def report() -> bytes:
        asked = is_subreaper()
        made = become_subreaper()
        return b"%d%d%d" % (asked, made, is_subreaper())

    assert from_child(report) == b"011"


def from_child(report: Callable[[], bytes]) -> bytes:
    """What ``report`` returns in a forked child of this process (the child exits at once after)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(w, report())
        finally:
            os._exit(0)
    os.close(w)
    try:
        return os.read(r, 64)
    finally:
        os.close(r)
        os.waitpid(pid, 0)


def test_a_held_command_asks_proc_about_no_pid_namespace_but_new_ones(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 18: the held command's own process is no leftover whatever its namespace (``reap`` is given its pid),
    and this process's namespace never changes, so a held command whose ``before`` starts nothing reads no
    ``/proc/<pid>/status`` (it read two: the command's, and this process's every time). A process ``before`` starts
    is still asked about, and taken as there before the command (left alone), as the held-window tests hold."""
    from tether.sandbox import reaper

    asked: list[str] = []
    real = reaper._ns_depth
    monkeypatch.setattr(reaper, "_ns_depth", lambda pid: asked.append(pid) or real(pid))
    monkeypatch.setattr(reaper, "_OWN_DEPTH", (-1, 0), raising=False)  # raising: the tree before kept none
    box = LocalSandbox()
    for i in range(3):
        assert box.run(f"true {i}", cwd=workspace, timeout_s=30, before=lambda: None).ok
    assert asked == []

    started: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(2):
            r = box.run(
                "true", cwd=workspace, timeout_s=30, before=lambda: started.append(subprocess.Popen(["sleep", "30"]))
            )
            assert r.ok
        assert all(p.poll() is None for p in started)  # a sink's process: not the command's leftover
        assert asked == [str(started[0].pid), "self", str(started[1].pid)]  # this process's depth read once
    finally:
        for p in started:
            p.kill()
            p.wait()


def test_the_kept_namespace_depth_is_read_again_in_a_forked_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """The depth is kept with the pid it was read for: a forked child (another pid) reads its own."""
    from tether.sandbox import reaper

    monkeypatch.setattr(reaper, "_OWN_DEPTH", (os.getpid(), 99))  # a depth no process has: kept, so believed here
    assert reaper._own_depth() == 99
    assert from_child(lambda: b"%d" % reaper._own_depth()) == b"%d" % reaper._ns_depth("self")
