"""A file-wide ``# ruff: noqa`` added in a hook session is judged against the file's text in the commit the session
began on. A hook session keeps no snapshot, so before, no directive was judged at all: writing ``# ruff: noqa`` at
the top of a file turned the required lint off for it and the stop was accepted (the first test failed before)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import Hook
from test_stop_tools import LINTING, write

from tether.verify import sensors

RUFF = str(Path(sys.executable).parent / "ruff")


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    """A git workspace whose envelope requires lint; ``calc.py`` is committed clean, ``old.py`` with a noqa."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(LINTING)
    (tmp_path / "calc.py").write_text("def f():\n    return 1\n")
    (tmp_path / "old.py").write_text("# ruff: noqa\nimport os\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "calc.py", "old.py"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=tmp_path, check=True)
    monkeypatch.setattr(sensors, "find_tool", lambda name, workspace, configured=None: RUFF)
    return Hook(tmp_path)


def test_a_noqa_the_session_added_refuses_the_stop(hook: Hook) -> None:
    hook("SessionStart")
    write(hook, "calc.py", "# ruff: noqa\nimport os\n\n\ndef f():\n    return 1\n", "w1")
    out = hook("Stop").stdout
    assert out, "the stop was accepted: ruff was off for calc.py"
    reply = json.loads(out)
    assert reply["decision"] == "block" and "ruff is turned off inside calc.py" in reply["reason"], reply


def test_a_noqa_the_commit_already_had_is_the_users(hook: Hook) -> None:
    hook("SessionStart")
    write(hook, "old.py", "# ruff: noqa\nimport os\nimport sys\n", "w1")
    assert hook("Stop").stdout == "", "the directive was there before the session"
