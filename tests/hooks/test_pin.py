"""hooks/pin.py: a session's project pinned at its first call, and a pin that cannot be trusted refuses the call."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tether.errors import RuntimeFailure
from tether.hooks import pin
from tether.hooks.session import run_id_for


def pin_path(agent: str, session: str) -> str:
    return pin.pin_paths(run_id_for(agent, session))[0]


def pinned(agent: str, session: str, cwd: str) -> str:
    return pin.pinned(run_id_for(agent, session), cwd)


def peek(agent: str, session: str) -> str | None:
    return pin.peek(run_id_for(agent, session))


def test_the_first_call_pins_and_later_cwds_do_not_move_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert peek("codex", "s") is None
    assert pinned("codex", "s", str(a)) == str(a)
    assert pinned("codex", "s", str(b)) == str(a)
    assert peek("codex", "s") == str(a) and pinned("claude-code", "s", str(b)) == str(b), "per agent and session"
    assert oct(os.stat(pin_path("codex", "s")).st_mode & 0o777) == "0o600"
    assert not [p for p in Path(pin_path("codex", "s")).parent.iterdir() if p.name.endswith(".tmp")]


def test_first_calls_at_once_agree_on_one_project(tmp_path: Path) -> None:
    dirs = [tmp_path / f"d{i}" for i in range(16)]
    for d in dirs:
        d.mkdir()
    got: list[str] = []
    threads = [threading.Thread(target=lambda d=d: got.append(pinned("codex", "race", str(d)))) for d in dirs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and got[0] == peek("codex", "race")


@pytest.mark.parametrize("content", [b"relative/path", b"", b"/x\0y", b"/" * (64 * 1024 + 1)])
def test_a_pin_that_is_not_an_absolute_path_refuses(tmp_path: Path, content: bytes) -> None:
    path = Path(pin_path("codex", "bad"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    with pytest.raises(RuntimeFailure, match="pinned project"):
        pinned("codex", "bad", str(tmp_path))
    assert peek("codex", "bad") is None


def test_a_pin_that_is_a_link_refuses(tmp_path: Path) -> None:
    path = Path(pin_path("codex", "link"))
    path.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "elsewhere").write_text(str(tmp_path))
    path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RuntimeFailure, match="cannot be pinned"):
        pinned("codex", "link", str(tmp_path))


def test_without_a_home_to_write_the_pin_is_in_the_daemons_private_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "state-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocked))
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(run / "hookd.sock"))
    (tmp_path / "a").mkdir()
    assert pinned("codex", "homeless", str(tmp_path / "a")) == str(tmp_path / "a")
    assert pinned("codex", "homeless", str(tmp_path)) == str(tmp_path / "a")
    assert (run / "hook-sessions").is_dir() and peek("codex", "homeless") == str(tmp_path / "a")
    run.chmod(0o755)  # a directory others may open: no pin is written there
    with pytest.raises(RuntimeFailure, match="CLAUDE_PROJECT_DIR"):
        pinned("codex", "another", str(tmp_path))
