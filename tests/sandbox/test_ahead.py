"""bubblewrap sandboxes set up ahead (sandbox/ahead.py): while a run drives the bubblewrap sandbox, the next shell
command's sandbox is set up as soon as a command ends, its shell waiting on a pipe for the command. Real bubblewrap
throughout.

Attacked here: that the command runs as in a sandbox set up for it (the same shell, limits, environment, covers);
that nothing runs before the command is written (a ``before`` that raises; tether SIGKILLed while one waits); that a
sandbox set up ahead is never used where a fresh one would differ: a covered file replaced under its name (the
cover bound over the old file would not hide the new one), any other change in the workspace, another working
directory, a changed environment, a workspace made again under its path, the sandbox killed; that the calls it
cannot carry (an argv, the call's own variables, carried secrets) start fresh and leave it waiting; that timeouts
and leftovers are handled as for any command; and that a run's commands do use them and leave none behind."""

from __future__ import annotations

import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_warm import ENV, PROBE, gone, ran_in

from tether.sandbox import TIMEOUT_EXIT_CODE, BwrapSandbox
from tether.sandbox.bwrap import Carried
from tether.sandbox.doctor import survivors
from tether.sandbox.process import NotReleased
from tether.sandbox.reaper import become_subreaper, children

pytestmark = pytest.mark.bwrap


def run(box: BwrapSandbox, cwd: Path, command: str | list[str], **kw: object) -> tuple[int, str, str]:
    r = box.run(command, cwd=cwd, timeout_s=30, **kw)  # type: ignore[arg-type]
    return r.exit_code, r.stdout, r.stderr


def waiting(box: BwrapSandbox) -> int:
    """The pid of the bubblewrap set up for ``box``'s next shell command (one must wait)."""
    idle = box._ahead.idle
    assert idle is not None
    return idle.pid


def bwrap_children() -> list[int]:
    """This process's children that are bubblewrap, alive (not zombies)."""
    found = []
    for pid in children():
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].endswith(b"bwrap") and state not in (b"Z", b"X"):
                    found.append(pid)
        except OSError:
            pass
    return found


def test_a_command_runs_as_in_a_sandbox_set_up_for_it(workspace: Path) -> None:
    """Line numbers, ``$_``, ``$0``, ``$#``, ``$-``, the descriptors, the limits, the umask, the options, the
    directory, a function's line, bash's message for a missing command, the exit status and the environment: the
    same in a sandbox set up ahead as in one set up for the call (held, as the runtime runs commands)."""
    cold = BwrapSandbox(workspace)
    expected = run(cold, workspace, PROBE, before=lambda: None)
    expected_env = run(cold, workspace, ENV)
    box = BwrapSandbox(workspace)
    with box.warm():
        run(box, workspace, "true")  # set up for the call: the next one waits already
        waiting(box)
        got = run(box, workspace, PROBE, before=lambda: None)
        env = run(box, workspace, ENV)
    assert box.warm_runs == 2
    assert got == expected and expected[0] == 7
    assert "line 2 last exec zero bash args 0 dash hBc reply unset var unset\nline 3\n" in expected[1]
    assert "fds 0 1 2 3\n" in expected[1] and "in f line 5" in expected[1]
    assert env == expected_env and "HOME=/home/sandbox" in env[1]
    assert ran_in(got)[1] == 2  # the command's shell, in the sandbox's own pid namespace


def test_nothing_runs_until_the_command_is_written_and_the_end_of_warm_stops_the_sandbox(workspace: Path) -> None:
    box = BwrapSandbox(workspace)
    with box.warm():
        run(box, workspace, "true")
        sandbox = waiting(box)
        time.sleep(0.3)  # ample for a shell to have run anything it was going to
        assert os.listdir(workspace) == [] and sandbox in bwrap_children()
    assert box._ahead.idle is None and gone(sandbox) and bwrap_children() == []
    run(box, workspace, "true")  # outside warm(): none is set up for a later call
    assert box._ahead.idle is None and bwrap_children() == []


def test_a_held_command_waits_for_before_and_never_runs_if_it_raises(workspace: Path) -> None:
    box = BwrapSandbox(workspace)
    seen: list[bool] = []

    def looks() -> None:
        time.sleep(0.2)
        seen.append((workspace / "acted").exists())

    def fails() -> None:
        raise OSError("the disk is full")

    with box.warm():
        run(box, workspace, "true")
        assert run(box, workspace, "touch acted; echo done", before=looks) == (0, "done\n", "")
        assert seen == [False]
        (workspace / "acted").unlink()
        sandbox = waiting(box)
        with pytest.raises(NotReleased, match="the disk is full"):
            run(box, workspace, "touch acted", before=fails)
        assert gone(sandbox) and not (workspace / "acted").exists()
        waiting(box)  # a new one waits for the next call, which runs
        assert run(box, workspace, "echo ran") == (0, "ran\n", "")
    assert box.warm_runs == 2


@pytest.mark.parametrize("how", ["renamed-over", "written-in-place-then-renamed", "hard-linked"])
def test_a_covered_file_replaced_under_its_name_is_covered_in_a_fresh_sandbox(workspace: Path, how: str) -> None:
    """The sandbox set up ahead covered ``.env`` by binding /dev/null over the file then there. Replaced under its
    name since (an editor's atomic save: another file renamed over it), the bind would cover the old file and show
    the new one: so that sandbox is not used, and the command's own covers the new file."""
    (workspace / ".env").write_text("OLD=1\n")
    box = BwrapSandbox(workspace, deny=[".env"])
    with box.warm():
        assert run(box, workspace, "cat .env; echo end")[:2] == (0, "end\n")  # covered: unreadable
        sandbox = waiting(box)
        if how == "renamed-over":
            (workspace / "new").write_text("SECRET=2\n")
            os.rename(workspace / "new", workspace / ".env")
        elif how == "written-in-place-then-renamed":
            (workspace / ".env").rename(workspace / "old")
            (workspace / ".env").write_text("SECRET=2\n")
        else:
            (workspace / "other").write_text("SECRET=2\n")
            os.unlink(workspace / ".env")
            os.link(workspace / "other", workspace / ".env")
        got = run(box, workspace, "cat .env; echo end")
        assert got[:2] == (0, "end\n"), got
        assert gone(sandbox) and box.warm_runs == 0


def test_a_change_another_call_walked_past_still_means_a_fresh_sandbox(workspace: Path) -> None:
    """The change comes, then a call the sandbox set up ahead cannot carry (an argv) walks the workspace and drains
    the watch's events: the next call, with no event left to see, must still not take the sandbox set up before the
    change (any walk since its own means the workspace moved)."""
    (workspace / ".env").write_text("OLD=1\n")
    box = BwrapSandbox(workspace, deny=[".env"])
    with box.warm():
        run(box, workspace, "true")
        sandbox = waiting(box)
        (workspace / "new").write_text("SECRET=2\n")
        os.rename(workspace / "new", workspace / ".env")
        assert run(box, workspace, ["cat", ".env"])[:2] == (1, "")
        assert waiting(box) == sandbox  # left waiting: an argv is not its call
        assert run(box, workspace, "cat .env; echo end")[:2] == (0, "end\n")
        assert gone(sandbox) and box.warm_runs == 0


def test_any_change_in_the_workspace_means_a_fresh_sandbox(workspace: Path) -> None:
    """Fail closed: whatever changed in the workspace since the sandbox was set up (here a file created, in a
    subdirectory too), the deny walk looks again and the command gets a sandbox set up for it."""
    (workspace / "sub").mkdir()
    box = BwrapSandbox(workspace, deny=["*.key"])
    with box.warm():
        run(box, workspace, "true")
        (workspace / "notes.txt").write_text("x")
        assert run(box, workspace, "cat notes.txt") == (0, "x", "")
        (workspace / "sub" / "id.key").write_text("secret")
        assert run(box, workspace, "cat sub/id.key; echo end")[:2] == (0, "end\n")
        assert box.warm_runs == 0
        assert run(box, workspace, "echo unchanged") == (0, "unchanged\n", "")
    assert box.warm_runs == 1


def test_another_directory_environment_or_workspace_is_the_calls_not_the_sandboxs(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host variable the sandbox passes on, changed after the sandbox was set up, reaches the command with its new
    value; a call in another directory runs there; a workspace removed and made again under its path is the one
    the command sees (the sandbox set up ahead bound the old directory)."""
    monkeypatch.setenv("TETHER_TEST_PASSED", "old")
    (workspace / "sub").mkdir()
    box = BwrapSandbox(workspace, env_allow=["TETHER_TEST_PASSED"])
    with box.warm():
        run(box, workspace, "true")
        monkeypatch.setenv("TETHER_TEST_PASSED", "new")
        assert run(box, workspace, "echo $TETHER_TEST_PASSED") == (0, "new\n", "")
        assert run(box, workspace / "sub", "pwd") == (0, f"{workspace / 'sub'}\n", "")
        assert box.warm_runs == 0
        assert run(box, workspace / "sub", "pwd") == (0, f"{workspace / 'sub'}\n", "")  # set up in sub/: it fits
        assert box.warm_runs == 1
        waiting(box)
        shutil.rmtree(workspace)
        workspace.mkdir()
        (workspace / "fresh").touch()
        os.chmod(workspace, 0o777)  # the sandbox user's write grant was on the old directory
        assert run(box, workspace, "ls") == (0, "fresh\n", "")
    assert box.warm_runs == 1


@pytest.mark.parametrize("when", ["setting-up", "set-up"])
def test_a_sandbox_killed_from_outside_is_replaced_for_the_call_and_leaves_nothing(workspace: Path, when: str) -> None:
    """bubblewrap's outer process killed, while it sets up (at several moments of it) or once it has: the call gets a
    fresh sandbox. Killed during its set-up, the inner process (root's bubblewrap does not pass on the parent's death)
    waits for good; come back to tether as a subreaper, it is killed with the sandbox."""
    assert become_subreaper()
    box = BwrapSandbox(workspace)
    for delay in (0.0005, 0.001, 0.002, 0.003, 0.005) if when == "setting-up" else (None,):
        with box.warm():
            run(box, workspace, "true")
            idle = box._ahead.idle
            assert idle is not None
            if delay is None:
                assert select.select([idle.start_r], [], [], 10)[0]  # its shell wrote the start byte
            else:
                time.sleep(delay)  # its inner process made (~1 ms), its set-up (~6 ms) not done
            os.kill(idle.pid, signal.SIGKILL)
            time.sleep(0.05)
            assert run(box, workspace, "echo ran") == (0, "ran\n", "")
    assert box.warm_runs == 0
    time.sleep(0.3)
    assert bwrap_children() == []


def test_calls_it_cannot_carry_start_their_own_and_leave_it_waiting(workspace: Path) -> None:
    """An argv, the call's own variables, a call carrying secrets (a view of the sandbox): each runs in a sandbox
    set up for it, and the one set up ahead still waits for a call it can carry."""
    box = BwrapSandbox(workspace)
    with box.warm():
        run(box, workspace, "true")
        sandbox = waiting(box)
        assert run(box, workspace, ["bash", "-c", "echo argv"]) == (0, "argv\n", "")
        assert run(box, workspace, "echo $OWN", env={"OWN": "mine"}) == (0, "mine\n", "")
        carrying = box.carrying(Carried(env={"TOKEN": "s3cret"}))
        assert run(carrying, workspace, "echo $TOKEN") == (0, "s3cret\n", "")
        assert waiting(box) == sandbox and box.warm_runs == 0
        assert run(box, workspace, "echo ${TOKEN-none}") == (0, "none\n", "")
    assert box.warm_runs == 1


def test_a_command_that_times_out_or_leaves_processes_is_killed_whole(workspace: Path) -> None:
    marker = "tether-ahead-" + secrets.token_hex(6)
    box = BwrapSandbox(workspace)
    with box.warm():
        run(box, workspace, "true")
        stays = f"bash -c 'sleep 30; :' {marker}"
        r = box.run(f"{stays} & sleep 30", cwd=workspace, timeout_s=0.5)
        assert (r.timed_out, r.exit_code) == (True, TIMEOUT_EXIT_CODE)
        assert 0.5 <= r.duration_s < 10
        assert run(box, workspace, f"setsid {stays} & echo left") == (0, "left\n", "")
    assert box.warm_runs == 2
    assert survivors(marker) == []
    assert bwrap_children() == []


KILLED = """
import os, signal, sys
from pathlib import Path
from tether.sandbox import BwrapSandbox
ws, when = Path(sys.argv[1]), sys.argv[2]
box = BwrapSandbox(ws)
with box.warm():
    box.run("true", cwd=ws, timeout_s=30)
    print(box._ahead.idle.pid, flush=True)
    if when == "waiting":
        os.kill(os.getpid(), signal.SIGKILL)
    box.run("touch acted", cwd=ws, timeout_s=30, before=lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


@pytest.mark.parametrize("when", ["waiting", "held"])
def test_tether_killed_leaves_its_sandbox_to_end_unrun(workspace: Path, when: str) -> None:
    """SIGKILL of tether while a sandbox set up ahead waits, or while its command is held for the commit: no cleanup
    runs, yet the sandbox ends (bubblewrap dies with its parent; the shell reads end-of-file) with nothing run."""
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(workspace), when], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    sandbox = int(proc.stdout)
    assert gone(sandbox)
    time.sleep(0.3)
    assert not (workspace / "acted").exists()


def test_a_runs_commands_use_them_and_leave_none_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scripted run of shell steps on bubblewrap, its log in the workspace's ``.tether/`` (written between every
    two commands): every command after the first runs in a sandbox set up ahead, each its own, and the run's end
    leaves none."""
    from tether import Harness
    from tether.envelope.compile import compile_envelope
    from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
    from tether.models.function import FunctionModel
    from tether.status import RunStatus

    example = Path(__file__).resolve().parents[2] / "examples" / "bugfix"
    (tmp_path / "envelope").mkdir()
    shutil.copy(example / "plan.yaml", tmp_path / "envelope" / "plan.yaml")
    envelope = tmp_path / "envelope" / "envelope.yaml"
    envelope.write_text((example / "envelope.yaml").read_text())
    compile_envelope(tmp_path / "envelope" / "plan.yaml", envelope)
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "tests" / "test_sum.py").write_text("def test_sum():\n    assert sum([1, 2]) == 3\n")
    steps = 5

    def script(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        i = sum(1 for m in messages if m.role == "assistant") + 1
        if i > steps:
            return ModelResponse("done", (), "refusal", "refusal", Usage(), "test")
        call = ToolCall(f"c{i}", "bash", {"command": f"echo step {i} in $$ >> src/steps.txt"})
        return ModelResponse("", (call,), "tool_request", "tool_use", Usage(1, 1), "test")

    driven: list[BwrapSandbox] = []
    real = BwrapSandbox.warm

    def warm(self: BwrapSandbox) -> object:
        driven.append(self)
        return real(self)

    monkeypatch.setattr(BwrapSandbox, "warm", warm)
    harness = Harness(envelope, model=FunctionModel(script, name="test"), workspace=ws, sandbox="bwrap")
    contract = harness.run("echo the steps")
    assert contract.status is not RunStatus.BLOCKED_DEPENDENCY, contract
    lines = (ws / "src" / "steps.txt").read_text().splitlines()
    assert [line.split(" in ")[0] for line in lines] == [f"step {i}" for i in range(1, steps + 1)]
    assert [box.warm_runs for box in driven] == [steps - 1]
    assert (ws / ".tether").is_dir() and bwrap_children() == []


def test_a_call_whose_check_fails_stops_the_sandbox_it_took(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox set up ahead is taken out of its slot before the call's flags are worked out: if that raises (the
    deny walk failing, an interrupt), no one else would ever stop it, so the call stops it before the error goes on."""
    box = BwrapSandbox(workspace)
    with box.warm():
        run(box, workspace, "true")
        sandbox = waiting(box)

        def fails(*args: object, **kwargs: object) -> list[str]:
            raise OSError("the deny walk could not list the workspace")

        monkeypatch.setattr(box, "argv", fails)
        with pytest.raises(OSError, match="could not list"):
            run(box, workspace, "touch acted")
        assert gone(sandbox) and box._ahead.idle is None
    assert not (workspace / "acted").exists() and bwrap_children() == []
