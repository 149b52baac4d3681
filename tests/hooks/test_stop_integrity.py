"""A hook session's stop meets the test-integrity checks: the tests compared with the session's own baseline."""

from __future__ import annotations

import json
import subprocess
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hookkit import Hook

from tether.events.kinds_baseline import SuiteBaseline
from tether.events.kinds_hooks import HookReceived, HookStop
from tether.events.store import EventStore
from tether.hooks import session as hook_session
from tether.hooks.session import run_id_for

TEST = "from calc import median\n\n\ndef test_median():\n    assert median([4, 1, 3, 2]) == 2.5\n"
SOURCE = "def median(xs):\n    return sorted(xs)[len(xs) // 2]\n"
FROZEN = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  sandbox: {backend: local, required: false}
  filesystem: {read: ["**"], write: ["**"]}
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
  - {name: write_file, purpose: Write a file., effects: [write]}
  - {name: edit_file, purpose: Edit a file., effects: [read, write]}
verification:
  tests_may_change: false
""" % ("0" * 64)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TEST)
    (tmp_path / "calc.py").write_text(SOURCE)
    return tmp_path


def frozen(project: Path) -> Hook:
    """A session under an envelope that says the tests may not change."""
    (project / ".tether").mkdir(exist_ok=True)
    (project / ".tether" / "envelope.yaml").write_text(FROZEN)
    return Hook(project)


def write(hook: Hook, rel: str, content: str, call_id: str) -> None:
    """The agent writes a file: tether decides, Claude Code writes it, tether records the receipt."""
    path = str(hook.workspace / rel)
    tool_input = {"file_path": path, "content": content}
    hook("PreToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=call_id)
    (hook.workspace / rel).write_text(content)
    hook("PostToolUse", tool_name="Write", tool_input=tool_input, tool_response={}, tool_use_id=call_id)


def stop(hook: Hook) -> dict:
    out = hook("Stop")
    assert out.exit == 0, out
    return json.loads(out.stdout) if out.stdout else {}


def _sid() -> str:
    return json.loads((Path(__file__).parent / "payloads" / "claude-code.Stop.json").read_text())["session_id"]


def test_the_baseline_is_taken_once_when_the_run_is_created(project: Path) -> None:
    hook = Hook(project)
    hook("SessionStart")
    hook.bash("ls")
    with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
        found = [e for e in store.events(run_id_for("claude-code", _sid())) if e.kind == SuiteBaseline.KIND]
        assert len(found) == 1 and found[0].seq == 2, "right after run.started and session.opened, once"
        surface = found[0].data_as(SuiteBaseline).surface
        assert store.get_blob(surface["tests/test_calc.py"]) == TEST.encode()


def skip(project: Path) -> None:
    test = project / "tests" / "test_calc.py"
    test.write_text(TEST.replace("def test", "import pytest\n\n\n@pytest.mark.skip\ndef test"))


def delete(project: Path) -> None:
    (project / "tests" / "test_calc.py").unlink()


def deselect(project: Path) -> None:
    (project / "pytest.ini").write_text("[pytest]\naddopts = -k 'not median'\n")


def symlinked(project: Path) -> None:
    """The test file swapped for a link to a weakened copy outside the walk (a hidden directory)."""
    (project / ".cache").mkdir()
    (project / ".cache" / "test_calc.py").write_text(TEST.replace("== 2.5", "is not None"))
    (project / "tests" / "test_calc.py").unlink()
    (project / "tests" / "test_calc.py").symlink_to(project / ".cache" / "test_calc.py")


def pytest_toml(project: Path) -> None:
    """pytest 9 reads pytest.toml ahead of every other configuration file."""
    (project / "pytest.toml").write_text('[pytest]\naddopts = ["-k", "not median"]\n')


@pytest.mark.parametrize(
    ("weaken", "named"),
    [
        (skip, "modified: tests/test_calc.py"),
        (delete, "deleted: tests/test_calc.py"),
        (deselect, "added: pytest.ini"),
        (symlinked, "deleted: tests/test_calc.py"),
        (pytest_toml, "added: pytest.toml"),
    ],
    ids=["skipped", "deleted", "deselected-by-config", "symlinked", "pytest-toml"],
)
def test_a_stop_after_touching_the_tests_is_blocked_naming_them(
    project: Path, weaken: Callable[[Path], None], named: str
) -> None:
    hook = frozen(project)
    hook("SessionStart")
    weaken(project)  # by a shell command: the bytes tell, whichever tool changed them
    out = stop(hook)
    assert out["decision"] == "block" and named in out["reason"], out
    assert "tests may not change" in out["reason"]


def test_a_prompt_that_forbids_test_edits_makes_a_test_change_block(project: Path) -> None:
    hook = Hook(project)  # the built-in envelope: tests may change unless the session's prompts say otherwise
    hook("SessionStart")
    hook("UserPromptSubmit", prompt="make median right; do not modify the tests")
    write(hook, "tests/test_calc.py", TEST.replace("2.5", "3"), "w1")
    assert "modified: tests/test_calc.py" in stop(hook)["reason"]


def test_a_test_change_that_is_allowed_is_recorded_and_the_stop_let_through(project: Path) -> None:
    hook = Hook(project)
    hook("SessionStart")
    hook("UserPromptSubmit", prompt="add a test for the empty list")
    write(hook, "tests/test_calc.py", TEST + "\n\ndef test_empty():\n    assert median([]) is None\n", "w1")
    assert stop(hook) == {}
    with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
        last = store.events(run_id_for("claude-code", _sid()), kinds={HookStop.KIND})[-1].data_as(HookStop)
    assert last.accepted and any("modified: tests/test_calc.py" in r for r in last.reasons)


def test_source_that_special_cases_a_test_literal_is_blocked(project: Path) -> None:
    hook = Hook(project)
    hook("SessionStart")
    cheat = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n    return sorted(xs)[len(xs) // 2]\n"
    write(hook, "calc.py", cheat, "w1")
    out = stop(hook)
    assert out["decision"] == "block" and "tests/test_calc.py" in out["reason"] and "[4, 1, 3, 2]" in out["reason"]


def test_source_that_answers_only_under_pytest_is_blocked(project: Path) -> None:
    """No test literal in it: it asks whether pytest is running, and gives the test's answer when it is."""
    hook = Hook(project)
    hook("SessionStart")
    cheat = "import sys\n\n\n" + SOURCE.replace(
        "    return", '    if "pytest" in sys.modules and len(xs) % 2 == 0:\n        return 2.5\n    return'
    )
    write(hook, "calc.py", cheat, "w1")
    out = stop(hook)
    assert out["decision"] == "block" and "line 5 names 'pytest'" in out["reason"], out


def test_an_honest_fix_passes(project: Path) -> None:
    hook = frozen(project)
    hook("SessionStart")
    hook("UserPromptSubmit", prompt="make median right; do not modify the tests")
    fix = (
        "def median(xs):\n    s, m = sorted(xs), len(xs) // 2\n"
        "    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2\n"
    )
    write(hook, "calc.py", fix, "w1")
    assert stop(hook) == {}


def test_a_run_without_a_baseline_fails_closed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session begun by an older tether, which recorded no baseline: the stop cannot be judged, and says so."""

    def older(store: object, workspace: object, contract: object = None) -> HookReceived:
        return HookReceived(agent="claude-code", event="SessionStart", session_id="", cwd="")

    monkeypatch.setattr(hook_session, "take_baseline", older)
    hook = Hook(project)
    hook("SessionStart")
    monkeypatch.undo()
    out = stop(hook)
    assert out["decision"] == "block" and "no test baseline" in out["reason"], out


def test_source_a_shell_command_wrote_to_special_case_a_test_literal_is_blocked(project: Path) -> None:
    """The cheat of the test above, written by a Bash heredoc instead of the Write tool: the stop read the lines
    only from the file tools' arguments, so it was accepted. Every line of a Python file the session touched by
    other means is read as written by it (a hook session has no baseline version to tell). Failed before."""
    hook = Hook(project)
    hook("SessionStart")
    cheat = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n    return sorted(xs)[len(xs) // 2]\n"
    command = {"command": f"cat > calc.py <<'EOF'\n{cheat}EOF"}
    hook("PreToolUse", tool_input=command, tool_use_id="b1")
    (project / "calc.py").write_text(cheat)  # what Claude Code's Bash did
    hook("PostToolUse", tool_input=command, tool_use_id="b1", tool_response={})
    out = stop(hook)
    assert out.get("decision") == "block" and "[4, 1, 3, 2]" in out["reason"], out


def test_a_file_the_write_tool_wrote_then_a_shell_command_rewrote_is_read_whole(project: Path) -> None:
    """An honest Write, then a Bash heredoc that puts the cheat in the same file: the Write's lines alone held
    nothing to find. A file changed after its last file-tool receipt is read whole. Failed before."""
    hook = Hook(project)
    hook("SessionStart")
    honest = "def median(xs):\n    s, m = sorted(xs), len(xs) // 2\n    return s[m]\n"
    write(hook, "calc.py", honest, "w1")
    time.sleep(0.05)
    cheat = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n    return sorted(xs)[len(xs) // 2]\n"
    command = {"command": f"cat > calc.py <<'EOF'\n{cheat}EOF"}
    hook("PreToolUse", tool_input=command, tool_use_id="b1")
    (project / "calc.py").write_text(cheat)
    hook("PostToolUse", tool_input=command, tool_use_id="b1", tool_response={})
    out = stop(hook)
    assert out.get("decision") == "block" and "[4, 1, 3, 2]" in out["reason"], out


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


def committed(project: Path, source: str) -> Path:
    """``project`` as a git repository whose one commit holds ``source`` as calc.py."""
    (project / "calc.py").write_text(source)
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start")
    return project


def bash_writes(hook: Hook, rel: str, content: str, call_id: str) -> None:
    command = {"command": f"cat > {rel} <<'EOF'\n{content}EOF"}
    hook("PreToolUse", tool_input=command, tool_use_id=call_id)
    (hook.workspace / rel).write_text(content)  # what Claude Code's Bash did
    hook("PostToolUse", tool_input=command, tool_use_id=call_id, tool_response={})


CHEAT = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n    return sorted(xs)[len(xs) // 2]\n"


def test_a_line_the_session_began_with_is_not_the_sessions(project: Path) -> None:
    """The special case was committed before the session; a shell command then touched the file (a comment
    appended). Read whole, the file's old line refused the stop of every session that touched it (failed before);
    in a git workspace only the lines that are not the file's text in the session's first commit count."""
    committed(project, CHEAT)
    hook = frozen(project)
    hook("SessionStart")
    bash_writes(hook, "calc.py", CHEAT + "# touched\n", "b1")
    assert stop(hook) == {}


def test_a_line_a_shell_command_added_to_a_committed_file_counts(project: Path) -> None:
    committed(project, SOURCE)
    hook = frozen(project)
    hook("SessionStart")
    bash_writes(hook, "calc.py", CHEAT, "b1")
    out = stop(hook)
    assert out.get("decision") == "block" and "[4, 1, 3, 2]" in out["reason"], out


def test_a_forged_object_does_not_make_the_sessions_line_old(project: Path) -> None:
    """The agent rewrites the loose object of calc.py's committed blob to hold its cheat, so that the cheat reads as
    the commit's text. Every object read is hashed and compared with its name: the forged one is no text, and
    every line of the file counts."""
    committed(project, SOURCE)
    hook = frozen(project)
    hook("SessionStart")
    blob = subprocess.run(
        ["git", "-C", str(project), "rev-parse", "HEAD:calc.py"], check=True, capture_output=True, text=True
    ).stdout.strip()
    loose = project / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob %d\x00" % len(CHEAT) + CHEAT.encode()))
    bash_writes(hook, "calc.py", CHEAT, "b1")
    out = stop(hook)
    assert out.get("decision") == "block" and "[4, 1, 3, 2]" in out["reason"], out


def test_a_session_outside_a_repository_or_in_a_subfolder_has_its_origin(project: Path) -> None:
    """The baseline names the commit and the workspace's folder in it; none outside a repository."""
    from tether.hooks.origin import head, texts

    assert head(project) is None
    committed(project, SOURCE)
    (project / "sub").mkdir()
    found = head(project / "sub")
    assert found is not None and found[1] == "sub/"
    commit, _ = found
    assert texts(project, commit, "", ["calc.py", "missing.py", "tests"]) == {"calc.py": SOURCE.encode()}


def test_a_cheat_written_before_the_fold_checkpoint_is_blocked_by_a_stop_restored_from_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold keeps a Write that completed without its text (state.py ``kept_args``): the stop reads the lines it
    wrote from its proposal in the log, here from before the checkpoint a cold process restored the session from."""
    from tether.control import fold as control_fold
    from tether.guard import log as guard_log
    from tether.guard.log import Log

    monkeypatch.setattr(guard_log, "EVERY", 8)
    hook = Hook(project)
    hook("SessionStart")
    cheat = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n    return sorted(xs)[len(xs) // 2]\n"
    write(hook, "calc.py", cheat, "w1")
    for i in range(6):
        hook.bash(f"grep -n median{i} calc.py", call_id=f"b{i}")
    hook_session._CACHE.clear()
    control_fold.clear()
    out = stop(hook)
    (guard,) = hook.resident().values()
    assert isinstance(guard.events, Log) and guard.checkpointed > guard.state.actions["w1"].seq + 1
    assert "content" not in guard.state.actions["w1"].args
    assert out["decision"] == "block" and "[4, 1, 3, 2]" in out["reason"], out
