"""A running daemon keys each session's guard by the digest of the envelope's bytes (hooks/session.py): attacks on
that key with a real daemon. The envelope a symlink whose target is swapped by rename (its path, size and mtime
unchanged), and two projects with envelopes of one path inside each but different rules, called in turn."""

from __future__ import annotations

import os
from pathlib import Path

from test_daemon_envelope_edit import ALLOWING, call, daemon

__all__ = ["daemon"]  # the fixture, used by name

DENYING = ALLOWING.replace("  allow: [", "  deny : [")


def test_a_symlinked_envelope_retargeted_by_rename_is_seen(daemon: Path, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".tether").mkdir(parents=True)
    (tmp_path / "allowing.yaml").write_text(ALLOWING)
    (tmp_path / "denying.yaml").write_text(DENYING)
    source = project / ".tether" / "envelope.yaml"
    source.symlink_to(tmp_path / "allowing.yaml")
    for i in range(2):
        reply, spec = call(project, "s1", "echo hi", f"t{i}")
        assert spec.get("permissionDecision") == "allow", reply
    swap = project / ".tether" / "swap.yaml"
    swap.symlink_to(tmp_path / "denying.yaml")
    os.rename(swap, source)  # atomic: the path names the other file at once
    reply, spec = call(project, "s1", "echo hi", "t2")
    assert reply.exit == 2 and "began under another envelope" in reply.stderr, reply
    reply, spec = call(project, "s2", "echo hi", "t3")
    assert spec.get("permissionDecision") == "deny", reply


def test_two_projects_on_one_daemon_each_decide_by_their_own_envelope(daemon: Path, tmp_path: Path) -> None:
    projects = {}
    for name, text in (("a", ALLOWING), ("d", DENYING)):
        project = tmp_path / name
        (project / ".tether").mkdir(parents=True)
        (project / ".tether" / "envelope.yaml").write_text(text)
        projects[name] = project
    for i in range(3):
        for name, want in (("a", "allow"), ("d", "deny")):
            reply, spec = call(projects[name], "same-session", "echo hi", f"t{name}{i}")
            assert spec.get("permissionDecision") == want, (name, i, reply)
