"""Attacks on the held start (sandbox/process.py ``Hold``) from the command's side: command texts that might act
before the hold line, or behave differently because of it, and an environment that might let the line give up.

The command text is the model's: whatever it holds, nothing of it may run before ``before`` returns, and once let
go it must behave as it does unheld (the same output, errors and exit code: the model reads them)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tether.sandbox import BwrapSandbox, LocalSandbox, Receipt, Sandbox

# Each writes the file "acted" as early as its form allows, and prints what a held start could change.
EARLY = [
    "touch acted; echo $LINENO; nosuchcommand_x",  # the line numbers the model reads in errors
    "touch acted\nif then fi",  # a syntax error later in the text
    "cat <<EOF >acted\nline $LINENO\nEOF\ncat acted",  # a here-doc
    "shopt -s expand_aliases\nalias z='touch acted; echo aliased $LINENO'\nz",  # an alias made and used
    "trap 'touch acted; echo trapped' EXIT; echo $(touch acted; echo sub)",  # a trap, a substitution
    "f() { touch acted; echo $LINENO; }; f",
    "\\\ntouch acted; echo continued",  # a leading line continuation
    "touch acted; cat; read -r x; echo read=$? ${REPLY-unset}",  # stdin: /dev/null as unheld
    "touch acted; echo $# ${@-} ${BASH_ARGV0-}",
]


def _run(sandbox: Sandbox, ws: Path, command: str, before: object | None) -> Receipt:
    assert isinstance(sandbox, LocalSandbox | BwrapSandbox)
    return sandbox.run(command, cwd=ws, timeout_s=30, before=before)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", EARLY)
def test_no_command_text_acts_before_the_release_and_each_behaves_as_unheld(
    sandbox: Sandbox, workspace: Path, command: str
) -> None:
    unheld = _run(sandbox, workspace, command, None)
    assert (workspace / "acted").exists(), unheld.stderr
    (workspace / "acted").unlink()
    seen: list[bool] = []

    def before() -> None:
        time.sleep(0.3)  # ample time for anything of the command's to have run
        seen.append((workspace / "acted").exists())

    held = _run(sandbox, workspace, command, before)
    assert seen == [False]
    assert (workspace / "acted").exists()
    assert (held.exit_code, held.stdout, held.stderr) == (unheld.exit_code, unheld.stdout, unheld.stderr)


def test_tmout_in_the_commands_environment_does_not_give_up_a_slow_commit(workspace: Path) -> None:
    """bash takes ``$TMOUT`` as ``read``'s default timeout: passed to commands (``env_allow``), a commit slower
    than it made the hold line give up, and the command exit 125 unrun after a commit that succeeded (recorded as
    the command's own exit). The line reads without a timeout; the command still sees ``TMOUT``."""
    os.environ["TMOUT"] = "1"
    try:
        sandbox = LocalSandbox(env_allow=("TMOUT",))
        r = _run(sandbox, workspace, "touch acted; echo TMOUT=$TMOUT", lambda: time.sleep(2.5))
    finally:
        del os.environ["TMOUT"]
    assert (r.exit_code, r.stdout) == (0, "TMOUT=1\n"), r.stderr
    assert (workspace / "acted").exists()


@pytest.mark.parametrize(
    "backend,name,value",
    [
        ("local", "BASH_ENV", "{ws}/startup.sh"),  # a file bash sources as it starts
        ("local", "BASH_FUNC_read%%", "() {{ touch {ws}/acted; }}"),  # replaces the hold line's read: it would let go
        ("local", "SHELLOPTS", "xtrace"),  # with PS4 below: a substitution at every traced line, the hold line's too
        # bubblewrap: the function only (the other two name host paths, which the sandbox's view need not hold)
        pytest.param("bwrap", "BASH_FUNC_read%%", "() {{ touch {ws}/acted; }}", marks=pytest.mark.bwrap),
    ],
)
def test_an_environment_that_runs_code_as_bash_starts_is_committed_first_unheld(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, backend: str, name: str, value: str
) -> None:
    """Variables passed to commands (``env_allow``) that make bash run code before its first line, i.e. before
    the hold: such a command is not held; what it waits for runs first, so nothing of it runs before the commit."""
    (workspace / "startup.sh").write_text(f"touch {workspace}/acted\n")
    monkeypatch.setenv(name, value.format(ws=workspace))
    monkeypatch.setenv("PS4", f"$(touch {workspace}/acted)+ ")
    names = (name, "PS4") if name == "SHELLOPTS" else (name,)
    box: Sandbox = LocalSandbox(env_allow=names) if backend == "local" else BwrapSandbox(workspace, env_allow=names)
    seen: list[bool] = []

    def before() -> None:
        time.sleep(0.3)  # ample time for bash to have started and acted
        seen.append((workspace / "acted").exists())

    r = _run(box, workspace, "echo done", before)
    assert seen == [False]
    assert r.stdout.endswith("done\n"), r.stderr


def test_starts_code_names_what_bash_acts_on_at_its_start() -> None:
    from tether.sandbox.environment import starts_code

    assert starts_code(["PATH", "BASH_ENV"]) and starts_code(["BASH_FUNC_read%%"]) and starts_code(["LD_PRELOAD"])
    assert not starts_code(["PATH", "HOME", "LANG", "TMOUT", "CI"])
