"""A hook process that is the hook's own ends with ``os._exit`` once its reply is out (hooks/entry.py ``finish``).

Every call here is a real process: the launcher (``python -I -S launch.py``) or the console command's route
(``python -m tether.cli.main hook``). What a normal exit did that anyone sees must still happen: the call's events
in the log, the chain intact, the stores closed (no ``-wal`` left beside the database), the ``atexit`` handlers
run, the reply whole through a pipe smaller than it, the exit code of each answer as before (a reader that closed
the pipe too), the plain path's re-run (``execve``) working, no child left behind. And it must end at once: the
interpreter's tear-down (an object's ``__del__`` at module clean-up) does not run.
"""

from __future__ import annotations

import ctypes
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hookkit import payload

import tether.hooks.launch as launch
from tether.hooks.session import run_id_for

SRC = str(Path(launch.__file__).resolve().parents[2])
SESSION = "7c2d-cold-exit"
#: Runs the launcher (or the console command) as a script after registering an ``atexit`` handler, which must
#: run; with ``python -v`` the interpreter's tear-down names each module it cleans up, which must not happen.
WRAPPED = """
import atexit, runpy, sys
target, marker = sys.argv[1], sys.argv[2]
atexit.register(lambda: open(marker, "a").write("atexit\\n"))
sys.argv = [target, *sys.argv[3:]]
if target == "-m":
    sys.argv = ["tether", *sys.argv[1:]]
    from tether.cli.main import main
    main()
else:
    runpy.run_path(target, run_name="__main__")
"""


def env_for(project: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(project), "PYTHONPATH": SRC, **extra}
    for name in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN"):
        if name not in extra:
            env.pop(name, None)
    return env


def data(project: Path, event: str, **fields: Any) -> bytes:
    return json.dumps(payload(f"claude-code.{event}", project, **{"session_id": SESSION, **fields})).encode()


def launcher(project: Path, raw: bytes, **extra: str) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-I", "-S", launch.__file__, "claude-code", "--no-daemon"]
    return subprocess.run(argv, input=raw, capture_output=True, env=env_for(project, **extra), timeout=120)


def bash(project: Path, command: str, call_id: str, **extra: str) -> subprocess.CompletedProcess[bytes]:
    return launcher(project, data(project, "PreToolUse", tool_input={"command": command}, tool_use_id=call_id), **extra)


def decision(done: subprocess.CompletedProcess[bytes]) -> str:
    return str(json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"])


def logged(project: Path, call_id: str) -> int:
    with closing(sqlite3.connect(project / ".tether" / "tether.db")) as conn:
        (n,) = conn.execute("SELECT count(*) FROM events WHERE payload LIKE ?", (f'%"{call_id}"%',)).fetchone()
    return int(n)


def verify(project: Path) -> None:
    db = project / ".tether" / "tether.db"
    run_id = run_id_for("claude-code", SESSION)
    argv = [sys.executable, "-m", "tether.cli.main", "log", "verify", run_id, "--db", str(db)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env_for(project), timeout=120)
    assert done.returncode == 0 and "chain intact" in done.stdout, done.stdout + done.stderr


def ticks() -> int:
    """Now, in the clock ticks since boot that ``/proc/PID/stat`` gives a process's start time in."""
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def children(since: int) -> list[int]:
    """This process's children still in the process table (zombies too) that started at or after ``since`` (ticks):
    a pytest worker may hold older ones, orphans of other tests adopted while it was a subreaper (the local
    sandbox makes it one), which are not this test's."""
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[1] == me and int(fields[19]) >= since:
                found.append(int(entry))
    return found


@pytest.fixture
def subreaper() -> Iterator[None]:
    """This test process adopts the orphans of its children's children (``PR_SET_CHILD_SUBREAPER``): a trial child
    a hook process left behind would show up among :func:`children`. The worker's own setting is put back after
    (the local sandbox made it a subreaper and counts on staying one)."""
    libc = ctypes.CDLL(None, use_errno=True)
    was = ctypes.c_int(0)
    if libc.prctl(37, ctypes.byref(was), 0, 0, 0) != 0 or libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_GET/SET_CHILD_SUBREAPER
        from machinekit import unavailable

        unavailable("prctl(PR_SET_CHILD_SUBREAPER) refused")
    yield
    libc.prctl(36, was.value, 0, 0, 0)


def test_many_cold_calls_log_every_event_and_keep_the_chain(tmp_path: Path, subreaper: None) -> None:
    began = ticks()
    assert launcher(tmp_path, data(tmp_path, "SessionStart")).returncode == 0
    expected = {"ls -la": "allow", "rm -rf ~": "deny", "git push --force origin main": "ask"}
    for i in range(12):
        command = list(expected)[i % 3]
        plain = {} if i % 4 else {"TETHER_HOOK_PLAIN": "0"}  # the plain path and the full path, both ending early
        done = bash(tmp_path, command if i < 3 else f"{command} # {i}", f"toolu_{i}", **plain)
        assert (done.returncode, decision(done)) == (0, expected[command]), done.stderr
        assert logged(tmp_path, f"toolu_{i}") >= 1, "the call's event is in the log once its process has ended"
        assert children(began) == [], "no child left, zombie or orphan"
    assert not (tmp_path / ".tether" / "tether.db-wal").exists() or (
        (tmp_path / ".tether" / "tether.db-wal").stat().st_size == 0
    ), "the store was closed (its write-ahead log folded back), not abandoned"
    verify(tmp_path)


@pytest.mark.parametrize("route", ["launcher", "console"])
def test_atexit_handlers_run_and_the_teardown_does_not(tmp_path: Path, route: str) -> None:
    assert launcher(tmp_path, data(tmp_path, "SessionStart")).returncode == 0
    marker = tmp_path / "marker"
    target = [launch.__file__, "claude-code", "--no-daemon"] if route == "launcher" else ["-m", "hook", "claude-code"]
    raw = data(tmp_path, "PreToolUse", tool_input={"command": "ls"}, tool_use_id=f"toolu_{route}")
    argv = [sys.executable, "-v", "-c", WRAPPED, target[0], str(marker), *target[1:]]
    done = subprocess.run(argv, input=raw, capture_output=True, env=env_for(tmp_path), timeout=120)
    assert (done.returncode, decision(done)) == (0, "allow"), done.stderr[-2000:]
    assert marker.read_text() == "atexit\n", "the atexit handlers ran"
    assert b"import 'tether.hooks.entry'" in done.stderr, "-v reports"
    assert b"# cleanup[" not in done.stderr, "the interpreter's tear-down did not run: the process ended at once"
    assert logged(tmp_path, f"toolu_{route}") >= 1
    verify(tmp_path)


def test_in_process_main_returns_and_does_not_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.hooks import entry

    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    code = entry.main(["claude-code", "--no-daemon"], data(tmp_path, "SessionStart"))
    assert code == 0, "main called in-process (tests, the daemon) returns its code: only finish ends a process"


def test_a_refusal_larger_than_a_pipe_buffer_arrives_whole(tmp_path: Path) -> None:
    flag = "--" + "x" * 100_000  # refused, named in the message: ~100 KB on stderr, past a 64 KiB pipe
    argv = [sys.executable, "-I", "-S", launch.__file__, "claude-code", flag]
    done = subprocess.run(argv, input=b"{}", capture_output=True, env=env_for(tmp_path), timeout=120)
    assert done.returncode == 2
    assert flag in done.stderr.decode() and done.stderr.decode().rstrip().endswith("[--json]")


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_a_reader_that_closed_the_pipe_gets_the_exit_code_it_got_before(tmp_path: Path, closed: str) -> None:
    """CPython's own exit gave these: 120 when the reply cannot be flushed (the hook failed, never 0 or 1)."""
    assert launcher(tmp_path, data(tmp_path, "SessionStart")).returncode == 0
    for i, command in enumerate(["ls", "rm -rf ~"]):
        r, w = os.pipe()
        os.close(r)
        pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": w}
        pipes[closed] = w
        pipes["stderr" if closed == "stdout" else "stdout"] = subprocess.PIPE
        raw = data(tmp_path, "PreToolUse", tool_input={"command": command}, tool_use_id=f"toolu_{closed}_{i}")
        argv = [sys.executable, "-I", "-S", launch.__file__, "claude-code", "--no-daemon"]
        done = subprocess.run(argv, input=raw, env=env_for(tmp_path), timeout=120, **pipes)
        os.close(w)
        # the reply is JSON on stdout with exit 0: a closed stdout fails it, a closed stderr does not matter
        assert done.returncode == (120 if closed == "stdout" else 0)
        assert logged(tmp_path, f"toolu_{closed}_{i}") >= 1
    verify(tmp_path)


def test_a_plain_call_it_is_unsure_of_still_runs_again_on_the_full_path(tmp_path: Path) -> None:
    """A kept envelope beside the store, and a session no call began: the plain path is unsure, replaces the
    process with the full path (``execve``), and that process ends early too, with the answer."""
    assert launcher(tmp_path, data(tmp_path, "SessionStart")).returncode == 0
    assert bash(tmp_path, "ls", "toolu_first").returncode == 0
    assert list((tmp_path / ".tether" / "tether.db.folds").glob("*.env")), "the envelope is kept"
    raw = json.dumps(
        payload(
            "claude-code.PreToolUse",
            tmp_path,
            session_id="another-session",
            tool_input={"command": "ls"},
            tool_use_id="toolu_new",
        )
    ).encode()
    argv = [sys.executable, "-X", "importtime", "-I", "-S", launch.__file__, "claude-code", "--no-daemon"]
    done = subprocess.run(argv, input=raw, capture_output=True, env=env_for(tmp_path), timeout=120)
    assert (done.returncode, decision(done)) == (0, "allow"), done.stderr
    imported = [line.rsplit(b"|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert b"tether.plain" in imported and b"pydantic" in imported, "the plain path began, the full path answered"
    assert logged(tmp_path, "toolu_new") >= 1


#: A process that ends by ``finish`` while a thread it started still runs: a normal exit waits for the thread, so
#: its work is done (entry.py asks ``_thread._count``, which counts threading's threads too, not
#: ``threading.active_count``: a cold call does not import ``threading``).
STILL_RUNNING = """
import sys, threading, time
def work():
    time.sleep(0.3)
    open(sys.argv[1], "w").write("done")
threading.Thread(target=work).start()
from tether.hooks.entry import finish
finish(0)
"""


def test_a_process_with_a_thread_still_running_exits_the_normal_way(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    done = subprocess.run([sys.executable, "-c", STILL_RUNNING, str(marker)], env=env_for(tmp_path), timeout=60)
    assert done.returncode == 0
    assert marker.read_text() == "done"
