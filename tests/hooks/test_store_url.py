"""``tether hook … --db postgresql://…``: a hook session's run in a PostgreSQL store, as ``open_store`` takes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookkit import payload
from pgkit import Postgres

from tether.events.backends import open_store
from tether.hooks.answer import answer
from tether.hooks.daemon import _tcp_request
from tether.hooks.entry import options
from tether.hooks.session import run_id_for


def test_a_store_url_is_passed_as_given_and_a_file_made_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    url = "postgresql://app@/tether?host=/run/pg&options=-csearch_path%3Ds1"
    assert options(["claude-code", "--db", url])[0]["db"] == url
    assert options(["claude-code", "--db", "x.db"])[0]["db"] == str(tmp_path / "x.db")
    monkeypatch.setenv("TETHER_DB", url)
    assert options(["codex"])[0]["db"] == url
    assert _tcp_request({"agent": "codex", "db": url})["db"] == url, "the bash client's request too"
    with pytest.raises(ValueError):
        _tcp_request({"agent": "codex", "db": "relative.db"})


@pytest.mark.postgres
def test_a_hook_session_runs_in_a_postgresql_store(postgres: Postgres, tmp_path: Path) -> None:
    url = postgres.tether_store()
    request = {"agent": "claude-code", "project": str(tmp_path), "db": url}

    def call(event: str, **fields: object) -> str:
        reply = answer(request, payload(f"claude-code.{event}", tmp_path, **fields))
        assert reply.exit == 0, reply.stderr
        return reply.stdout

    rm = {"command": "timeout 5 rm -rf /"}
    assert '"deny"' in call("PreToolUse", tool_input=rm, tool_use_id="p1")
    call("PostToolUse", tool_input=rm, tool_use_id="p1")
    assert '"allow"' in call("PreToolUse", tool_input={"command": "ls"}, tool_use_id="p2")
    run_id = run_id_for("claude-code", str(payload("claude-code.PreToolUse", tmp_path)["session_id"]))
    with open_store(url, readonly=True, create=False, local=tmp_path) as store:
        store.verify_run(run_id)
        kinds = [e.kind for e in store.events(run_id)]
    assert kinds.count("action.decided") == 2 and "hook.bypassed" in kinds
    assert not (tmp_path / ".tether" / "tether.db").exists(), "no SQLite file beside it"


@pytest.mark.postgres
def test_a_url_store_session_sees_an_envelope_edit_that_keeps_size_and_mtime(
    postgres: Postgres, tmp_path: Path
) -> None:
    """A store without a folder keeps no envelope file, yet the guard a process keeps is keyed by the envelope's
    bytes and opened from them, as for a file store (tests/hooks/test_daemon_envelope_edit.py, a real daemon)."""
    import os

    from test_daemon_envelope_edit import ALLOWING

    from tether.hooks import session as hook_session

    (tmp_path / ".tether").mkdir()
    source = tmp_path / ".tether" / "envelope.yaml"
    source.write_text(ALLOWING)
    request = {"agent": "claude-code", "project": str(tmp_path), "db": postgres.tether_store()}

    def bash(call_id: str, session: str = "s1") -> tuple[int, str]:
        data = payload("claude-code.PreToolUse", tmp_path, session_id=session, tool_input={"command": "echo hi"})
        reply = answer(request, {**data, "tool_use_id": call_id})
        return reply.exit, reply.stdout + reply.stderr

    try:
        assert [bash("t0"), bash("t1")][1][1].count('"allow"') == 1
        before = source.stat()
        source.write_text(ALLOWING.replace("  allow: [", "  deny : ["))
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
        code, said = bash("t2")
        assert code == 2 and "began under another envelope" in said
        assert '"deny"' in bash("t3", session="s2")[1]
    finally:
        hook_session._CACHE.clear()
