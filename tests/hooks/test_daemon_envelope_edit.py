"""A running daemon sees an edit of the project's envelope even when the edit keeps the file's size and mtime.

The daemon keeps each session's guard between calls, keyed by what would make it stale. Keyed by the envelope
file's mtime and size, an edit in the same clock tick (or one put back with ``touch -d``) left the daemon
deciding on the envelope it had read first. Keyed by the bytes' digest, the next call reads the edit: the
session began under another contract, so it is refused (fail closed), and a new session decides by the new
rule. A real daemon process on a socket of its own; the calls are sent as the clients send them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import payload, wait_for

from tether.hooks.client import ask
from tether.hooks.daemon import stop_daemon
from tether.hooks.relay import endpoint_path
from tether.hooks.wire import Reply

ALLOWING = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  filesystem: {read: ["**"], write: ["**"]}
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
permissions:
  allow: [{id: echo, rule: "bash(echo:*)"}]
""" % ("0" * 64)


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    proc = subprocess.Popen([sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)])
    try:
        wait_for(Path(endpoint_path(str(sock))))
        yield sock
    finally:
        stop_daemon(str(sock))
        if proc.wait(timeout=30) != 0:
            proc.kill()


def call(project: Path, session: str, command: str, call_id: str) -> tuple[Reply, dict[str, Any]]:
    data = payload("claude-code.PreToolUse", project, session_id=session, tool_input={"command": command})
    data["tool_use_id"] = call_id
    reply = ask({"agent": "claude-code", "project": str(project)}, json.dumps(data).encode())
    assert reply is not None, "the daemon answers"
    spec = json.loads(reply.stdout)["hookSpecificOutput"] if reply.exit == 0 and reply.stdout else {}
    return reply, spec


def test_an_edit_keeping_size_and_mtime_is_seen_by_the_running_daemon(daemon: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".tether").mkdir(parents=True)
    source = project / ".tether" / "envelope.yaml"
    source.write_text(ALLOWING)
    for i in range(2):  # the second call finds the database the first one made: the guard the daemon keeps
        reply, spec = call(project, "s1", "echo hi", f"t{i}")
        assert spec.get("permissionDecision") == "allow", reply
    before = source.stat()
    denying = ALLOWING.replace("  allow: [", "  deny : [")
    assert len(denying) == len(ALLOWING)
    source.write_text(denying)
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = source.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    reply, spec = call(project, "s1", "echo hi", "t2")
    assert spec.get("permissionDecision") != "allow", "the daemon still decides on the envelope it read first"
    assert reply.exit == 2 and "began under another envelope" in reply.stderr, reply
    reply, spec = call(project, "s2", "echo hi", "t3")
    assert spec.get("permissionDecision") == "deny", reply

    source.write_text(ALLOWING)  # back to the session's own envelope, same size and mtime again: it governs again
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    reply, spec = call(project, "s1", "echo hi", "t4")
    assert spec.get("permissionDecision") == "allow", reply
