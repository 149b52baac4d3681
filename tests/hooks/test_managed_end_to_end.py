"""A whole managed install, end to end, with an interpreter that loads tether's dependencies from its own
environment: a venv of the system's python3 made here, root's, in a directory every user may enter, holding a copy
of tether and of the distributions a hook process imports (as ``pip install`` would put them there). Root runs
``tether hook install claude-code --managed`` with that venv's interpreter; then another user (nobody) runs the
command the drop-in names, as Claude Code runs it (``sh -c``), with real PreToolUse input: the first call decides
in-process and starts the user's daemon, the second is answered by that daemon. The decisions are the gate's, and
``tether log verify`` finds the session's run intact."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookkit import payload, unavailable, wait_for

from tether.hooks.session import run_id_for

SRC = Path(__file__).resolve().parents[2] / "src"
NOBODY = 65534
TEST_PYTHON = (
    sys.executable
)  # this test's interpreter, which has tether's dependencies (fixtures repoint sys.executable)
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]

#: Run by this test's interpreter: the distributions a hook process imports (the deciding code, a call answered
#: in-process, the daemon with every kind loaded), by name, then where each file of theirs is.
PROBE = """
import json, sys, importlib.metadata as md
from tether.hooks.entry import import_deciding_code, no_pydantic_plugins
no_pydantic_plugins()
import_deciding_code()
from tether.hooks import answer, daemon
from tether.guard.session import load_gate
from tether.events.payload import REGISTRY
load_gate()
REGISTRY.complete()
by_top = md.packages_distributions()
names = sorted({d for m in list(sys.modules) for d in by_top.get(m.split(".")[0], ())} - {"tether", "setuptools"})
files = []
for name in names:
    dist = md.distribution(name)
    kept = [f for f in dist.files or () if ".." not in f.parts and "__pycache__" not in f.parts]
    files += [str(dist.locate_file(f)) for f in kept]
print(json.dumps([names, files, [p for p in sys.path if p.endswith("site-packages")]]))
"""


@pytest.fixture
def as_root_with_setpriv() -> None:
    """Installing for every user is root's, and running the hook as another user needs ``setpriv``: skipped
    where either is missing, a failure in CI (``hookkit.unavailable``)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        unavailable("a managed install end to end needs root and setpriv (to run the hook as nobody)")


@pytest.fixture
def installed(venv: Path, as_root_with_setpriv: None) -> Iterator[Path]:
    """The venv (``conftest.venv``) with tether and the distributions its hook imports in its site-packages,
    every directory ``0755`` and file ``0644`` (programs ``0755``), root's."""
    done = subprocess.run(
        [TEST_PYTHON, "-c", PROBE],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    names, files, roots = json.loads(done.stdout.splitlines()[-1])
    assert {"pydantic", "pydantic_core"} <= {n.replace("-", "_") for n in names}, names
    (site,) = (venv / "lib").glob("python3*/site-packages")
    for file in map(Path, files):
        root = next(r for r in roots if file.is_relative_to(r))
        (site / file.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, site / file.relative_to(root))
    shutil.copytree(SRC / "tether", site / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    for path in [venv, *venv.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    yield site


def install_managed(
    python: Path, managed: Path, home: Path, *flags: str, umask: int = -1
) -> subprocess.CompletedProcess[str]:
    """``python [flags] -m tether.cli.main hook install claude-code --managed --managed-dir MANAGED``, as root."""
    argv = [str(python), *flags, "-m", "tether.cli.main", "hook", "install", "claude-code", "--managed"]
    return subprocess.run(
        [*argv, "--managed-dir", str(managed)],
        env={"PATH": os.environ["PATH"], "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=managed.parent,
        umask=umask,
    )


def hook_call(command: str, data: dict[str, object], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command run as Claude Code runs a hook (``sh -c``), as nobody, the call's JSON on stdin."""
    return subprocess.run(
        [*AS_NOBODY, "sh", "-c", command],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def decision(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    spec = json.loads(done.stdout)["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


@pytest.mark.slow
def test_a_managed_install_whose_own_interpreter_decides_for_another_user(
    installed: Path, venv: Path, shared: Path, tmp_path: Path
) -> None:
    python = venv / "bin" / "python3"
    managed = shared / "etc-claude-code"
    install = install_managed(python, managed, tmp_path)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "__init__ code table every user's hook process reads is in place" in install.stdout, install.stderr
    (table,) = (installed / "tether" / "__pycache__").glob("dataclass-code.*.marshal")
    assert table.stat().st_uid == 0 and table.stat().st_mode & 0o022 == 0
    settings = json.loads((managed / "managed-settings.d" / "tether.json").read_text())
    ((group,),) = [settings["hooks"]["PreToolUse"]]
    (entry,) = group["hooks"]
    command = entry["command"]
    assert f" {python} claude-code" in command and str(installed / "tether" / "hooks") in command, command

    # nobody's project and daemon socket directory; nobody cannot enter /root, where this test's interpreter and
    # its site-packages live: whatever the hook imports, it imports from the venv
    project = shared / "project"
    sockets = shared / "run"
    for folder in (project, sockets):
        folder.mkdir(mode=0o700)
        os.chown(folder, NOBODY, NOBODY)
    sock = sockets / "hookd.sock"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "TETHER_HOOK_SOCKET": str(sock)}
    try:
        first = hook_call(command, payload("claude-code.PreToolUse", project, tool_use_id="t1"), env)
        assert decision(first)[0] == "allow", first.stderr
        wait_for(sock)  # the first call, decided in-process, started nobody's daemon: the venv's interpreter
        rm = payload("claude-code.PreToolUse", project, tool_input={"command": "timeout 5 rm -rf /"}, tool_use_id="t2")
        verdict, why = decision(hook_call(command, rm, env))
        assert verdict == "deny" and "coding:deny-rm-root" in why, why
        push = payload("claude-code.PreToolUse", project, tool_input={"command": "git push -f"}, tool_use_id="t3")
        assert decision(hook_call(command, push, env))[0] == "ask"
        broken = hook_call(command, {"hook_event_name": "PreToolUse"}, env)
        assert broken.returncode == 2 and "tether" in broken.stderr, "malformed input is refused, never allowed"
    finally:
        stopped = subprocess.run(  # the daemon answers its own user only
            [
                *AS_NOBODY,
                str(python),
                "-I",
                "-c",
                f"from tether.hooks.daemon import stop_daemon as s; print(s({str(sock)!r}))",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert stopped.stdout.strip() == "True", stopped.stdout + stopped.stderr

    db = project / ".tether" / "tether.db"
    assert db.stat().st_uid == NOBODY, "the log is the user's own"
    run_id = run_id_for("claude-code", str(payload("claude-code.PreToolUse", project)["session_id"]))
    verify = subprocess.run(
        [TEST_PYTHON, "-m", "tether.cli.main", "log", "verify", run_id, "--db", str(db)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert verify.returncode == 0 and "chain intact" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.slow
def test_what_the_warm_up_writes_under_a_umask_of_0_is_no_door_into_every_users_hook(
    installed: Path, venv: Path, shared: Path, tmp_path: Path
) -> None:
    """The warm-up (``install.warm``) runs the interpreter as root after the checks, and it writes bytecode: the
    ``__pycache__`` directories and ``.pyc`` files of every module the hook imports, where a package installed
    without them (``pip --no-compile``, a copy) had none for the first walk to judge. Under an installer's umask
    of 0 those would be writable by every user, who could then put code into each other's hook processes. The
    second walk is the check of what the warm-up wrote; it writes nothing another user could change."""
    managed = shared / "etc-claude-code"
    install = install_managed(
        venv / "bin" / "python3", managed, tmp_path, "-B", umask=0
    )  # -B: the installer's own imports write no bytecode
    assert install.returncode == 0, install.stdout + install.stderr
    loose = [
        str(p)
        for p in [installed, *installed.rglob("*")]
        if not p.is_symlink() and p.stat().st_mode & 0o022 and p.stat().st_uid == 0
    ]
    assert loose == [], loose[:5]
    assert "__init__ code table every user's hook process reads is in place" in install.stdout, install.stderr
