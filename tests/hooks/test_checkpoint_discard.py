"""A fold checkpoint whose body failed its trial is removed, so the session's later cold calls do not wait again.

Found: the trial's deadline grows with the body (27aef8f: 2 s and 0.5 s a MB), so a forged 64 MB body that never
finishes loading (a tuple graph whose hash never ends, padded) made each cold call of the session wait ~34 s for
the verdict (measured: 33.8, 34.2, 34.1 s for three calls in a row), every call until the next checkpoint replaced
the file, and a session under ``guard.log.EVERY`` events writes none: each tool call of the agent ~34 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_checkpoint_bounds import forge, nested_lists, session, tuple_graph_key
from test_fold_checkpoint import calls, cold

from tether.guard import checkpoint as ck
from tether.guard import log as guard_log


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard_log, "EVERY", 8)
    monkeypatch.setattr(ck, "TRIAL_S", 1.0)
    cold()


def trials(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the checkpoint trials started (one entry each; the kept envelope's have their own)."""
    started: list[int] = []
    real = ck.trial_seconds

    def counting(body: bytes) -> float:
        started.append(1)
        return real(body)

    monkeypatch.setattr(ck, "trial_seconds", counting)
    return started


@pytest.mark.parametrize("body", [tuple_graph_key(80), nested_lists(4_000_000)], ids=["endless-hash", "memory"])
def test_a_body_that_failed_its_trial_is_removed_and_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: bytes
) -> None:
    hook = session(tmp_path)
    path = forge(hook, body)
    monkeypatch.setattr(guard_log, "EVERY", 10**6)  # a session the next checkpoint is far from
    started = trials(monkeypatch)
    cold()
    assert calls(hook, 1, start=12) == ["ask"], "decided as ever, the whole log folded"
    assert started == [1] and not path.exists(), "tried once, then removed"
    cold()
    assert calls(hook, 1, start=13) == ["allow"]
    assert started == [1], "the next cold call finds nothing to try"


def test_a_good_checkpoint_stays_and_a_file_replaced_meanwhile_is_left_alone(tmp_path: Path) -> None:
    hook = session(tmp_path)
    (path,) = (hook.workspace / ".tether" / "tether.db.folds").glob("*.ckpt")
    cold()
    assert calls(hook, 1, start=12) == ["ask"] and path.exists(), "a body that passed its trial stays"
    st = path.stat()
    ck.Pending(b"", None, (st.st_ino, st.st_size, st.st_mtime_ns + 1)).discard(path)
    assert path.exists(), "not the file that was read (another inode, size or time): left alone"
    ck.Pending(b"", None, (st.st_ino, st.st_size, st.st_mtime_ns)).discard(path)
    assert not path.exists()
