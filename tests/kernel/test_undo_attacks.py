"""Attacks on ``tether undo``: what the agent left in the workspace must not turn the operator's restore into
something the agent could not do itself.

Undo runs on the host, as the operator (often root on a server), and writes files whose bytes and modes the
agent chose. Each test here failed before its fix.
"""

from __future__ import annotations

import stat
from pathlib import Path

from runkit import FINISH, FIX, tether, write_script
from test_undo import bash, calls, undo_cli

from tether import EventStore


def _run(bugfix: Path, *commands: str) -> str:
    """A finished run of ``commands`` (local sandbox), then the bug fix; its id."""
    write_script(bugfix, [*(bash(c) for c in commands), {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    proc = tether("run", "t", "-e", str(bugfix / "envelope.yaml"), "--db", str(bugfix / "t.db"), "--sandbox", "local")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with EventStore.open(bugfix / "t.db", readonly=True) as store:
        return store.runs()[0].run_id


def test_undo_never_restores_a_set_id_bit(bugfix: Path) -> None:
    """The agent makes a set-user-id program, then deletes it; undoing the deletion must not recreate it as the
    operator's set-user-id program (a restored file is the operator's: the bit would run the agent's bytes with
    the operator's rights). Like a rebuilt workspace (``snapshot.materialise``), undo restores permission bits
    only."""
    ws = bugfix / "project"
    run_id = _run(bugfix, "printf '#!/bin/sh\\nid\\n' > src/t && chmod 6755 src/t", "rm src/t")
    proc = undo_cli(bugfix, run_id, "--action", calls(bugfix / "t.db", run_id)[1])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (ws / "src" / "t").read_bytes() == b"#!/bin/sh\nid\n"
    mode = stat.S_IMODE((ws / "src" / "t").stat().st_mode)
    assert mode == 0o755, oct(mode)
