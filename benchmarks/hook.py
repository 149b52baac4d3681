"""Hook latency: how long `tether hook claude-code` takes to answer a PreToolUse, as a whole process.

Usage: ``python benchmarks/hook.py [--calls N] [--prior M]``. Times whole-process calls each of:

* ``python -c pass`` — the baseline, measured in the same run (the interpreter's own start-up);
* ``python -I -S -c pass`` — the bare interpreter the launcher starts: the floor of the launcher rows;
* ``bash -c true`` — the shell the bash client runs in: the floor of the bash client rows;
* floor: imports any decision needs — the bare interpreter as the launcher starts it (``-I -S``), ``site`` loaded
  as ``hooks/entry.py`` loads it before deciding, then the C parts of ``sqlite3`` and ``hashlib`` (``_sqlite3``,
  ``_sha256``: what a cold call loads of them), ``json``, ``re`` and the Bash grammar's parser exactly as tether
  builds it (``policy/grammar.py``, loaded by its path, without the tether
  package): what any decision of a Bash call that parses the command and writes the hash-chained SQLite log
  imports, whatever it is written in. No tether module;
* floor + pydantic — the same and ``from pydantic import BaseModel, Field`` (plugins disabled, as in a hook
  process): what defining any model with a constrained or documented field imports;
* tether's deciding modules (no call) — the same start, then what ``hooks/entry.py`` does before a call decided
  in-process on the plain path (``plain.choose``, ``import_deciding_code``) and nothing else;
* cold, launcher — ``… launch.py claude-code --no-daemon``: the same start, then one call decided in-process,
  on the plain path (no pydantic: tether/plain.py) since its session has begun and its envelope is kept;
* … a Write — the same, for a Write of a new file: reviewed against the control layer's fold (the plan, the
  beliefs), its image read for undo (hooks/preimage.py);
* … the one that starts a daemon — the same call as the first of the row (the launcher without ``--no-daemon``,
  no daemon listening on its socket), which decides in-process and then starts a daemon for the next call: what a
  user meets once per daemon (after a boot, after the daemon idled out or was killed); each started daemon is
  stopped, and waited for, before the next call is timed;
* … the next, at once — a call made as soon as that one has answered (a receipt after a quick tool, the second of
  calls made together), while the daemon it started is still starting;
* … the next, once it listens — the same call made once that daemon listens: the first it answers, whose session
  it opens then;
* … the full path — the same call with ``TETHER_HOOK_PLAIN=0``: pydantic's models, as before the plain path.
  With the three rows before them, their cost splits into the interpreter, the unavoidable libraries, pydantic,
  tether's modules and the call;
* cold — ``tether hook claude-code --no-daemon``: a fresh process that imports the gate and decides, through the
  console script (with ``site`` and its ``.pth`` files, as an installed ``tether`` command starts);
* cold PostToolUse — the same process recording the receipt of a call (decided before, untimed, by the daemon):
  what every tool call costs a second time when no daemon answers; on the plain path too, like a PreToolUse;
* daemon — ``tether hook claude-code`` with a running daemon: the console script, the small client and one
  socket round trip;
* daemon, launcher — the Python launcher (``python -I -S …/tether/hooks/launch.py claude-code``, what ``tether
  hook install`` writes where there is no bash) with the same daemon: no ``site``, no console script;
* daemon, bash client — the command ``tether hook install`` writes (``bash …/tether/hooks/hook.sh PYTHON
  claude-code``): no interpreter at all, one loopback TCP round trip to the same daemon;
* daemon, bash client, long session — the same, in a session that already holds M tool calls (a call must not
  cost more as the session grows);
* daemon round trip only — the client's request from this process, no interpreter started: the daemon's own
  share of a call (parse, decide, one durable commit), in a fresh session and in the long one. Its CPU column
  is 0: the work is the daemon's.
* cold, long session — ``--no-daemon`` in a session that already holds M tool calls: a fresh process that opens
  the session's log (a fold checkpoint, when one is valid, spares it the refold of the whole log); through the
  console command and through the launcher (what an installed hook runs when no daemon answers).
* cold, launcher, session made without a daemon — the same launcher call in a session of M tool calls that were
  each answered as a cold process answers them (a PreToolUse, then its PostToolUse, on the plain path, each in a
  process of its own forked from one that imported what a cold call imports): the session a user without a daemon
  has, whose fold checkpoints only those cold calls wrote;
* cold, launcher, a worked session — the same launcher call in a session of M tool calls of a coding session
  (:func:`worked_call`: Reads, Edits, Writes and commands, each receipt with what Claude Code's tool sends back,
  a file's text, an Edit's whole original), answered by the daemon's code: the other long sessions' receipts are
  empty or absent, and what a receipt carries is what a session's state may hold;
* … after the daemon's end — the same, in a session seeded alike whose daemon then ended (idle, or told to stop):
  the daemon writes a session's checkpoint every 256 events while it runs and, at its end, one at each session's
  head (``hooks/session.py`` ``checkpoint_left``), so the cold call after it (the first after an idle exit) folds none
  of the log; the row before it folds what came after the daemon's last checkpoint while it ran (up to 256 events:
  what a cold call meets while the daemon still runs and the session is busy, one it declined or could not be reached
  for);
* … its Edits and Writes, then — the same after the daemon's end, each call an Edit or a Write of the session's
  (:func:`worked_call`'s), in a session of their own seeded as that one: their review reads the plan and the failing
  tests, where the rows before time a command;
* … its session quiet — the same while the daemon runs, the session seeded alike and then quiet (``QUIET_S`` without
  a call: the daemon writes its checkpoint at its head between calls, ``hooks/session.py`` ``checkpoint_quiet``);
* … its own calls — the launcher deciding the worked session's next calls themselves, a Read, an Edit, a Write or a
  command in the session's proportions, first the PreToolUse, then (the next row) its PostToolUse with what the
  tool sent back, in a session of their own seeded as that one: the rows before time a command only, and a write's
  review, its undo's image and every receipt read more of the session than a command's decision does;
* the daemon's decision CPU — what the daemon itself runs for one call before its reply (``hooks.daemon.respond``:
  parse, decide, one durable commit; a fold checkpoint that comes due is written after the reply, untimed, as
  the daemon does), called in this process on its resident state so its CPU (``time.thread_time``) can be read:
  in a fresh session and in one of M calls. The wall column includes the commit's sync.

The rows are measured in turn (one call of each, then the next round), so a burst of load on a shared machine
falls on every row alike. Bytecode is written and every row is warmed up first, as in an installed tether
(pip compiles on install; ``PYTHONDONTWRITEBYTECODE`` would make every cold call compile tether again).
Prints p50 and p95 in milliseconds and each p50 against the baseline's. Every call is a new tool call of its
session (its log grows as in a real session); everything lives in a temporary directory, the daemon on its
own socket there, stopped at the end. No thresholds; figures only.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tether
from tether.hooks.command import hook_command, launcher_command
from tether.policy import grammar

TETHER = shutil.which("tether", path=str(Path(sys.executable).parent)) or "tether"
#: Exactly the command ``tether hook install claude-code`` writes (without its ``|| exit 2``): the bash client.
INSTALLED = shlex.split(hook_command("claude-code", None).removesuffix(" || exit 2"))
LAUNCHER = shlex.split(launcher_command("claude-code", None).removesuffix(" || exit 2"))
#: The launcher's start when it decides in-process: a bare interpreter, tether's directory on the path (as
#: ``launch.py`` puts it), ``site`` (as ``hooks/entry.py``'s ``full_path``), plugins disabled (``no_pydantic_plugins``).
START = (
    f"import sys; sys.path.append({os.path.dirname(os.path.dirname(tether.__file__))!r}); import site; site.main(); "
    "import os; os.environ.setdefault('PYDANTIC_DISABLE_PLUGINS', '__all__')"
)
#: The libraries any decision of a Bash call needs, and the Bash parser built as tether builds it.
FLOOR = (
    f"{START}; import _sqlite3, _sha256, json, re; "
    "from _frozen_importlib_external import SourceFileLoader; "
    f"g = type(sys)('bench_grammar'); g.__file__ = {grammar.__file__!r}; "
    "SourceFileLoader(g.__name__, g.__file__).exec_module(g); g.parser()"
)
PYDANTIC = f"{FLOOR}; from pydantic import BaseModel, Field"
#: What a call on the plain path (every PreToolUse of a begun session) imports before it decides: no pydantic.
MODULES = f"{START}; import tether.hooks.entry as e, tether.plain as p; p.choose(); e.import_deciding_code()"


#: A row's command that starts with this runs with ``TETHER_HOOK_PLAIN=0``: the full path (pydantic), for A/B.
FULL = "TETHER_HOOK_PLAIN=0"


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one process; CPU is what load on a shared machine inflates
    least (a daemon's own work is not in it: the daemon is not this process's child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{cmd} failed ({out.returncode}): {out.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return elapsed, cpu


def pre_tool_use(workspace: Path, session: str, i: int) -> bytes:
    """A Bash call's PreToolUse; a Write's (a new file, its image read: hooks/preimage.py) in a ``write`` session."""
    if session.startswith("write"):
        tool, given = "Write", {"file_path": str(workspace / f"w{i}.py"), "content": f"x = {i}\n"}
    else:
        tool, given = "Bash", {"command": f"grep -n needle{i} src/app.py"}
    return json.dumps(hook_input(workspace, session, tool, given, f"toolu_{i}")).encode()


def hook_input(workspace: Path, session: str, tool: str, given: dict[str, object], call_id: str) -> dict[str, object]:
    """A tool call's PreToolUse as Claude Code sends it."""
    return {
        "session_id": session,
        "cwd": str(workspace),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": given,
        "tool_use_id": call_id,
    }


def post_tool_use(workspace: Path, session: str, i: int) -> bytes:
    """The PostToolUse of :func:`pre_tool_use`'s call ``i``: its receipt."""
    data = json.loads(pre_tool_use(workspace, session, i))
    data.update(hook_event_name="PostToolUse", tool_response={"stdout": "", "stderr": "", "interrupted": False})
    return json.dumps(data).encode()


#: A line of the source files :func:`worked_call` reads, edits and writes (~50 characters).
LINE = "    total = compute(total, {n})  # step {n} of the loop\n"


def source(lines: int, start: int = 0) -> str:
    """``lines`` lines of a source file numbered from ``start``: each call's text its own."""
    return "".join(LINE.format(n=n) for n in range(start, start + lines))


def worked_call(workspace: Path, session: str, i: int) -> tuple[bytes, bytes]:
    """Call ``i`` of a coding session, its PreToolUse and its PostToolUse, with what Claude Code's tools send back:
    of 20 calls, 7 Reads of a 200-line file (the file in the receipt), 4 Edits (the whole original file in the
    receipt, as Claude Code sends it), 1 Write of a 100-line file (its content in the input and in the receipt) and
    8 commands with 30 lines of output; each call's input and output its own (a session repeating itself is one the
    control layer escalates to a person)."""
    path, kind = str(workspace / f"src/m{i % 40}.py"), i % 20
    if kind < 7:
        tool, given = "Read", {"file_path": path}
        response: dict[str, object] = {
            "type": "text",
            "file": {"filePath": path, "content": source(200, i), "numLines": 200},
        }
    elif kind < 11:
        old, new = source(1, i), source(2, i)
        tool, given = "Edit", {"file_path": path, "old_string": old, "new_string": new, "replace_all": False}
        response = {
            "filePath": path,
            "oldString": old,
            "newString": new,
            "originalFile": source(250, i),
            "replaceAll": False,
        }
    elif kind < 12:
        tool, given = "Write", {"file_path": path, "content": source(100, i)}
        response = {"type": "create", "filePath": path, "content": given["content"], "structuredPatch": []}
    else:
        tool, given = "Bash", {"command": f"python -m pytest -q tests/test_m{i}.py", "description": "run tests"}
        response = {"stdout": source(30, i), "stderr": "", "interrupted": False, "isImage": False}
    data = hook_input(workspace, session, tool, given, f"toolu_worked_{i}")
    return json.dumps(data).encode(), json.dumps(
        {**data, "hook_event_name": "PostToolUse", "tool_response": response}
    ).encode()


#: The session whose own calls the "its calls" rows decide (seeded as the worked row's).
WORKED = "cold-worked-calls"
#: The session whose Edits and Writes the "its Edits and Writes" row decides (seeded as the row after the daemon's end).
WRITES = "cold-worked-writes"


class Worked:
    """The worked session's own calls for its two rows, which come in turn: a call's PreToolUse, then its
    PostToolUse (what the tool sent back)."""

    def __init__(self, workspace: Path, prior: int) -> None:
        self.workspace, self.next, self.post = workspace, prior, b""
        self.writes = prior // 20 + 1  # the next Edit or Write: one of the twenty calls from 20 times this on

    def stdin(self, session: str) -> bytes:
        """The input of the row of ``session``, or b"" when it is not one of the three."""
        if session.startswith(WRITES):  # calls 7-10 of each twenty are Edits, 11 a Write: each in turn
            k, self.writes = self.writes, self.writes + 1
            return worked_call(self.workspace, WRITES, 20 * k + 7 + k % 5)[0]
        if session.startswith("cold-worked-pre"):
            pre, self.post = worked_call(self.workspace, WORKED, self.next)
            self.next += 7  # coprime with the 20 calls of its mix: a few rows' calls are of every kind, not 5 Reads
            return pre
        return self.post if session.startswith("cold-worked-post") else b""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_daemon(sock: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    daemon = subprocess.Popen([TETHER, "daemon", "--socket", str(sock), "--idle", "300"], env=env)
    deadline = time.monotonic() + 60
    while not sock.exists():
        if time.monotonic() > deadline:
            daemon.kill()
            raise SystemExit("the daemon did not start")
        time.sleep(0.05)
    return daemon


def listening(sock: Path) -> None:
    """Until a daemon accepts connections on ``sock`` (it listens once its code is imported)."""
    deadline = time.monotonic() + 60
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(sock))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the daemon a cold call starts did not start") from None
        time.sleep(0.01)


def stop_started(sock: Path) -> None:
    """Stop the daemon a call started on ``sock`` once it listens, and wait until it has exited (its lock free): its
    start-up and its end must not weigh on the next call timed."""
    from tether.hooks.daemon import stop_daemon

    deadline = time.monotonic() + 60
    while not stop_daemon(str(sock)):
        if time.monotonic() > deadline:
            raise SystemExit("the daemon a cold call starts did not start")
        time.sleep(0.05)
    with open(f"{sock}.lock", "a") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(0.01)
        fcntl.flock(lock, fcntl.LOCK_UN)


def asked(request: dict[str, str], stdin: bytes) -> tuple[float, float]:
    """One round trip to the daemon from this process (no interpreter start): the daemon's share of a call."""
    from tether.hooks.client import ask
    from tether.hooks.wire import Reply

    start = time.perf_counter()
    if not isinstance(ask(request, stdin), Reply):
        raise SystemExit("the daemon did not answer")
    return (time.perf_counter() - start) * 1000, 0.0


def decided_here(request: dict[str, str], stdin: bytes) -> tuple[float, float]:
    """One call answered in this process by the daemon's own code on its resident state: wall and CPU."""
    from tether.hooks.daemon import respond

    later: list[Callable[[], None]] = []
    start, cpu = time.perf_counter(), time.thread_time()
    reply = respond(request, stdin, later)
    cpu, wall = (time.thread_time() - cpu) * 1000, (time.perf_counter() - start) * 1000
    for work in later:  # as the daemon does, once the reply is sent: a fold checkpoint when one is due
        work()
    if reply.exit != 0:
        raise SystemExit(f"the call failed: {reply.stderr[-500:]}")
    return wall, cpu


#: Calls answered each in a forked child of one plain process (tether/plain.py) that imported what a cold PreToolUse
#: imports, as the launcher would answer them one process each without the interpreter's start: a receipt's child
#: imports the control layer's view too (``import_deciding_code(gate=False)``), as a cold receipt does.
COLD_SEED = """
import json, os, sys
from tether import plain
assert plain.choose()
from tether.hooks import entry
entry.import_deciding_code()
from tether.hooks.answer import answer
request, stdins = json.load(sys.stdin)
for raw in stdins:
    data = json.loads(raw)
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            if data["hook_event_name"] != "PreToolUse":
                entry.import_deciding_code(gate=False)
            code = answer(request, data).exit
        finally:
            os._exit(code)
    if os.waitpid(pid, 0)[1] != 0:
        sys.exit(f"a cold call failed: {raw[:300]}")
"""


def seed_cold(request: dict[str, str], workspace: Path, session: str, prior: int, env: dict[str, str]) -> None:
    """``prior`` tool calls of ``session``, each PreToolUse and its PostToolUse answered as cold processes answer them
    (:data:`COLD_SEED`), after the session's first call, which the daemon's code answers here (a run is made on the
    full path, as after a SessionStart)."""
    decided_here(request, pre_tool_use(workspace, session, 0))
    calls = [made(workspace, session, -1 - i).decode() for i in range(prior) for made in (pre_tool_use, post_tool_use)]
    src = str(Path(tether.__file__).parents[1])
    subprocess.run(
        [sys.executable, "-c", COLD_SEED],
        input=json.dumps([request, calls]).encode(),
        env={**env, "PYTHONPATH": src},
        check=True,
    )


def seed(request: dict[str, str], workspace: Path, session: str, prior: int, *, here: bool = False) -> None:
    """``prior`` tool calls of ``session``, answered by the daemon (in this process: no start-up to pay), or by
    the daemon's code in this process (``here``)."""
    for i in range(prior):
        stdin = pre_tool_use(workspace, session, -1 - i)
        decided_here(request, stdin) if here else asked(request, stdin)


def seed_worked(request: dict[str, str], workspace: Path, session: str, prior: int) -> None:
    """``prior`` calls of a coding session (:func:`worked_call`), each PreToolUse and PostToolUse answered by the
    daemon's code in this process."""
    for i in range(prior):
        for stdin in worked_call(workspace, session, i):
            decided_here(request, stdin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--prior", type=int, default=1000, help="tool calls already in the long session")
    args = parser.parse_args()
    calls, cold_calls = args.calls, max(5, args.calls // 4)
    with tempfile.TemporaryDirectory(prefix="tether-hook-bench-") as tmp:
        workspace = Path(tmp)
        sock, first = workspace / "d" / "hookd.sock", workspace / "first" / "hookd.sock"
        sock.parent.mkdir(mode=0o700)
        first.parent.mkdir(mode=0o700)
        env = {**os.environ, "TETHER_HOOK_SOCKET": str(sock), "CLAUDE_PROJECT_DIR": str(workspace)}
        for name in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_DAEMON", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        os.environ.update(TETHER_HOOK_SOCKET=env["TETHER_HOOK_SOCKET"], CLAUDE_PROJECT_DIR=str(workspace))
        # (name, command, session, calls): each daemon row in a session of its own
        rows: list[tuple[str, list[str], str, int]] = [
            ("python -c pass (baseline)", [sys.executable, "-c", "pass"], "", calls),
            ("python -I -S -c pass", [sys.executable, "-I", "-S", "-c", "pass"], "", calls),
            ("bash -c true", [INSTALLED[0], "-c", "true"], "", calls),
            ("floor: imports any decision needs", [sys.executable, "-I", "-S", "-c", FLOOR], "", calls),
            ("floor + pydantic", [sys.executable, "-I", "-S", "-c", PYDANTIC], "", calls),
            ("tether's deciding modules (no call)", [sys.executable, "-I", "-S", "-c", MODULES], "", cold_calls),
            ("cold, launcher (--no-daemon)", [*LAUNCHER, "--no-daemon"], "cold-launch", cold_calls),
            ("  ... a Write", [*LAUNCHER, "--no-daemon"], "write-cold-launch", cold_calls),
            ("  ... the one that starts a daemon", LAUNCHER, "first-cold-launch", cold_calls),
            ("  ... the next, at once", LAUNCHER, "next-cold-launch", cold_calls),
            ("  ... the next, once it listens", LAUNCHER, "started-cold-launch", cold_calls),
            ("  ... the full path (PLAIN=0)", [FULL, *LAUNCHER, "--no-daemon"], "cold-full", cold_calls),
            ("cold (--no-daemon)", [TETHER, "hook", "claude-code", "--no-daemon"], "cold", cold_calls),
            ("cold PostToolUse (--no-daemon)", [TETHER, "hook", "claude-code", "--no-daemon"], "post", cold_calls),
            ("daemon", [TETHER, "hook", "claude-code"], "daemon", calls),
            ("daemon, launcher", LAUNCHER, "launch", calls),
            ("daemon, bash client (installed)", INSTALLED, "bash", calls),
            (f"  ... session of {args.prior} calls", INSTALLED, "long", calls),
            ("daemon round trip only", [], "trip", calls),
            (f"  ... session of {args.prior} calls", [], "long", calls),
            (
                f"cold, session of {args.prior} calls",
                [TETHER, "hook", "claude-code", "--no-daemon"],
                "cold-long",
                cold_calls,
            ),
            (
                f"cold, launcher, session of {args.prior}",
                [*LAUNCHER, "--no-daemon"],
                "cold-long-launch",
                cold_calls,
            ),
            (
                f"cold, launcher, {args.prior} made cold",
                [*LAUNCHER, "--no-daemon"],
                "cold-made-launch",
                cold_calls,
            ),
            (
                f"cold, launcher, {args.prior} worked",
                [*LAUNCHER, "--no-daemon"],
                "cold-worked-launch",
                cold_calls,
            ),
            (
                "  ... after the daemon's end",
                [*LAUNCHER, "--no-daemon"],
                "cold-ended-launch",
                cold_calls,
            ),
            ("  ... its Edits and Writes, then", [*LAUNCHER, "--no-daemon"], WRITES, cold_calls),
            ("  ... its session quiet", [*LAUNCHER, "--no-daemon"], "cold-quiet-launch", cold_calls),
            ("  ... its calls: PreToolUse", [*LAUNCHER, "--no-daemon"], "cold-worked-pre", cold_calls),
            ("  ... its calls: PostToolUse", [*LAUNCHER, "--no-daemon"], "cold-worked-post", cold_calls),
            ("daemon's decision CPU", ["here"], "here", calls),
            (f"  ... session of {args.prior} calls", ["here"], "here-long", calls),
        ]
        daemon = start_daemon(sock, env)
        try:
            from tether.hooks.entry import options
            from tether.hooks.session import checkpoint_left, checkpoint_quiet

            request = options(["claude-code"])[0]
            seed(request, workspace, "long", args.prior)
            seed(request, workspace, "cold-long", args.prior)
            seed(request, workspace, "cold-long-launch", args.prior)
            seed(request, workspace, "here-long", args.prior, here=True)
            seed_cold(request, workspace, "cold-made-launch", args.prior, env)
            seed_worked(request, workspace, "cold-ended-launch", args.prior)
            seed_worked(request, workspace, WRITES, args.prior)
            checkpoint_left()  # the daemon's end, as it ends idle: each session it answered checkpointed at its head
            seed_worked(request, workspace, "cold-quiet-launch", args.prior)
            checkpoint_quiet(0.0)  # as the daemon does once the session is QUIET_S without a call
            seed_worked(request, workspace, "cold-worked-launch", args.prior)
            seed_worked(request, workspace, WORKED, args.prior)
            worked = Worked(workspace, args.prior)

            def one(cmd: list[str], session: str, i: int) -> tuple[float, float]:
                stdin = worked.stdin(session) or (pre_tool_use(workspace, session, i) if session else b"")
                if session.startswith("post"):  # the receipt of a call the daemon decided (untimed) first
                    asked(request, stdin)
                    stdin = post_tool_use(workspace, session, i)
                if cmd == ["here"]:
                    return decided_here(request, stdin)
                if cmd[:1] == [FULL]:
                    return timed(cmd[1:], stdin, {**env, "TETHER_HOOK_PLAIN": "0"})
                if session.startswith(("first", "next", "started")):  # no daemon on its socket: a call starts one
                    alone = {**env, "TETHER_HOOK_SOCKET": str(first)}
                    try:
                        if not session.startswith("first"):  # after the call (untimed) that started it
                            timed(cmd, pre_tool_use(workspace, session, -1 - i), alone)
                        if session.startswith("started"):
                            listening(first)
                        return timed(cmd, stdin, alone)
                    finally:
                        stop_started(first)
                return timed(cmd, stdin, env) if cmd else asked(request, stdin)

            for _, cmd, session, _ in rows:  # warm-up: bytecode written, the daemon's first imports done
                one(cmd, session and f"{session}-warmup", 10**6)
                if "cold" in session:  # and the session begun (its run made), as after a SessionStart
                    one(cmd, session, 10**6 + 1)
            times: dict[str, list[tuple[float, float]]] = {name + str(r): [] for r, (name, *_) in enumerate(rows)}
            for i in range(calls):
                for r, (name, cmd, session, n) in enumerate(rows):
                    if i < n:
                        times[name + str(r)].append(one(cmd, session, 10 * i + r))
        finally:
            subprocess.run([TETHER, "daemon", "--socket", str(sock), "--stop"], env=env, check=False)
            daemon.wait(timeout=30)
    base = statistics.median(wall for wall, _ in times[rows[0][0] + "0"])
    print(f"calls: {calls} (cold: {cold_calls}); whole processes, rows in turn; milliseconds")
    print(f"{'':36}{'p50':>9}{'p95':>9}{'p50 / baseline':>17}{'CPU p50':>10}")
    for (name, *_), values in zip(rows, times.values(), strict=True):
        walls = [wall for wall, _ in values]
        p50, p95, cpu = pct(walls, 0.5), pct(walls, 0.95), statistics.median(c for _, c in values)
        print(f"{name:36}{p50:9.1f}{p95:9.1f}{p50 / base:16.1f}x{cpu:10.1f}")


if __name__ == "__main__":
    main()
