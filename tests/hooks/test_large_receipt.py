"""A tool's receipt over the 8 MiB hook input limit is read, streamed (hooks/wire.py ``parse_receipt``), not dropped.

A PostToolUse carries the tool's input and its response, and Claude Code's file tools put the file in it before and
after the call (a NotebookEdit's ``original_file`` and ``updated_file``, an Edit's ``originalFile``): a notebook
with its plots, an Edit of a large file, went over the limit. Refused, the receipt was lost: the run said the call
was "proposed but not executed", it had nothing to undo, and the stop took no evidence from it. A decision is still
taken only on an input read whole, under the limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import PAYLOADS, payload, wait_for

from tether.hooks import wire
from tether.hooks.client import HOOK_SCRIPT
from tether.hooks.daemon import stop_daemon
from tether.hooks.wire import MAX_INPUT_BYTES, RECEIPT_TEXT, HookInputError, parse, parse_receipt

RUN = "claude-code-3f1c2a9e-8b1d-4c55-9a43-5a8f0e2b7c11"  # the recorded payloads' session
LAUNCH = [sys.executable, "-I", "-S", str(Path(HOOK_SCRIPT).parent / "launch.py"), "claude-code"]
BIG = MAX_INPUT_BYTES // 2 + 1  # two of these and the rest of a payload are over the limit


def raw(name: str, cwd: Path, **fields: Any) -> bytes:
    return json.dumps(payload(name, cwd, **fields)).encode()


@pytest.mark.parametrize("path", sorted(PAYLOADS.glob("*.json")), ids=lambda p: p.stem)
def test_every_recorded_payload_reads_the_same_streamed(path: Path) -> None:
    """Differential: the stream builds what json builds (no text in them is long enough to be set aside)."""
    assert wire._streamed(path.read_bytes()) == json.loads(path.read_bytes())


def test_a_field_named_nothing_cannot_spell_a_top_level_field(tmp_path: Path) -> None:
    """ijson gives the fields of a top-level field named "" the top level's own prefix: read by prefix, its
    ``tool_use_id`` replaced the call's. The stream is read by depth."""
    post = payload(
        "claude-code.PostToolUse", tmp_path, tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="b1"
    )
    data = json.dumps({**post, "": {"tool_use_id": "forged", "tool_input": {"command": "rm -rf /"}}, "x": [1]}).encode()
    assert wire._streamed(data) == json.loads(data)
    assert wire._streamed(data)["tool_use_id"] == "b1"
    long = "o" * (RECEIPT_TEXT + 1)  # nor keep whole a text that only spells the replaced file's prefix
    data = json.dumps({**post, "": {"tool_response": {"originalFile": long}}}).encode()
    assert wire._streamed(data)[""] == {"tool_response": {"originalFile": wire._ends(long)}}


def test_a_large_receipt_keeps_the_input_and_the_replaced_file_and_not_the_rest(tmp_path: Path) -> None:
    before, after = "a" * BIG, "b" * BIG
    data = raw(
        "claude-code.PostToolUse",
        tmp_path,
        tool_name="Edit",
        tool_use_id="t" * (RECEIPT_TEXT + 1),  # what names the call is kept whole, however long
        tool_input={"file_path": str(tmp_path / "f.txt"), "old_string": "a", "new_string": "b", "n": 10**30},
        tool_response={"originalFile": before, "structuredPatch": [{"lines": [after], "oldStart": 1.5}], "x": "é✓"},
    )
    assert len(data) > MAX_INPUT_BYTES
    with pytest.raises(HookInputError, match="over tether's limit"):
        parse(data)
    got = parse_receipt(data)
    assert got["tool_use_id"] == "t" * (RECEIPT_TEXT + 1)
    assert got["tool_input"] == {
        "file_path": str(tmp_path / "f.txt"),
        "old_string": "a",
        "new_string": "b",
        "n": 10**30,
    }
    response = got["tool_response"]
    assert isinstance(response, dict) and response["originalFile"] == before and response["x"] == "é✓"
    kept = response["structuredPatch"][0]["lines"][0]
    half = RECEIPT_TEXT // 2
    assert kept == (
        f"{'b' * half}\n... ({BIG - RECEIPT_TEXT} characters not kept: the hook input was over {MAX_INPUT_BYTES}"
        f" bytes) ...\n{'b' * half}"
    ), "its head and its tail, as the log keeps a tool's output"
    assert response["structuredPatch"][0]["oldStart"] == 1.5
    short = "s" * RECEIPT_TEXT  # as long as is kept
    data = raw(
        "claude-code.PostToolUseFailure",
        tmp_path,
        tool_name="Bash",
        tool_input={"command": "x" * (2 * BIG)},
        error=short,
    )
    assert parse_receipt(data)["error"] == short, "a failure's receipt too, its input whole however long"


@pytest.mark.parametrize("event", ["PreToolUse", "UserPromptSubmit", "Stop"])
def test_any_other_event_that_large_is_refused_naming_it(tmp_path: Path, event: str) -> None:
    fields = {"tool_name": "Bash", "tool_input": {"command": "x" * (2 * BIG)}} if event == "PreToolUse" else {}
    data = raw(f"claude-code.{event}", tmp_path, **fields, filler="f" * (2 * BIG))
    with pytest.raises(HookInputError, match=f"bytes, over tether's limit of {MAX_INPUT_BYTES} .*'{event}'"):
        parse_receipt(data)


def test_hostile_large_receipts_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pad = "p" * (2 * BIG)
    post = payload("claude-code.PostToolUse", tmp_path, tool_name="Bash", tool_input={"command": "ls"})
    cases = {
        "truncated": json.dumps({**post, "pad": pad}).encode()[:-3],
        "trailing garbage": json.dumps({**post, "pad": pad}).encode() + b" {}",
        "not an object": json.dumps([post, pad]).encode(),
        "not UTF-8": json.dumps({**post, "pad": pad}).encode().replace(b"ppp", b"\xff\xfe\xfd", 1),
        "NaN": json.dumps({**post, "pad": pad, "n": float("nan")}).encode(),
        "nested deeper than a recording recurses": (
            json.dumps({**post, "pad": pad}).encode()[:-1] + b', "deep": ' + b"[" * 600 + b"]" * 600 + b"}"
        ),
        "lone surrogate in the input": json.dumps(
            {**post, "tool_input": {"command": "ls \ud800"}, "pad": pad}, ensure_ascii=True
        ).encode(),
    }
    for data in cases.values():
        with pytest.raises(HookInputError, match=r"receipt may be larger.*|holds half of a UTF-16 surrogate pair"):
            parse_receipt(data)
    monkeypatch.setattr(wire, "RECEIPT_VALUES", 1000)  # many small values: refused before they are all built
    with pytest.raises(HookInputError, match="over 1000 values"):
        parse_receipt(json.dumps({**post, "tool_response": [0] * 2000, "pad": pad}).encode())
    monkeypatch.setattr(wire, "MAX_RECEIPT_BYTES", MAX_INPUT_BYTES * 2)
    with pytest.raises(HookInputError, match=f"and of {MAX_INPUT_BYTES * 2} for a tool's receipt"):
        parse_receipt(json.dumps({**post, "pad": pad * 2}).encode())


@pytest.fixture
def daemon(tmp_path: Path) -> Any:
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    proc = subprocess.Popen([sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)])
    wait_for(sock)
    yield sock
    assert stop_daemon(str(sock))
    assert proc.wait(timeout=30) == 0


def test_a_large_notebook_edit_is_recorded_and_undone_through_the_launcher_beside_a_daemon(
    tmp_path: Path, daemon: Path
) -> None:
    """The calls under the limit go to the daemon; the receipt over it is read whole by the launcher's own process
    (the daemon reads at most the limit). Before, that receipt was refused (exit 2) and lost."""
    ws = tmp_path / "ws"
    ws.mkdir()
    nb = ws / "plots.ipynb"
    before = json.dumps({"cells": [{"source": "x = 1", "outputs": [{"image/png": "A" * BIG}]}]})
    after = before.replace("x = 1", "x = 2")
    nb.write_text(before)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "CLAUDE_"))}
    env |= {"TETHER_HOOK_SOCKET": str(daemon), "CLAUDE_PROJECT_DIR": str(ws)}

    def call(event: str, **fields: Any) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(LAUNCH, input=raw(f"claude-code.{event}", ws, **fields), capture_output=True, env=env)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        return done

    call("SessionStart")
    args = {"notebook_path": str(nb), "new_source": "x = 2", "cell_id": "c0"}
    assert b'"allow"' in call("PreToolUse", tool_name="NotebookEdit", tool_input=args, tool_use_id="n1").stdout
    nb.write_text(after)
    response = {"original_file": before, "updated_file": after, "new_source": "x = 2", "notebook_path": str(nb)}
    receipt = raw(
        "claude-code.PostToolUse",
        ws,
        tool_name="NotebookEdit",
        tool_input=args,
        tool_use_id="n1",
        tool_response=response,
    )
    assert len(receipt) > MAX_INPUT_BYTES
    call("PostToolUse", tool_name="NotebookEdit", tool_input=args, tool_use_id="n1", tool_response=response)

    def tether(*argv: str) -> subprocess.CompletedProcess[str]:
        cli = [sys.executable, "-m", "tether.cli.main", *argv]
        return subprocess.run(cli, cwd=ws, capture_output=True, text=True, env=env)

    shown = tether("show", RUN).stdout
    assert "proposed but not executed" not in shown and "n1 (edit_file): undoable: 1 file" in shown, shown
    done = tether("undo", RUN)
    assert done.returncode == 0 and "1 file restored" in done.stdout, done.stdout + done.stderr
    assert nb.read_text() == before
    assert tether("log", "verify", RUN).returncode == 0


def test_a_large_failure_s_receipt_keeps_the_end_of_its_error(tmp_path: Path) -> None:
    """A command that failed after printing megabytes says why at the end: the log keeps that."""
    from tether.events.backends import open_store

    env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "CLAUDE_"))}
    env["CLAUDE_PROJECT_DIR"] = str(tmp_path)
    cli = [sys.executable, "-m", "tether.cli.main", "hook", "claude-code", "--no-daemon"]

    def call(event: str, **fields: Any) -> None:
        done = subprocess.run(cli, input=raw(f"claude-code.{event}", tmp_path, **fields), capture_output=True, env=env)
        assert done.returncode == 0, done.stderr.decode()[-2000:]

    command = {"command": "make test"}
    call("PreToolUse", tool_name="Bash", tool_input=command, tool_use_id="b1")
    error = "progress line\n" * (MAX_INPUT_BYTES // 14 + 1) + "FAILED tests/test_x.py::test_y - the reason\n"
    call("PostToolUseFailure", tool_name="Bash", tool_input=command, tool_use_id="b1", error=error)
    store = open_store(str(tmp_path / ".tether" / "tether.db"))
    try:
        done = [e for e in store.events(RUN) if e.kind == "action.completed" and e.payload["call_id"] == "b1"]
    finally:
        store.close()
    assert len(done) == 1 and not done[0].payload["ok"]
    text = json.dumps(done[0].payload)
    assert "FAILED tests/test_x.py::test_y - the reason" in text and "characters not kept" in text
