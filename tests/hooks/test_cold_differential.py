"""One session of hook calls answered cold, each by the installed command in a fresh process (the launcher,
``--no-daemon``), and answered by a resident process (``answer`` in this one, its guards kept between calls as the
daemon keeps them): the same replies, the same events, byte for byte once the workspace's path and the clock are
set aside, and both logs verify.

Whatever a cold process does differently to be fast (a kept envelope read back, the collector paused, lazily
built payload classes, a fold checkpoint, a decision path without pydantic) must not change one answer or one
recorded field; and a cold call that falls back to a slower path must not write its events twice. The calls: a
sample of the shell corpus (every tenth case, and every case marked dangerous that a deny or ask must stop),
file tools inside and outside the protected places, a tool the envelope does not declare, a declared MCP tool,
receipts of an allowed and of a denied call (a bypass), a prompt, a stop and the session's end, for Claude Code
under the built-in envelope and under a project envelope with rules of its own, and for Codex (whose ASK stages an
approval).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hookkit import payload

from tether.events.store import EventStore
from tether.hooks.answer import answer
from tether.hooks.client import HOOK_SCRIPT
from tether.hooks.session import run_id_for

LAUNCHER = str(Path(HOOK_SCRIPT).parent / "launch.py")
CORPUS = Path(__file__).resolve().parents[1] / "data" / "shell_corpus.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text())["cases"]
COMMANDS = [c["command"] for i, c in enumerate(CASES) if i % 10 == 0 or (c.get("dangerous") and i % 10 == 5)]

PROJECT_ENVELOPE = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  filesystem: {read: ["**"], write: ["src/**", "tests/**"], deny: ["secrets/**"]}
permissions:
  profile: coding
  deny: [{id: no-push, rule: "bash(git push:*)", reason: "pushing is the human's"}]
  ask: [{id: ask-make, rule: "bash(make:*)"}]
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
  - {name: read_file, purpose: Read a file., effects: [read]}
  - {name: write_file, purpose: Write a file., effects: [write]}
  - {name: edit_file, purpose: Edit a file., effects: [read, write]}
  - {name: mcp__notes__add, purpose: Add a note., effects: [write]}
""" % ("0" * 64)


def claude_session(ws: Path) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = [("SessionStart", {}), ("UserPromptSubmit", {"prompt": "tidy up"})]
    calls += [("PreToolUse", {"tool_input": {"command": c}, "tool_use_id": f"b{i}"}) for i, c in enumerate(COMMANDS)]
    tools = [
        ("Read", {"file_path": str(ws / "src" / "app.py")}),
        ("Read", {"file_path": str(ws / ".env")}),
        ("Read", {"file_path": str(ws / "secrets" / "key.pem")}),
        ("Write", {"file_path": str(ws / "src" / "new.py"), "content": "x = 1\n"}),
        ("Write", {"file_path": str(ws / ".tether" / "envelope.yaml"), "content": "{}"}),
        ("Edit", {"file_path": str(ws / ".git" / "config"), "old_string": "a", "new_string": "b"}),
        ("Glob", {"pattern": "**/*.py"}),
        ("WebFetch", {"url": "https://example.com", "prompt": "read"}),
        ("mcp__notes__add", {"text": "hello"}),
        ("mcp__other__tool", {"x": 1}),
        ("TodoWrite", {"todos": []}),
        ("Agent", {"description": "look", "prompt": "find it", "subagent_type": "Explore"}),
        ("LSP", {"operation": "hover", "filePath": str(ws / "src" / "app.py"), "line": 1, "character": 1}),
        ("EnterWorktree", {"name": "feature"}),
        ("PowerShell", {"command": "Get-ChildItem"}),
        ("Write", {"file_path": os.path.expanduser("~/.claude/plans/quiet-owl.md"), "content": "# Plan\n"}),
        ("Read", {}),
    ]
    calls += [
        ("PreToolUse", {"tool_name": t, "tool_input": ti, "tool_use_id": f"f{i}"}) for i, (t, ti) in enumerate(tools)
    ]
    calls += [
        ("PostToolUse", {"tool_input": {"command": COMMANDS[0]}, "tool_use_id": "b0"}),
        ("PostToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "gone"}),
        ("PreToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "d1"}),
        ("PostToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "d1"}),  # it ran anyway: a bypass
        ("PreToolUse", {"tool_input": {"command": "rm -rf /"}, "tool_use_id": "d2"}),  # denied before
        ("Stop", {}),
        ("UserPromptSubmit", {"prompt": "one more thing"}),
        ("PreToolUse", {"tool_input": {"command": "ls"}, "tool_use_id": "after"}),
        ("PreToolUse", {"tool_input": {"command": "touch x"}, "tool_use_id": "plan1", "permission_mode": "plan"}),
        ("SessionEnd", {"reason": "exit"}),
    ]
    return calls


def codex_session(ws: Path) -> list[tuple[str, dict[str, Any]]]:
    patch = "*** Begin Patch\n*** Update File: src/app.py\n*** Add File: .git/hooks/pre-commit\n*** End Patch\n"
    return [
        ("SessionStart", {}),
        ("PreToolUse", {"tool_input": {"command": "ls"}, "tool_use_id": "c1"}),
        ("PreToolUse", {"tool_input": {"command": "git push origin main"}, "tool_use_id": "c2"}),
        ("PreToolUse", {"tool_input": {"command": "git push origin main"}, "tool_use_id": "c3"}),
        ("PreToolUse", {"tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_use_id": "c4"}),
        ("PreToolUse", {"tool_name": "apply_patch", "tool_input": {"input": patch}, "tool_use_id": "c5"}),
        ("PreToolUse", {"tool_input": {"command": ["bash", "-lc", "rm -rf /"]}, "tool_use_id": "c6"}),
        (
            "PreToolUse",
            {"tool_name": "exec_command", "tool_input": {"cmd": "ls", "workdir": "src"}, "tool_use_id": "c7"},
        ),
        ("PreToolUse", {"tool_name": "view_image", "tool_input": {"path": "/root/.ssh/id_rsa"}, "tool_use_id": "c8"}),
        ("PreToolUse", {"tool_input": {"command": "sh -"}, "tool_use_id": "c9"}),
        ("PostToolUse", {"tool_input": {"command": "git push origin main"}, "tool_use_id": "c2"}),
        ("Stop", {}),
    ]


def workspace(root: Path, envelope: str | None) -> Path:
    for d in ("src", "tests", "secrets", ".git", ".tether"):
        (root / d).mkdir(parents=True)
    (root / "src" / "app.py").write_text("def parse(x):\n    return x\n")
    (root / "secrets" / "key.pem").write_text("-----BEGIN KEY-----\n")
    (root / ".env").write_text("TOKEN=1\n")
    if envelope is not None:
        (root / ".tether" / "envelope.yaml").write_text(envelope)
    return root


def cold(agent: str, ws: Path, raw: bytes, *, full: bool = False) -> tuple[str, str, int]:
    """The installed command without a daemon, in a fresh interpreter: ``python -I -S launch.py AGENT``; ``full``:
    with ``TETHER_HOOK_PLAIN=0`` (never the plain path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "CLAUDE_"))}
    env.update(CLAUDE_PROJECT_DIR=str(ws), TETHER_HOOK_DAEMON="0", **({"TETHER_HOOK_PLAIN": "0"} if full else {}))
    cmd = [sys.executable, "-I", "-S", LAUNCHER, agent, "--no-daemon"]
    out = subprocess.run(cmd, input=raw, capture_output=True, env=env, cwd=ws, timeout=120)
    return out.stdout.decode().removesuffix("\n"), out.stderr.decode(), out.returncode


def resident(agent: str, ws: Path, raw: bytes) -> tuple[str, str, int]:
    reply = answer({"agent": agent, "project": str(ws)}, json.loads(raw))
    return reply.stdout, reply.stderr, reply.exit


#: What differs between two sessions that decided alike: the clock, random ids, each process's own figures.
NOISE = re.compile(
    r'"(ts|at|expires_at|started_at|finished_at|duration_s|elapsed_s|wall_s|pid|host)": [^,}\]]+'
    r"|ap-[0-9a-f]{8}|~[0-9a-f]{6}|c-[0-9a-f]{12}|(?<=/proc/)[0-9]+(?=/)"  # /proc/self: the deciding process
)


def quiet(text: str) -> str:
    return NOISE.sub(lambda m: f'"{m[1]}": 0' if m[1] else "~", text)


def play(agent: str, ws: Path, calls: list[tuple[str, dict[str, Any]]], how: Any) -> tuple[list[Any], list[Any]]:
    return play_mixed(ws, calls, [how] * len(calls), agent)


def play_mixed(
    ws: Path, calls: list[tuple[str, dict[str, Any]]], hows: list[Any], agent: str = "claude-code"
) -> tuple[list[Any], list[Any]]:
    """Each call answered by its own ``how``; the replies and the run's events, quieted (:func:`quiet`)."""
    replies = []
    for (event, fields), how in zip(calls, hows, strict=True):
        raw = json.dumps(payload(f"{agent}.{event}", ws, **fields)).encode()
        replies.append(json.loads(quiet(json.dumps(how(agent, ws, raw)).replace(str(ws), "<ws>"))))
    run_id = run_id_for(agent, payload(f"{agent}.SessionStart", ws)["session_id"])
    with EventStore.open(ws / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id)
        events = [(e.seq, e.kind, e.payload) for e in store.events(run_id)]
    text = quiet(json.dumps(events, sort_keys=True).replace(str(ws), "<ws>"))
    return replies, json.loads(text)


def compare(tmp_path: Path, agent: str, envelope: str | None, session: Any) -> list[Any]:
    """Both sessions in one place (one after the other, the first moved away), so that what hashes the paths
    (the arguments' hashes, the contract) must agree too."""
    ws = workspace(tmp_path / "ws", envelope)
    got_cold = play(agent, ws, session(ws), cold)
    ws.rename(tmp_path / "cold")
    workspace(ws, envelope)
    got_resident = play(agent, ws, session(ws), resident)
    for i, (x, y) in enumerate(zip(got_cold[0], got_resident[0], strict=True)):
        assert x == y, (i, session(ws)[i])
    for x, y in zip(got_cold[1], got_resident[1], strict=False):
        assert x == y, "the same events, in the same order"
    assert len(got_cold[1]) == len(got_resident[1]), "no event written twice, none missing"
    return got_cold[0]


def verdicts(replies: list[Any]) -> list[str]:
    return [json.loads(r[0])["hookSpecificOutput"]["permissionDecision"] for r in replies if r[0].startswith('{"hookS')]


@pytest.mark.slow
def test_claude_code_under_the_built_in_envelope_decides_and_records_alike_cold_and_resident(tmp_path: Path) -> None:
    replies = compare(tmp_path, "claude-code", None, claude_session)
    assert {"allow", "ask", "deny"} <= set(verdicts(replies))


@pytest.mark.slow
def test_claude_code_under_a_project_envelope_decides_and_records_alike_cold_and_resident(tmp_path: Path) -> None:
    replies = compare(tmp_path, "claude-code", PROJECT_ENVELOPE, claude_session)
    assert {"allow", "ask", "deny"} <= set(verdicts(replies))


@pytest.mark.slow
def test_codex_decides_and_records_alike_cold_and_resident(tmp_path: Path) -> None:
    replies = compare(tmp_path, "codex", None, codex_session)
    assert [r[2] for r in replies[1:10]] == [0, 2, 2, 2, 2, 2, 0, 2, 2]
    assert "tether approve" in replies[2][1]
    assert "hook:malformed-call" not in replies[5][1] + replies[6][1]  # a patch as input, an argv list: judged
    assert "path:credential" in replies[8][1] and "coding:ask-interactive" in replies[9][1]


#: Commands of a long session, cycled: allowed, denied, asked, a read of a secret, a write of a protected file.
LONG = ["ls -la", "rm -rf /", "git push origin main", "cat .env", "echo x > .tether/envelope.yaml", "grep -rn TODO src"]


def long_session(cold_from: tuple[range, ...]) -> list[tuple[str, dict[str, Any], str]]:
    """About 180 tool calls (~600 events: two fold checkpoints, at 256 and 512 events); the calls whose index is
    in ``cold_from`` are cold, in turn with the default path and with ``TETHER_HOOK_PLAIN=0`` (the full one), so
    that a checkpoint one kind of cold process wrote is read by the other, and the daemon-like resident process
    goes on after both."""
    calls: list[tuple[str, dict[str, Any], str]] = [("SessionStart", {}, "resident")]
    for i in range(180):
        how = "resident"
        if any(i in r for r in cold_from):
            how = "cold" if i % 2 else "cold-full"
        fields = {"tool_input": {"command": LONG[i % len(LONG)]}, "tool_use_id": f"l{i}"}
        calls.append(("PreToolUse", fields, how))
    return [*calls, ("Stop", {}, "cold"), ("SessionEnd", {"reason": "exit"}, "cold-full")]


@pytest.mark.slow
def test_fold_checkpoints_written_and_read_by_cold_calls_of_either_path_change_no_answer(tmp_path: Path) -> None:
    mixed = long_session((range(60, 90), range(150, 180)))
    ws = workspace(tmp_path / "ws", None)

    def how(name: str) -> Any:
        if name == "resident":
            return resident
        full = name == "cold-full"
        return lambda agent, ws, raw: cold(agent, ws, raw, full=full)

    got = play_mixed(ws, [(e, f) for e, f, _ in mixed], [how(h) for _, _, h in mixed])
    assert list((ws / ".tether" / "tether.db.folds").glob("*.ckpt")), "a checkpoint was written"
    ws.rename(tmp_path / "mixed")
    workspace(ws, None)
    want = play_mixed(ws, [(e, f) for e, f, _ in mixed], [resident] * len(mixed))
    assert got[0] == want[0]
    assert got[1] == want[1]
    assert len(got[1]) > 2 * 256


def failing_session(ws: Path) -> list[tuple[str, dict[str, Any]]]:
    """Receipts of a command failing again and again move the control state (CAUTIOUS, BLOCKED, back): each
    later decision rests on it, whether the process kept it (resident) or read it back from the log (cold)."""
    calls: list[tuple[str, dict[str, Any]]] = [("SessionStart", {})]
    build = {"command": "python3 build.py"}
    for i in range(10):
        calls.append(("PreToolUse", {"tool_input": build, "tool_use_id": f"f{i}"}))
        calls.append(("PostToolUseFailure", {"tool_input": build, "tool_use_id": f"f{i}", "error": "exit 1: boom"}))
        calls.append(("PreToolUse", {"tool_input": {"command": f"echo {i} > out.txt"}, "tool_use_id": f"w{i}"}))
        calls.append(("PreToolUse", {"tool_input": {"command": "cat src/app.py"}, "tool_use_id": f"r{i}"}))
    return calls


@pytest.mark.slow
def test_control_states_reached_through_failing_receipts_decide_alike_cold_and_resident(tmp_path: Path) -> None:
    replies = compare(tmp_path, "claude-code", None, failing_session)
    reasons = " ".join(r[0] for r in replies)
    assert "control:cautious" in reasons and "control:blocked" in reasons
