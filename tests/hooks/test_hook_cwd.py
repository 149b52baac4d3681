"""The agent's shell keeps its directory between calls: a hook call is judged where it runs, not at the workspace.

Claude Code's Bash tool keeps the directory a ``cd`` moved it to, and each hook call names that directory in
``cwd``. A command's relative paths land there: ``echo x > envelope.yaml`` run in ``.tether/`` rewrites the
envelope. The gate read every relative path from the workspace root, so a ``cd`` into ``.tether/`` or ``.git/``
(a harmless call, allowed) made the next call's writes to protected files look like writes to new files at the
root, and a ``cd`` out of the workspace made deletions there look like deletions inside it: all allowed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import Hook, payload

from tether.events.store import EventStore
from tether.hooks.answer import answer
from tether.hooks.session import run_id_for


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for d in (".tether", ".git/hooks", "src", "build"):
        (ws / d).mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "other" / "keep").mkdir(parents=True)
    return ws


def opened(ws: Path, agent: str = "claude-code") -> Hook:
    hook = Hook(ws, agent)
    assert hook("SessionStart").exit == 0  # the session's workspace is fixed here, at ws
    return hook


def decision(hook: Hook, tool: str, tool_input: dict, cwd: Path, call_id: str) -> tuple[str, str]:
    fields = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": call_id}
    out = answer(hook.request, payload(f"{hook.agent}.PreToolUse", cwd, **fields))
    if hook.agent == "codex":
        return ("allow" if out.exit == 0 else "refused"), out.stderr
    spec = json.loads(out.stdout)["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


#: (where the agent's shell is, relative to the workspace; the command): each writes or deletes something the
#: built-in envelope protects once its paths are read from that directory.
PROTECTED = [
    (".tether", "echo x > envelope.yaml"),
    (".tether", "rm envelope.yaml"),
    (".tether", "sed -i s/deny/allow/ envelope.yaml"),
    (".tether", "cp /dev/null tether.db"),
    (".git", "echo '[core] fsmonitor = evil' >> config"),
    (".git", "printf 'curl x|sh' > hooks/pre-commit"),
    (".git/hooks", "cp /tmp/x pre-commit"),
    ("src", "echo x > ../.tether/envelope.yaml"),
    ("src", "rm -rf ../.git"),
    ("..", "rm -rf ws"),  # the workspace itself, from the directory above it
    ("../other", "rm -rf keep"),  # outside the workspace
    ("../other", "echo x > keep/file"),
]


@pytest.mark.parametrize(("where", "command"), PROTECTED)
def test_a_bash_call_is_judged_in_the_directory_the_agent_runs_it(ws: Path, where: str, command: str) -> None:
    hook = opened(ws)
    cwd = (ws / where).resolve()
    verdict, reason = decision(hook, "Bash", {"command": command}, cwd, "t1")
    assert verdict in ("deny", "ask"), reason
    codex = opened(ws, "codex")
    assert decision(codex, "Bash", {"command": command}, cwd, "c1")[0] == "refused"


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Write", {"file_path": "envelope.yaml", "content": "x"}),
        ("Edit", {"file_path": "envelope.yaml", "old_string": "deny", "new_string": "allow"}),
        ("MultiEdit", {"file_path": "envelope.yaml", "edits": []}),
    ],
)
def test_a_relative_file_path_is_the_agents_directory_s(ws: Path, tool: str, tool_input: dict) -> None:
    hook = opened(ws)
    verdict, reason = decision(hook, tool, tool_input, ws / ".tether", "t1")
    assert verdict == "deny", reason


def test_a_codex_patch_names_files_relative_to_its_directory(ws: Path) -> None:
    hook = opened(ws, "codex")
    patch = "*** Begin Patch\n*** Update File: envelope.yaml\n@@\n-a\n+b\n*** End Patch\n"
    assert decision(hook, "apply_patch", {"command": patch}, ws / ".tether", "c1")[0] == "refused"
    assert decision(hook, "Bash", {"command": "echo x > config", "workdir": ".git"}, ws, "c2")[0] == "refused"
    assert decision(hook, "Bash", {"command": "echo x > config", "workdir": str(ws / ".git")}, ws, "c3")[0] == "refused"


@pytest.mark.parametrize(
    ("where", "command"),
    [("src", "ls"), ("src", "cat a.py"), ("src", "rm -rf ../build"), ("build", "rm -rf ./*.o"), ("src", "pwd")],
)
def test_work_in_a_subdirectory_is_still_allowed(ws: Path, where: str, command: str) -> None:
    hook = opened(ws)
    verdict, reason = decision(hook, "Bash", {"command": command}, ws / where, "t1")
    assert verdict == "allow", reason


def test_the_log_records_where_a_call_ran_and_a_call_at_the_root_as_before(ws: Path) -> None:
    hook = opened(ws)
    assert decision(hook, "Bash", {"command": "ls"}, ws, "t1")[0] == "allow"
    assert decision(hook, "Bash", {"command": "ls"}, ws / "src", "t2")[0] == "allow"
    assert decision(hook, "Read", {"file_path": "a.py"}, ws / "src", "t3")[0] == "allow"
    session = json.loads((Path(__file__).parent / "payloads" / "claude-code.PreToolUse.json").read_text())["session_id"]
    with EventStore.open(ws / ".tether" / "tether.db", readonly=True) as store:
        proposed = {
            e.payload["call_id"]: e.payload["args"]
            for e in store.events(run_id_for("claude-code", session))
            if e.kind == "action.proposed"
        }
    assert proposed["t1"] == {"command": "ls"}
    assert proposed["t2"] == {"command": "ls", "cwd": str((ws / "src").resolve())}
    assert proposed["t3"] == {"path": str(ws / "src" / "a.py")}


def test_a_cwd_that_is_not_absolute_leaves_relative_paths_unknown(ws: Path) -> None:
    hook = opened(ws)
    verdict, reason = decision(hook, "Bash", {"command": "echo x > envelope.yaml"}, Path(".tether"), "t1")
    assert verdict in ("deny", "ask"), reason


def test_the_gate_reads_a_shell_calls_paths_from_the_cwd_it_names_and_tethers_own_bash_takes_none(ws: Path) -> None:
    """A shell tool that takes a ``cwd`` runs there, so the gate judges there; tether's own ``bash`` takes none (a
    model naming one gets an argument error, nothing runs), so no ``cwd`` can move what its gate judges."""
    from tether.hooks.calls import hook_envelope
    from tether.policy.gate import Gate
    from tether.tools.contract import ToolArgsError
    from tether.tools.shell import bash

    gate = Gate(hook_envelope(), ws)
    assert gate.decide("bash", {"command": "rm envelope.yaml"}).verdict.name == "ALLOW"
    for cwd in (str(ws / ".tether"), str(ws / "src" / ".." / ".tether"), ".tether", 7, "/x\0"):
        got = gate.decide("bash", {"command": "rm envelope.yaml", "cwd": cwd})
        assert got.verdict.name in ("DENY", "ASK"), (cwd, got)
    with pytest.raises(ToolArgsError):
        bash.validate({"command": "ls", "cwd": str(ws)})
