"""The plain path (tether/plain.py): a cold PreToolUse decided without pydantic, exactly as the full path decides.

Every call here is a real hook process through the launcher (``python -I -S launch.py claude-code --no-daemon``),
run with ``-X importtime`` so that the modules it imported are seen (a call the plain path was unsure of runs
again on the full path in the same process, and imports pydantic there). The same session is played twice, in
two projects: once with ``TETHER_HOOK_PLAIN=0`` (the full path throughout), once as a hook runs (the plain path
for each PreToolUse that finds its envelope kept); the answers and the logs must be the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from hookkit import payload

import tether.hooks.launch as launch
from tether import plainrecord
from tether.events.kinds_calls import RuleHit
from tether.guard import envcache
from tether.guard import log as guard_log

CORPUS = yaml.safe_load((Path(__file__).parents[1] / "data" / "shell_corpus.yaml").read_text())["cases"]
SESSION = "4b1e6f0a-plain-path"


def call(project: Path, event: str, *, plain: bool = True, **fields: Any) -> tuple[str, int, bool]:
    """One hook call in a new process: its stdout, its exit code, and whether it imported pydantic."""
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(project)}
    for name in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN"):
        env.pop(name, None)
    if not plain:
        env["TETHER_HOOK_PLAIN"] = "0"
    data = json.dumps(payload(f"claude-code.{event}", project, **{"session_id": SESSION, **fields}))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-I", "-S", launch.__file__, "claude-code", "--no-daemon"],
        input=data,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    pydantic = any(line.rsplit("|", 1)[-1].strip().startswith("pydantic") for line in done.stderr.splitlines())
    return done.stdout.replace(str(project), "PROJECT"), done.returncode, pydantic


def pre(command: str | None = None, tool: str = "Bash", **tool_input: Any) -> dict[str, Any]:
    return {"tool_name": tool, "tool_input": {"command": command} if command is not None else tool_input}


def session() -> list[tuple[str, dict[str, Any]]]:
    """A session's calls: prompts, allowed, denied and asked calls of each tool kind, shell spellings of the
    corpus (the dangerous ones among them), receipts (a failure too), a stop."""
    calls: list[tuple[str, dict[str, Any]]] = [("SessionStart", {}), ("UserPromptSubmit", {"prompt": "fix it"})]
    tools = [
        pre("ls -la"),
        pre(tool="Read", file_path="README.md"),
        pre(tool="Write", file_path="notes.txt", content="x"),
        pre(tool="Edit", file_path="notes.txt", old_string="x", new_string="y"),
        pre(tool="Write", file_path=".git/hooks/pre-commit", content="evil"),
        pre(tool="WebFetch", url="https://example.com/", prompt="read"),
        pre(tool="mcp__tracker__create_issue", title="t"),
        pre("git push --force origin main"),
        pre("rm -rf ~"),
    ]
    corpus = [c for c in CORPUS if c.get("dangerous")][:5] + [c for c in CORPUS if c["expect"] == "ASK"][:3]
    tools += [pre(c["command"]) for c in corpus]
    for i, fields in enumerate(tools):
        calls.append(("PreToolUse", {**fields, "tool_use_id": f"toolu_{i:02d}"}))
        if i in (0, 2):
            calls.append(("PostToolUse", {**fields, "tool_use_id": f"toolu_{i:02d}", "tool_response": {"ok": i}}))
    calls.append(("PostToolUseFailure", {**tools[1], "tool_use_id": "toolu_01", "error": "no such file"}))
    calls.append(("UserPromptSubmit", {"prompt": "and the rest"}))
    calls.append(("PreToolUse", {**pre("cat README.md"), "tool_use_id": "toolu_99"}))
    calls.append(("Stop", {}))
    return calls


def logged(project: Path, named: Path | None = None) -> list[tuple[str, Any]]:
    """The session's log, timestamps and hashes aside, the project's path (where it was played) as PROJECT."""
    with sqlite3.connect(project / ".tether" / "tether.db") as db:
        rows = db.execute("SELECT kind, payload FROM events ORDER BY run_id, seq").fetchall()
    return [(kind, json.loads(text.replace(str(named or project), "PROJECT"))) for kind, text in rows]


def tether(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def play(project: Path, calls: list[tuple[str, dict[str, Any]]], *, plain: bool) -> list[tuple[str, int, bool]]:
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    return [call(project, event, plain=plain, **fields) for event, fields in calls]


def both_ways(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Path, list[tuple[str, int, bool]]]:
    """``calls`` played full, then as hooks run, in the same directory (the log holds its path, hashed in the calls'
    arguments), one after the other, the first project then moved aside: the same replies, the same log. The
    project played as hooks run, and its calls' replies."""
    project = tmp_path / "project"
    full = play(project, calls, plain=False)
    project.rename(tmp_path / "full")
    fast = play(project, calls, plain=True)
    for (event, fields), want, got in zip(calls, full, fast, strict=True):
        assert got[:2] == want[:2], (event, fields, got, want)
        assert want[2], "the full path imports pydantic"
    assert logged(project) == logged(tmp_path / "full", named=project)
    return project, fast


def test_a_session_decided_plain_is_the_session_decided_full(tmp_path: Path) -> None:
    project, fast = both_ways(tmp_path, session())
    plain_calls = sum(event == "PreToolUse" and not got[2] for (event, _), got in zip(session(), fast, strict=True))
    assert plain_calls >= 15, "the PreToolUse calls after the first were decided plain"
    recorded_once(project, len(session()), "git push")


def recorded_once(project: Path, calls: int, shown_text: str) -> None:
    """Each of the session's ``calls`` received once; its log verifies, and ``tether show`` shows ``shown_text``."""
    received = [p for k, p in logged(project) if k == "hook.received"]
    assert len(received) == calls, "a call recorded twice (or not at all)"
    run, db = f"claude-code-{SESSION}", str(project / ".tether" / "tether.db")
    assert tether("log", "verify", run, "--db", db, cwd=project).returncode == 0
    shown = tether("show", run, "--db", db, cwd=project)
    assert shown.returncode == 0 and shown_text in shown.stdout, shown.stderr


def started(tmp_path: Path) -> Path:
    """A project whose session has begun (its envelope kept) and whose first call the plain path decided."""
    (tmp_path / "README.md").write_text("hello\n")
    assert call(tmp_path, "SessionStart")[1] == 0
    out, code, imported = call(tmp_path, "PreToolUse", **pre("ls"), tool_use_id="toolu_a")
    assert code == 0 and '"allow"' in out and not imported
    return tmp_path


def kept_file(project: Path) -> Path:
    [path] = sorted((project / ".tether" / "tether.db.folds").glob("*" + envcache.SUFFIX))
    return path


def test_a_damaged_kept_envelope_goes_the_full_path_and_decides_the_same(tmp_path: Path) -> None:
    project = started(tmp_path)
    path = kept_file(project)
    whole = path.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:-1] + bytes([whole[-1] ^ 1]), b""):
        path.write_bytes(damaged)
        out, code, imported = call(project, "PreToolUse", **pre("ls"), tool_use_id=f"toolu_{len(damaged)}")
        assert code == 0 and '"allow"' in out and imported  # validated (with pydantic) as without a kept file
        path.write_bytes(whole)
    denied = call(project, "PreToolUse", **pre("rm -rf ~"), tool_use_id="toolu_rm")
    assert denied[1] == 2 or '"deny"' in denied[0]
    assert not denied[2]


def test_a_kept_envelope_naming_a_class_outside_the_schema_is_read_by_no_one(tmp_path: Path) -> None:
    """The kept file's unpickler finds only the schema's classes: a body that names another (the plain record base
    itself, a payload class), consistent with its header, is a miss where the body is read, in a full (pydantic)
    process. A plain process never reads the body (guard/envcache.py ``_from_dump``): it takes the dump the
    header holds, untouched here, and decides from it, without pydantic."""
    project = started(tmp_path)
    path = kept_file(project)
    head, _, body = path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")
    header, obj = json.loads(head), envcache._unpickle(body)
    key = envcache.key_of(envcache.BUILT_IN, "")
    for n, stranger in enumerate((plainrecord.BaseModel(), RuleHit(id="r", verdict="ALLOW", reason="forged"))):
        forged_body = pickle.dumps({**obj, "envelope": stranger}, protocol=5)
        forged = {**header, "body_sha256": hashlib.sha256(forged_body).hexdigest()}
        path.write_bytes(envcache.MAGIC + json.dumps(forged).encode() + b"\n" + forged_body)
        out, code, imported = call(project, "PreToolUse", **pre("ls"), tool_use_id=f"toolu_k{n}")
        assert code == 0 and '"allow"' in out and not imported
        denied = call(project, "PreToolUse", **pre("rm -rf ~"), tool_use_id=f"toolu_rm{n}")
        assert (denied[1] == 2 or '"deny"' in denied[0]) and not denied[2]
        assert envcache.load(path.parent, None, key, None) is None  # this (pydantic) process reads the body: a miss


def forge(db: Path, kind: str, change: Any) -> None:
    """Rewrite the newest ``kind`` payload and chain the log again after it (what a forger with the file can do:
    the chain stays consistent, so only reading the payload tells)."""
    from tether.canonical import canonical_json
    from tether.events.chain import event_hash
    from tether.events.store import stored_hash

    def text(h: Any) -> str:
        return h.hex() if isinstance(h, bytes) else str(h)

    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER IF EXISTS events_no_update")  # what someone rewriting the file can do
        run, seq, body = conn.execute(
            "SELECT run_id, seq, payload FROM events WHERE kind=? ORDER BY seq DESC LIMIT 1", (kind,)
        ).fetchone()
        conn.execute(
            "UPDATE events SET payload=? WHERE run_id=? AND seq=?", (canonical_json(change(json.loads(body))), run, seq)
        )
        rows = conn.execute("SELECT seq, ts, kind, payload, hash FROM events WHERE run_id=? ORDER BY seq", (run,))
        prev = ""
        for s, ts, k, payload_json, h in rows.fetchall():
            if s >= seq:
                h = event_hash(prev, run, s, ts, k, payload_json)
                conn.execute("UPDATE events SET hash=? WHERE run_id=? AND seq=?", (stored_hash(h), run, s))
            prev = text(h)
        (head,) = conn.execute("SELECT head_hash FROM runs WHERE run_id=?", (run,)).fetchone()
        conn.execute(
            "UPDATE runs SET head_hash=? WHERE run_id=?", (stored_hash(prev) if isinstance(head, bytes) else prev, run)
        )


def test_a_forged_payload_in_the_log_is_refused_as_the_full_path_refuses_it(tmp_path: Path) -> None:
    project = started(tmp_path)
    db = project / ".tether" / "tether.db"
    for n, change in enumerate(
        (
            lambda p: {**p, "smuggled": True},  # a field its kind does not have
            lambda p: {**p, "verdict": ["ALLOW"]},  # a wrong type
            lambda p: {k: v for k, v in p.items() if k != "deciding_rule"},  # a field missing
        )
    ):
        forge(db, "action.decided", change)
        verified = tether("log", "verify", f"claude-code-{SESSION}", "--db", str(db), cwd=project)
        assert verified.returncode == 0, verified.stdout + verified.stderr  # the chain holds: only the payload lies
        full = call(project, "PreToolUse", plain=False, **pre("ls"), tool_use_id=f"toolu_f{n}")
        fast = call(project, "PreToolUse", **pre("ls"), tool_use_id=f"toolu_p{n}")
        assert fast[:2] == full[:2] and fast[1] == 2 and fast[2], (fast, full)  # refused, by the full path


def test_a_forged_belief_on_the_failing_tests_is_refused_and_one_on_anything_else_is_not_read(tmp_path: Path) -> None:
    """The run state reads the latest belief on the failing tests (a write's review does: state.py ``_belief``): one
    that does not fit its kind's model is refused, plain and full path alike, as any payload the state reads. A
    belief on anything else is read for its key only, as before the state read beliefs at all."""
    project = started(tmp_path)
    db = project / ".tether" / "tether.db"
    read = {"tool_name": "Read", "tool_input": {"file_path": str(project / "README.md")}, "tool_use_id": "toolu_r"}
    assert call(project, "PreToolUse", **read)[1] == 0
    response = {"type": "text", "file": {"filePath": str(project / "README.md"), "content": "hello\n", "numLines": 1}}
    assert call(project, "PostToolUse", **read, tool_response=response)[1] == 0  # a belief: the file exists
    forge(db, "belief.recorded", lambda p: {**p, "cites": "no list", "smuggled": True})
    out, code, _ = call(project, "PreToolUse", **pre("ls"), tool_use_id="toolu_other")
    assert code == 0 and '"allow"' in out, out  # not the failing tests': its model is never built
    forge(db, "belief.recorded", lambda p: {**p, "key": "tests.failing"})
    full = call(project, "PreToolUse", plain=False, **pre("ls"), tool_use_id="toolu_f")
    fast = call(project, "PreToolUse", **pre("ls"), tool_use_id="toolu_p")
    assert fast[:2] == full[:2] and fast[1] == 2, (fast, full)  # refused, exit 2: never let through


CHECKPOINTED = """
import json, sys
from tether import plain
from tether.hooks import entry
assert plain.choose()
request, data = json.load(sys.stdin)
entry.import_deciding_code()
from tether.hooks.answer import answer
import tether.hooks.session as hook_session
out = answer(request, data)
[guard] = [v for k, v in hook_session._CACHE.items() if k[0] == "guard"]
print(json.dumps([out.stdout, type(guard.events).__name__, guard.checkpointed,
                  sorted(m for m in sys.modules if m.startswith("pydantic"))]))
"""


def test_a_long_sessions_fold_checkpoint_is_read_on_the_plain_path(tmp_path: Path) -> None:
    """A checkpoint the full path wrote (pickled pydantic payloads) restores into plain records: the call folds
    only what came after it, imports no pydantic, and answers as the full path does."""
    from hookkit import Hook

    hook = Hook(tmp_path)
    hook("SessionStart")
    for i in range(90):  # ~4 events a call: past guard.log.EVERY, so a checkpoint is written
        hook.bash(f"grep -n x{i} README.md", f"toolu_{i}")
    assert list((tmp_path / ".tether" / "tether.db.folds").glob("*.ckpt"))
    data = payload("claude-code.PreToolUse", tmp_path, tool_use_id="toolu_after")
    env = {**os.environ, "PYTHONPATH": str(Path(launch.__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", CHECKPOINTED],
        input=json.dumps([hook.request, data]),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answered, events, checkpointed, pydantic = json.loads(done.stdout.splitlines()[-1])
    assert (events, pydantic) == ("Log", []) and checkpointed >= guard_log.EVERY  # restored, not refolded; no pydantic
    full = call(
        tmp_path, "PreToolUse", plain=False, **pre("ls -la"), tool_use_id="toolu_full", session_id=data["session_id"]
    )
    assert json.loads(answered) == json.loads(full[0])
