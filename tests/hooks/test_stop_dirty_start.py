"""A file the user had changed and not committed when the session began is judged against its text then, not the
commit's. Before, its uncommitted lines counted as the session's: a ``# ruff: noqa`` the user had added to a file
the agent then touched refused every stop, for the user's own line (the first test failed before). The text kept at
the start is the file's bytes then, stored as a blob the session's ``tests.baseline`` names by hash: a blob that is
not its hash is not taken (every line counts), and a line the agent adds is still the agent's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import Hook
from test_stop_tools import LINTING, write

from tether.events.store import EventStore
from tether.hooks import origin
from tether.verify import sensors

RUFF = str(Path(sys.executable).parent / "ruff")
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    """``calc.py`` committed clean, then changed by the user (a noqa) and not committed; ``staged.py`` the same,
    staged."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(LINTING)
    (tmp_path / "calc.py").write_text("def f():\n    return 1\n")
    (tmp_path / "staged.py").write_text("def g():\n    return 2\n")
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "add", "calc.py", "staged.py"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "start"], cwd=tmp_path, check=True)
    (tmp_path / "calc.py").write_text("# ruff: noqa\nimport os\n\n\ndef f():\n    return 1\n")
    (tmp_path / "staged.py").write_text("# ruff: noqa\nimport os\n\n\ndef g():\n    return 2\n")
    subprocess.run([*GIT, "add", "staged.py"], cwd=tmp_path, check=True)
    monkeypatch.setattr(sensors, "find_tool", lambda name, workspace, configured=None: RUFF)
    return Hook(tmp_path)


def test_the_users_uncommitted_noqa_is_the_users(hook: Hook) -> None:
    hook("SessionStart")
    write(hook, "calc.py", "# ruff: noqa\nimport os\nimport sys\n\n\ndef f():\n    return 1\n", "w1")
    write(hook, "staged.py", "# ruff: noqa\nimport os\nimport sys\n\n\ndef g():\n    return 2\n", "w2")
    assert hook("Stop").stdout == "", "the directive was the user's, there before the session"


def test_a_noqa_the_agent_adds_to_a_dirty_file_is_still_the_agents(hook: Hook) -> None:
    (hook.workspace / "calc.py").write_text("import os\n\n\ndef f():\n    return 1\n")  # dirty, no directive
    hook("SessionStart")
    write(hook, "calc.py", "# ruff: noqa\nimport os\n\n\ndef f():\n    return 1\n", "w1")
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block" and "ruff is turned off inside calc.py" in reply["reason"], reply


def test_a_kept_text_that_is_not_its_hash_is_not_taken(hook: Hook) -> None:
    hook("SessionStart")
    with EventStore.open(hook.workspace / ".tether" / "tether.db") as store:
        triggers = store._conn.execute("SELECT name FROM sqlite_master WHERE type='trigger' AND tbl_name='blobs'")
        for (name,) in triggers.fetchall():  # a writer past tether's own guard: the hash still says so
            store._conn.execute(f'DROP TRIGGER "{name}"')
        rows = store._conn.execute("SELECT hash FROM blobs").fetchall()
        for (h,) in rows:
            store._conn.execute("UPDATE blobs SET data = ? WHERE hash = ?", (b"# ruff: noqa\n", h))
        store._conn.commit()
    write(hook, "calc.py", "# ruff: noqa\nimport os\nimport sys\n\n\ndef f():\n    return 1\n", "w1")
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block", "every line counts: the kept text could not be vouched for"


def test_what_is_kept(tmp_path: Path) -> None:
    """Tracked files whose text is not the commit's, and untracked text files git does not ignore; not a touched but
    unchanged file, one outside the workspace's folder, a deleted one, an ignored one (nor an ignored folder), a
    binary one, a link, tether's own folder."""
    (tmp_path / "sub").mkdir()
    for name in ("same.py", "changed.py", "sub/x.py", "gone.py"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("*.log\nbuild/\n")
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "add", "."], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "start"], cwd=tmp_path, check=True)
    (tmp_path / "same.py").write_text("x = 1\n")  # rewritten with the same bytes: its time moved
    (tmp_path / "changed.py").write_text("x = 2\n")
    (tmp_path / "sub" / "x.py").write_text("x = 3\n")
    (tmp_path / "gone.py").unlink()
    (tmp_path / "new.py").write_text("x = 4\n")
    (tmp_path / "sub" / "wip.py").write_text("x = 5\n")
    (tmp_path / "run.log").write_text("ignored\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("ignored folder\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    (tmp_path / "link.py").symlink_to(tmp_path / "changed.py")
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "notes.txt").write_text("tether's own\n")
    commit = origin.head(tmp_path)
    assert commit is not None
    assert origin.dirty(tmp_path, commit[0]) == {
        "changed.py": b"x = 2\n",
        "sub/x.py": b"x = 3\n",
        "new.py": b"x = 4\n",
        "sub/wip.py": b"x = 5\n",
    }
    assert origin.dirty(tmp_path / "sub", commit[0]) == {"x.py": b"x = 3\n", "wip.py": b"x = 5\n"}


def test_a_file_the_user_made_and_never_added_is_the_users_too(hook: Hook) -> None:
    (hook.workspace / "draft.py").write_text("# ruff: noqa\nimport os\n")  # new, not added to git
    hook("SessionStart")
    write(hook, "draft.py", "# ruff: noqa\nimport os\nimport sys\n", "w1")
    assert hook("Stop").stdout == "", "the directive was the user's, there before the session"
