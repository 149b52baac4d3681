"""Undo of a hook session's file tools (tether/hooks/preimage.py): the PreToolUse that lets a Write, Edit or Codex
patch run reads each file it names first, the PostToolUse records what the call changed, and ``tether undo`` takes
it back as it takes back a loop's ``write_file``. Before, every hook call was "not undoable: it ran without a
workspace snapshot around it". Each test here tries to make undo restore the wrong bytes or claim a call it cannot
know; the answer is a refusal that names the call and why, with nothing changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload

import tether.hooks.launch as launch
from tether.events.backends import open_store
from tether.kernel.undo import Ledger, Selection, undo, undoable

RUN = "claude-code-3f1c2a9e-8b1d-4c55-9a43-5a8f0e2b7c11"  # the recorded payloads' session


#: The built-in envelope, but Writes of ``a.py`` ask.
ASKING = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  filesystem: {read: ["**"], write: ["**"]}
permissions:
  profile: coding
  ask: [{id: ask-a, rule: "write_file(a.py)"}]
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
  - {name: write_file, purpose: Write a file., effects: [write]}
  - {name: edit_file, purpose: Edit a file., effects: [read, write]}
  - {name: read_file, purpose: Read a file., effects: [read]}
""" % ("0" * 64)


class Session:
    """A Claude Code session's file tool calls through the hook (in-process), the tool's effect done by the test."""

    def __init__(self, workspace: Path, agent: str = "claude-code", envelope: Path | None = None) -> None:
        self.ws, self.hook = workspace, Hook(workspace, agent, envelope)
        self.hook("SessionStart")

    def pre(self, tool: str, call_id: str, **tool_input: Any) -> str:
        out = self.hook("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=call_id).stdout
        return str(json.loads(out)["hookSpecificOutput"]["permissionDecision"]) if out else "no decision"

    def post(
        self, tool: str, call_id: str, *, failed: bool = False, response: object = None, **tool_input: Any
    ) -> None:
        event = "PostToolUseFailure" if failed else "PostToolUse"
        extra = {"error": "it failed"} if failed else {"tool_response": response or {"ok": True}}
        self.hook(event, tool_name=tool, tool_input=tool_input, tool_use_id=call_id, **extra)

    def write(self, name: str, text: str, call_id: str) -> None:
        """A Write: judged, run (the test writes the file as Claude Code would), reported."""
        args = {"file_path": str(self.ws / name), "content": text}
        assert self.pre("Write", call_id, **args) == "allow"
        (self.ws / name).write_text(text)
        self.post("Write", call_id, **args)

    def bash(self, command: str, call_id: str) -> None:
        assert self.pre("Bash", call_id, command=command) == "allow"
        subprocess.run(command, shell=True, cwd=self.ws, check=True)
        self.post("Bash", call_id, command=command)

    def store(self) -> Any:
        return open_store(str(self.ws / ".tether" / "tether.db"))

    def undoable(self) -> dict[str, str]:
        store = self.store()
        try:
            return undoable(Ledger.of(store.events(RUN)))
        finally:
            store.close()

    def undo(self, selection: Selection = Selection()) -> Any:
        store = self.store()
        try:
            return undo(store, RUN, selection)
        finally:
            store.close()


@pytest.fixture
def session(tmp_path: Path) -> Session:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    (ws / "run.sh").write_text("echo hi\n")
    (ws / "run.sh").chmod(0o755)
    return Session(ws)


@pytest.fixture
def asking(tmp_path: Path) -> Session:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    (tmp_path / "asking.yaml").write_text(ASKING)
    return Session(ws, envelope=tmp_path / "asking.yaml")


def tether(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tether.cli.main", *args], cwd=cwd, capture_output=True, text=True)


def test_writes_and_edits_of_a_session_are_undone_from_the_cli_and_the_session_goes_on(session: Session) -> None:
    ws = session.ws
    session.write("a.py", "x = 2\n", "w1")  # an existing file rewritten
    (ws / "new").mkdir()
    session.write("new/b.py", "y = 1\n", "w2")  # a file created
    edit = {"file_path": str(ws / "run.sh"), "old_string": "hi", "new_string": "ho"}
    assert session.pre("Edit", "e1", **edit) == "allow"
    (ws / "run.sh").write_text("echo ho\n")
    session.post("Edit", "e1", **edit)
    assert session.undoable() == {"w1": "undoable: 1 file", "w2": "undoable: 1 file", "e1": "undoable: 1 file"}

    done = tether("undo", RUN, cwd=ws)
    assert done.returncode == 0, done.stderr
    assert "undone 3 actions" in done.stdout and "3 files restored" in done.stdout
    assert (ws / "a.py").read_text() == "x = 1\n" and (ws / "run.sh").read_text() == "echo hi\n"
    assert os.stat(ws / "run.sh").st_mode & 0o111, "its executable bit is the image's"
    assert not (ws / "new" / "b.py").exists()
    assert tether("log", "verify", RUN, cwd=ws).returncode == 0
    shown = tether("show", RUN, cwd=ws).stdout
    assert "e1 (edit_file): undone" in shown

    session.write("a.py", "x = 3\n", "w3")  # the session goes on after its undo
    assert session.undoable()["w3"] == "undoable: 1 file"
    assert session.undo(Selection(call_id="w3")).seq is not None
    assert (ws / "a.py").read_text() == "x = 1\n"


def test_a_shell_command_blocks_the_undo_that_reaches_it_and_not_the_one_after_it(session: Session) -> None:
    session.write("a.py", "x = 2\n", "w1")
    session.bash("printf 'x = 9\\n' > a.py", "b1")  # what it changed, tether cannot know
    session.write("c.py", "z = 1\n", "w2")
    assert session.undoable()["b1"].startswith("not undoable: it ran without a workspace snapshot")
    refused = session.undo()
    assert refused.refusals and "b1 (bash" in refused.refusals[0]
    assert (session.ws / "c.py").exists() and (session.ws / "a.py").read_text() == "x = 9\n", "nothing changed"
    assert session.undo(Selection(call_id="w2")).seq is not None
    assert not (session.ws / "c.py").exists()


def test_a_file_changed_since_the_call_is_a_conflict_and_nothing_is_changed(session: Session) -> None:
    session.write("a.py", "x = 2\n", "w1")
    session.write("c.py", "z = 1\n", "w2")
    (session.ws / "a.py").write_text("x = 2  # the user's edit\n")
    out = session.undo()
    assert out.refusals and "a.py: changed outside the run" in out.refusals[0]
    assert (session.ws / "c.py").exists() and "user" in (session.ws / "a.py").read_text()


def test_a_write_to_a_symlink_is_not_undoable(session: Session) -> None:
    """The tool writes where the link points, not the path read (here a file the gate lets it write, inside the
    workspace): the link's before and after would say nothing changed."""
    (session.ws / "real").mkdir()
    (session.ws / "real" / "t.py").write_text("t = 1\n")
    (session.ws / "l.py").symlink_to(session.ws / "real" / "t.py")
    args = {"file_path": str(session.ws / "l.py"), "content": "t = 2\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    (session.ws / "real" / "t.py").write_text("t = 2\n")
    session.post("Write", "w1", **args)
    said = session.undoable().get("w1", "")
    assert said.startswith("not undoable: its changes are not all known") and "symlink" in said, said


@pytest.mark.parametrize(
    "name",
    [
        "d/t.py",  # a folder linked inside the workspace
        "d/sub/../t.py",  # ``..`` after a linked folder: the kernel goes up from where the link leads
        "alias/real/t.py",  # the workspace under another spelling (a link to it from outside)
    ],
)
def test_a_write_through_a_linked_folder_is_undone_at_the_real_path(session: Session, name: str) -> None:
    """The gate judges a path where it really leads (tether/policy/paths.py); the image is read there too, so the
    call it allowed is undoable, and undo restores the real file, not a path the link stood for."""
    ws = session.ws
    (ws / "real" / "sub").mkdir(parents=True)
    (ws / "real" / "t.py").write_text("t = 1\n")
    (ws / "d").symlink_to(ws / "real")
    (ws.parent / "alias").symlink_to(ws)
    named = str(ws.parent / name) if name.startswith("alias/") else str(ws / name)
    args = {"file_path": named, "content": "t = 2\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    Path(named).write_text("t = 2\n")
    session.post("Write", "w1", **args)
    assert session.undoable() == {"w1": "undoable: 1 file"}
    done = tether("undo", RUN, "--action", "w1", cwd=ws)
    assert done.returncode == 0 and "1 file restored" in done.stdout, done.stdout + done.stderr
    assert (ws / "real" / "t.py").read_text() == "t = 1\n" and (ws / "d").is_symlink()
    assert not (ws / "t.py").exists() and not (ws / "d" / "sub" / "t.py").exists()


def test_a_linked_folder_moved_while_the_call_ran_is_not_undoable(session: Session) -> None:
    """The link read when the call was decided is pointed elsewhere before the tool writes: the write lands on a file
    the image never read. The receipt sees that the name no longer leads to the file read and refuses the call;
    without the check, undo would say the call changed nothing and leave the other file written."""
    ws = session.ws
    for folder in ("one", "two"):
        (ws / folder).mkdir()
        (ws / folder / "t.py").write_text(f"{folder} = 1\n")
    (ws / "d").symlink_to(ws / "one")
    args = {"file_path": str(ws / "d" / "t.py"), "content": "t = 2\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    (ws / "d").unlink()
    (ws / "d").symlink_to(ws / "two")  # a command of the agent's, in the background, moves the link
    (ws / "d" / "t.py").write_text("t = 2\n")
    session.post("Write", "w1", **args)
    said = session.undoable()["w1"]
    assert "no longer leads to it" in said and "one/t.py" in said, said
    assert session.undo(Selection(call_id="w1")).refusals
    assert (ws / "two" / "t.py").read_text() == "t = 2\n" and (ws / "one" / "t.py").read_text() == "one = 1\n"


def test_a_link_that_leads_out_of_the_workspace_is_denied_and_nothing_is_read(session: Session) -> None:
    outside = session.ws.parent / "outside"
    outside.mkdir()
    (outside / "t.py").write_text("secret = 1\n")
    (session.ws / "out").symlink_to(outside)
    args = {"file_path": str(session.ws / "out" / "t.py"), "content": "t = 2\n"}
    assert session.pre("Write", "w1", **args) == "deny"
    store = session.store()
    try:
        assert not [e for e in store.events(RUN) if e.kind == "hook.preimage"]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("named", "answer", "said"),
    [
        ("a\0b.py", "deny", None),  # a NUL byte: no such path, the gate refuses it before anything is read
        ("n" * 5000 + ".py", "allow", "File name too long"),  # too long to open: not undoable, still answered
        ("a/../../etc/passwd", "deny", None),  # out of the workspace by ``..``
        ("new/", "allow", "names a folder"),  # names a folder, not a file
    ],
)
def test_a_hostile_path_is_answered_and_never_made_undoable(
    session: Session, named: str, answer: str, said: str | None
) -> None:
    args = {"file_path": f"{session.ws}/{named}", "content": "x = 2\n"}
    assert session.pre("Write", "w1", **args) == answer
    session.post("Write", "w1", **args)
    found = session.undoable().get("w1")
    if said is None:
        assert found is None or not found.startswith("undoable"), found
    else:
        assert found is not None and found.startswith("not undoable") and said in found, found
    assert tether("log", "verify", RUN, cwd=session.ws).returncode == 0


def test_the_limit_on_a_kept_file_is_the_snapshot_s() -> None:
    """Kept twice (the cold hook path does not import the snapshot): held equal here."""
    from tether import snapshot
    from tether.hooks import preimage

    assert preimage.MAX_BYTES == snapshot.MAX_BLOB_BYTES


def test_two_calls_writing_one_file_at_once_are_neither_undoable(session: Session) -> None:
    """Claude Code may run calls in parallel: both read the file before either ran, so neither's before-image is
    what it replaced. Undoing one alone would silently take the other's edit back."""
    a = {"file_path": str(session.ws / "a.py"), "content": "x = 2\n"}
    b = {"file_path": str(session.ws / "a.py"), "content": "x = 3\n"}
    session.pre("Write", "w1", **a)
    session.pre("Write", "w2", **b)
    (session.ws / "a.py").write_text("x = 2\n")
    (session.ws / "a.py").write_text("x = 3\n")
    session.post("Write", "w1", **a)
    session.post("Write", "w2", **b)
    said = session.undoable()
    assert "another call wrote it" in said["w1"] and "another call wrote it" in said["w2"], said
    assert session.undo(Selection(call_id="w1")).refusals
    assert (session.ws / "a.py").read_text() == "x = 3\n"


@pytest.mark.parametrize("when", ["decided while the write was in flight", "decided first, reported during it"])
def test_a_shell_command_run_while_a_write_was_in_flight_makes_it_not_undoable(session: Session, when: str) -> None:
    """A shell command names no file, so a file it wrote while the Write ran is in the Write's after-image: undoing
    the Write alone would take the command's change back too, and the command's own undo is refused. Fail closed."""
    ws = session.ws
    args = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    sh = {"command": "sed -i s/2/3/ a.py"}
    if when.startswith("decided first"):
        assert session.pre("Bash", "b1", **sh) == "allow"
        assert session.pre("Write", "w1", **args) == "allow"
    else:
        assert session.pre("Write", "w1", **args) == "allow"
        assert session.pre("Bash", "b1", **sh) == "allow"
    (ws / "a.py").write_text("x = 2\n")
    subprocess.run(sh["command"], shell=True, cwd=ws, check=True)
    session.post("Bash", "b1", **sh)
    session.post("Write", "w1", **args)
    said = session.undoable()["w1"]
    assert "b1 (bash) ran while this call was in flight" in said, said
    assert session.undo(Selection(call_id="w1")).refusals
    assert (ws / "a.py").read_text() == "x = 3\n"


def test_reads_in_flight_beside_a_write_and_a_declined_command_before_it_leave_it_undoable(asking: Session) -> None:
    """What cannot write leaves a call undoable: a Read run beside it, and a command the gate asked about and the user
    declined before it (decided, never reported)."""
    ws = asking.ws
    (ws / "b.py").write_text("b = 1\n")
    assert asking.pre("Bash", "b1", command="make install") == "ask"  # declined: never run
    args = {"file_path": str(ws / "b.py"), "content": "b = 2\n"}
    assert asking.pre("Write", "w1", **args) == "allow"
    read = {"file_path": str(ws / "a.py")}
    assert asking.pre("Read", "r1", **read) == "allow"
    asking.post("Read", "r1", **read)
    (ws / "b.py").write_text("b = 2\n")
    asking.post("Write", "w1", **args)
    assert asking.undoable()["w1"] == "undoable: 1 file"


#: The built-in tools, and two MCP tools: one that only reads, one whose contract writes.
WITH_MCP = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  filesystem: {read: ["**"], write: ["**"]}
permissions: {profile: coding}
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
  - {name: write_file, purpose: Write a file., effects: [write]}
  - {name: edit_file, purpose: Edit a file., effects: [read, write]}
  - {name: mcp__docs__search, purpose: Search the docs., effects: [read]}
  - {name: mcp__fs__write, purpose: Write a file through a server., effects: [write]}
""" % ("0" * 64)


@pytest.mark.parametrize(("tool", "undoable"), [("mcp__fs__write", False), ("mcp__docs__search", True)])
def test_an_mcp_tool_in_flight_beside_a_write_blocks_its_undo_only_when_its_contract_writes(
    tmp_path: Path, tool: str, undoable: bool
) -> None:
    """An MCP server's tool names no file tether can read: one whose contract writes may have changed the Write's
    file, so the Write is refused whole; one that only reads leaves it undoable."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    (tmp_path / "mcp.yaml").write_text(WITH_MCP)
    session = Session(ws, envelope=tmp_path / "mcp.yaml")
    args = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    assert session.pre(tool, "m1", path="a.py") != "deny"
    (ws / "a.py").write_text("x = 2\n")
    session.post(tool, "m1", path="a.py")
    session.post("Write", "w1", **args)
    said = session.undoable()["w1"]
    if undoable:
        assert said == "undoable: 1 file", said
    else:
        assert f"m1 ({tool}) ran while this call was in flight" in said, said


def test_an_undeclared_mcp_tool_let_run_beside_a_write_blocks_its_undo(session: Session) -> None:
    """The built-in envelope asks for an MCP tool it does not declare: what it does is not known, so once a person
    may have let it run beside a Write, what it wrote is unknown too. Before, its stand-in contract (an external
    effect, no write) left the Write undoable, and undo took back what a filesystem server wrote beside it."""
    ws = session.ws
    args = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    assert session.pre("mcp__fs__write_file", "m1", path=str(ws / "a.py"), content="x = 3\n") == "ask"
    (ws / "a.py").write_text("x = 2\n")
    session.post("Write", "w1", **args)
    said = session.undoable()["w1"]
    assert "m1 (mcp_undeclared) ran while this call was in flight" in said, said


def test_a_plan_written_beside_a_write_leaves_it_undoable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's plan (or memory) is an ``agent_notes`` call that writes the one file it names, outside the
    workspace. Before, it counted as a writer of unknown files, and a Write beside it was not undoable."""
    home = tmp_path / "home"
    (home / ".claude" / "plans").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    session = Session(ws)
    args = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    plan = {"file_path": str(home / ".claude" / "plans" / "brave-fox.md"), "content": "# Plan\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    assert session.pre("Write", "p1", **plan) == "allow"
    Path(plan["file_path"]).write_text(plan["content"])
    session.post("Write", "p1", **plan)
    (ws / "a.py").write_text("x = 2\n")
    session.post("Write", "w1", **args)
    assert session.pre("Write", "p2", **plan) == "allow"  # proposed before the next Write, reported during it
    assert session.pre("Write", "w2", **{**args, "content": "x = 3\n"}) == "allow"
    session.post("Write", "p2", **plan)
    (ws / "a.py").write_text("x = 3\n")
    session.post("Write", "w2", **{**args, "content": "x = 3\n"})
    assert {c: session.undoable()[c] for c in ("w1", "w2")} == {"w1": "undoable: 1 file", "w2": "undoable: 1 file"}


def test_a_tool_with_no_contract_that_ran_anyway_beside_a_write_blocks_its_undo(session: Session) -> None:
    """A tool the envelope does not know is denied; a receipt of it says it ran all the same (another hook let it
    through, the agent ignored the answer). What it wrote is unknown: fail closed."""
    ws = session.ws
    args = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    assert session.pre("Frobnicate", "f1", target="a.py") == "deny"
    (ws / "a.py").write_text("x = 2\n")
    session.post("Frobnicate", "f1", target="a.py")
    session.post("Write", "w1", **args)
    said = session.undoable()["w1"]
    assert "f1 (Frobnicate) ran while this call was in flight" in said, said


def test_a_write_beside_another_whose_image_was_not_read_whole_is_not_undoable(session: Session) -> None:
    """The other call writes through a symlink: its image names no file, so what it wrote is unknown."""
    ws = session.ws
    (ws / "l.py").symlink_to(ws / "a.py")
    mine = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    other = {"file_path": str(ws / "l.py"), "content": "x = 3\n"}
    assert session.pre("Write", "w1", **mine) == "allow"
    assert session.pre("Write", "w2", **other) == "allow"
    (ws / "a.py").write_text("x = 2\n")
    (ws / "a.py").write_text("x = 3\n")
    session.post("Write", "w2", **other)
    session.post("Write", "w1", **mine)
    said = session.undoable()["w1"]
    assert "w2 (write_file) ran while this call was in flight" in said, said


def test_a_receipt_without_a_decision_before_it_is_not_undoable(session: Session) -> None:
    """A PostToolUse of a call tether never judged (the hook was installed mid-call): no image was read before it."""
    args = {"file_path": str(session.ws / "a.py"), "content": "x = 2\n"}
    (session.ws / "a.py").write_text("x = 2\n")
    session.post("Write", "w1", **args)
    assert session.undoable()["w1"].startswith("not undoable: it ran without a workspace snapshot")


def test_a_denied_write_reads_nothing_and_an_asked_one_is_read(asking: Session) -> None:
    denied = {"file_path": str(asking.ws / ".git" / "config"), "content": "x"}
    assert asking.pre("Write", "w1", **denied) == "deny"
    asked = {"file_path": str(asking.ws / "a.py"), "content": "x = 2\n"}
    assert asking.pre("Write", "w2", **asked) == "ask"
    store = asking.store()
    try:
        images = [e.payload["call_id"] for e in store.events(RUN) if e.kind == "hook.preimage"]
    finally:
        store.close()
    assert images == ["w2"]


def test_a_failed_tool_that_changed_nothing_has_nothing_to_undo(session: Session) -> None:
    edit = {"file_path": str(session.ws / "a.py"), "old_string": "absent", "new_string": "y"}
    session.pre("Edit", "e1", **edit)
    session.post("Edit", "e1", failed=True, **edit)
    assert session.undoable()["e1"] == "nothing to undo: it changed no file"


def test_a_file_over_the_limit_is_not_kept_and_its_call_is_not_undoable(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.hooks import preimage

    monkeypatch.setattr(preimage, "MAX_BYTES", 4)
    session.write("a.py", "x = 2\n", "w1")
    assert "over 32 MiB" in session.undoable()["w1"]


def test_a_codex_patch_of_two_files_is_undone_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("a = 1\n")
    codex = Session(ws, "codex")
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-a = 1\n+a = 2\n*** Add File: b.py\n+b = 1\n*** End Patch\n"
    codex.pre("apply_patch", "p1", command=patch)
    (ws / "a.py").write_text("a = 2\n")
    (ws / "b.py").write_text("b = 1\n")
    codex.post("apply_patch", "p1", command=patch)
    store = codex.store()
    try:
        (run,) = store.runs()
        run_id = run.run_id
        assert undoable(Ledger.of(store.events(run_id)))["p1"] == "undoable: 2 files"
        assert undo(store, run_id).seq is not None
    finally:
        store.close()
    assert (ws / "a.py").read_text() == "a = 1\n" and not (ws / "b.py").exists()


def test_an_asked_write_never_run_does_not_block_a_later_write_of_its_file(asking: Session) -> None:
    """A call the user declined was read but never reported: it is not in flight forever."""
    asked = {"file_path": str(asking.ws / "a.py"), "content": "x = 2\n"}
    assert asking.pre("Write", "w1", **asked) == "ask"
    (asking.ws / "b.py").write_text("b = 1\n")
    args = {"file_path": str(asking.ws / "b.py"), "content": "b = 2\n"}  # the user asks for another file instead
    assert asking.pre("Write", "w2", **args) == "allow"
    (asking.ws / "b.py").write_text("b = 2\n")
    asking.post("Write", "w2", **args)
    assert asking.pre("Write", "w3", **asked) == "ask"  # then lets the first through after all
    (asking.ws / "a.py").write_text("x = 2\n")
    asking.post("Write", "w3", **asked)
    assert asking.undoable() == {"w2": "undoable: 1 file", "w3": "undoable: 1 file"}


def test_a_file_changed_while_its_write_waited_for_an_answer_is_not_undoable(asking: Session) -> None:
    """The image is read when the call is decided; the user edits the file while the question is open, then lets
    the Write run. Claude Code's PostToolUse says what the Write replaced (``originalFile``): not the image. Before,
    the call was undoable and undo put back the image, taking the user's edit away with the Write."""
    ws = asking.ws
    args = {"file_path": str(ws / "a.py"), "content": "x = 2\n"}
    assert asking.pre("Write", "w1", **args) == "ask"
    (ws / "a.py").write_text("x = 1\nkept = True  # the user's edit\n")
    replaced = (ws / "a.py").read_text()
    (ws / "a.py").write_text("x = 2\n")
    response = {"type": "update", "filePath": args["file_path"], "content": "x = 2\n", "originalFile": replaced}
    asking.post("Write", "w1", response=response, **args)
    assert "a.py: the tool replaced other contents than were read" in asking.undoable()["w1"]
    done = tether("undo", RUN, cwd=ws)
    assert done.returncode != 0 and "w1 (write_file" in done.stdout + done.stderr
    assert (ws / "a.py").read_text() == "x = 2\n", "nothing changed"
    assert tether("log", "verify", RUN, cwd=ws).returncode == 0


@pytest.mark.parametrize(
    ("before", "said", "undoable"),
    [
        (b"x = 1\n", "x = 1\n", True),  # as read
        (b"x = 1\r\ny = 2\r\n", "x = 1\ny = 2\n", True),  # CRLF given as LF
        (b"x = 1\r\n", "x = 1\r\n", True),
        (b"\xef\xbb\xbfx = 1\n", "\ufeffx = 1\n", True),  # a UTF-8 byte order mark, kept or not
        (b"\xef\xbb\xbfx = 1\n", "x = 1\n", True),
        ("\ufeffx = 1\n".encode("utf-16-le"), "x = 1\n", True),  # UTF-16 after its mark
        (None, None, True),  # a new file: no file then, none now
        (b"x = 1\n", "x = 1\n\n", False),
        (b"x = 1\r\n", "x = 1\r\r\n", False),
        (b"x = 1\n", None, False),  # the tool found no file where one was read
        (None, "x = 1\n", False),  # and a file where none was
        (b"x = 1\n", 7, False),  # malformed: no account at all
        (b"x = 1\n", ["x = 1\n"], False),
        (b"x = \xff\n", "x = \ufffd\n", True),  # a byte that is not UTF-8, read as the replacement character
        (b"x = 1\n", "x = 1\ud800\n", False),  # a lone surrogate
    ],
)
def test_what_the_tool_says_it_replaced_is_held_against_the_image(
    session: Session, before: bytes | None, said: object, undoable: bool
) -> None:
    path = session.ws / "f.txt"
    if before is not None:
        path.write_bytes(before)
    args = {"file_path": str(path), "content": "new\n"}
    assert session.pre("Write", "w1", **args) == "allow"
    path.write_text("new\n")
    session.post("Write", "w1", response={"type": "update", "originalFile": said}, **args)
    verdict = session.undoable()["w1"]
    assert verdict.startswith("undoable") is undoable, verdict
    if undoable:
        assert session.undo().seq is not None
        assert (path.read_bytes() if path.exists() else None) == before


def test_an_account_the_store_cannot_check_refuses_the_undo(tmp_path: Path) -> None:
    """The image's bytes are read back to compare an account that differs by line ends; a store without them (a file
    kept redacted, under another hash) cannot vouch for the image: the call is refused, never taken as the same."""
    from tether.canonical import bytes_hash
    from tether.errors import InputError
    from tether.events.kinds_files import FileImage
    from tether.hooks import preimage

    class Store:
        def get_blob(self, digest: str) -> bytes:
            raise InputError(f"no blob {digest}")

    class Guard:
        store = Store()

    data = b"x = 1\r\n"
    before = FileImage(kind="file", digest=bytes_hash(data), mode=0o644, size=len(data))
    assert not preimage._as_said(Guard(), before, "x = 1\n")  # type: ignore[arg-type]
    assert preimage._as_said(Guard(), before, "x = 1\r\n"), "as read: no blob needed"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tool", "args", "response"),
    [
        ("Edit", {"old_string": "x = 1", "new_string": "x = 2"}, {"originalFile": "other\n", "oldString": "x = 1"}),
        ("NotebookEdit", {"new_source": "x = 2"}, {"original_file": "other\n", "updated_file": "x = 2\n"}),
    ],
)
def test_an_edit_and_a_notebook_edit_are_held_to_what_they_say_they_replaced(
    session: Session, tool: str, args: dict[str, Any], response: dict[str, Any]
) -> None:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    args = {key: str(session.ws / "a.py"), **args}
    assert session.pre(tool, "e1", **args) == "allow"
    (session.ws / "a.py").write_text("x = 2\n")
    session.post(tool, "e1", response=response, **args)
    assert "the tool replaced other contents" in session.undoable()["e1"]
    session.pre(tool, "e2", **args)
    (session.ws / "a.py").write_text("x = 3\n")
    session.post(tool, "e2", response={**response, next(iter(response)): "x = 2\n"}, **args)
    assert session.undoable()["e2"] == "undoable: 1 file"


def test_a_receipt_that_says_nothing_of_the_file_is_taken_at_the_image(session: Session) -> None:
    """An older Claude Code, a response that is not an object, a Codex patch: the image stands as read."""
    for i, response in enumerate([{"ok": True}, "done", ["x"]]):
        args = {"file_path": str(session.ws / "a.py"), "content": f"x = {i + 2}\n"}
        assert session.pre("Write", f"w{i}", **args) == "allow"
        (session.ws / "a.py").write_text(f"x = {i + 2}\n")
        session.post("Write", f"w{i}", response=response, **args)
    assert set(session.undoable().values()) == {"undoable: 1 file"}


def test_a_cold_hook_process_records_the_images_and_the_undo_takes_them_back(tmp_path: Path) -> None:
    """Through the launcher (``python -I -S launch.py``), each call its own process, where a call past the session's
    first takes the plain path (tether.plain's records, no pydantic): the same images, the same undo."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "CLAUDE_"))}
    env |= {
        "TETHER_HOOK_DAEMON": "0",
        "CLAUDE_PROJECT_DIR": str(ws),
        "PYTHONPATH": str(Path(launch.__file__).parents[2]),
    }

    def call(event: str, **fields: Any) -> subprocess.CompletedProcess[bytes]:
        data = json.dumps(payload(f"claude-code.{event}", ws, **fields)).encode()
        argv = [sys.executable, "-I", "-S", launch.__file__, "claude-code", "--no-daemon"]
        done = subprocess.run(argv, input=data, capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        return done

    (ws / "real").mkdir()
    (ws / "d").symlink_to(ws / "real")
    call("SessionStart")
    for i, name in enumerate(["a.py", "a.py", "a.py", "d/b.py"]):  # the last through a linked folder
        args = {"file_path": str(ws / name), "content": f"x = {i + 2}\n"}
        assert b'"allow"' in call("PreToolUse", tool_name="Write", tool_input=args, tool_use_id=f"w{i}").stdout
        replaced = (ws / name).read_text() if (ws / name).exists() else None
        (ws / name).write_text(f"x = {i + 2}\n")
        response = {"type": "create" if replaced is None else "update", "originalFile": replaced}
        call("PostToolUse", tool_name="Write", tool_input=args, tool_use_id=f"w{i}", tool_response=response)
    done = tether("undo", RUN, "--to", "0", cwd=ws)
    assert done.returncode == 0 and "undone 4 actions" in done.stdout, done.stdout + done.stderr
    assert (ws / "a.py").read_text() == "x = 1\n" and not (ws / "real" / "b.py").exists()

    args = {"file_path": str(ws / "a.py"), "content": "x = 9\n"}  # and holds a receipt to what the tool replaced
    call("PreToolUse", tool_name="Write", tool_input=args, tool_use_id="w9")
    (ws / "a.py").write_text("x = 9\n")
    response = {"type": "update", "originalFile": "x = 1  # changed meanwhile\n"}
    call("PostToolUse", tool_name="Write", tool_input=args, tool_use_id="w9", tool_response=response)
    store = open_store(str(ws / ".tether" / "tether.db"))
    try:
        assert "the tool replaced other contents" in undoable(Ledger.of(store.events(RUN)))["w9"]
    finally:
        store.close()
