"""Helpers for the hook tests: recorded payloads, and one hook call answered in-process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from machinekit import unavailable  # noqa: F401 - the hook tests import it from here

from tether.hooks.answer import answer
from tether.hooks.wire import HookInputError, Reply, parse, refuse

PAYLOADS = Path(__file__).parent / "payloads"


#: Daemon replies that are cut short or malformed: every client refuses them (exit 2), never lets the call through.
MALFORMED_REPLIES = [
    b"0 200 0\n" + b"{" * 20,
    b"0 2 5\n{}",
    b"1 0 0\n",
    b"0 2 0\n{}extra",
    b"garbage\n",
    b"0 2 0",
    b"0 -1 0\n",
    b"0 09 0\n{}{}{}{}{}",
    b"0 2 0 0\n{}",
]


def payload(name: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    """A recorded payload (``payloads/<agent>.<Event>.json``) with its cwd set and ``fields`` replaced."""
    data: dict[str, Any] = json.loads((PAYLOADS / f"{name}.json").read_text())
    return {**data, "cwd": str(cwd), **fields}


def wait_for(path: Path, timeout: float = 60.0) -> None:
    """Until ``path`` exists (a daemon's endpoint file) and, for a socket, accepts a connection; failing after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not _ready(path):
        assert time.monotonic() < deadline, f"{path} did not appear or did not accept"
        time.sleep(0.02)


def daemons_under(folder: Path) -> list[int]:
    """The pids of daemon processes (``tether.hooks.daemon``, as :func:`tether.hooks.client.spawn` starts them)
    whose arguments name a path under ``folder``: a test's own, whatever other tests run beside it."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue  # not a process, or it ended
        mine = any(a.startswith(str(folder).encode() + b"/") for a in args)
        if mine and entry.name.isdigit() and any(b"tether.hooks.daemon" in a for a in args):
            found.append(int(entry.name))
    return found


def _ready(path: Path) -> bool:
    if not path.exists():
        return False
    if not path.is_socket():
        return True
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def in_process(agent: str, project: Path, raw: bytes) -> Reply:
    """The reply ``tether hook AGENT --no-daemon`` gives (tether.hooks.entry.main without the daemon)."""
    try:
        data = parse(raw)
    except HookInputError as e:
        return refuse(str(e))
    return answer({"agent": agent, "project": str(project)}, data)


class Hook:
    """Hook calls of one project, answered in-process (the daemon runs the same function)."""

    def __init__(self, workspace: Path, agent: str = "claude-code", envelope: Path | None = None) -> None:
        self.workspace, self.agent = workspace, agent
        self.request = {"agent": agent, "db": str(workspace / ".tether" / "tether.db")}
        if envelope is not None:
            self.request["envelope"] = str(envelope)

    def __call__(self, event: str, **fields: Any) -> Reply:
        return answer(self.request, payload(f"{self.agent}.{event}", self.workspace, **fields))

    def bash(self, command: str, call_id: str = "toolu_x") -> tuple[str, str]:
        """Claude Code's decision on a Bash call and its reason."""
        out = json.loads(self("PreToolUse", tool_input={"command": command}, tool_use_id=call_id).stdout)
        spec = out["hookSpecificOutput"]
        return spec["permissionDecision"], spec["permissionDecisionReason"]

    def resident(self, kind: str = "guard") -> dict[tuple[Any, ...], Any]:
        """What this process keeps between calls for this project's database (``hooks.session._CACHE``), by kind
        (``guard``, ``store``). The cache is the test worker's: an earlier test's daemon thread, still ending, may
        put its own project's entry there after a test cleared it (a CI run saw two guards), so never count all."""
        import tether.hooks.session as hook_session

        db = self.request["db"]
        return {k: v for k, v in list(hook_session._CACHE.items()) if k[0] == kind and k[1] == db}


#: The ``tether`` command, as this interpreter runs it.
TETHER = [sys.executable, "-m", "tether.cli.main"]


def hook_process(env: dict[str, str], data: dict[str, Any], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One real ``tether hook claude-code`` process, run in ``cwd`` with ``env``, given ``data``."""
    return subprocess.run(
        [*TETHER, "hook", "claude-code"],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
