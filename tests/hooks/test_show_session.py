"""``tether show`` of a governed session says once what it cannot say per call.

A Claude Code session's tools run in Claude Code, outside tether's workspace snapshots: no action of it can be
undone and its changes are not in the log. Before, ``tether show`` printed one undo line per executed call (a
session of 1,000 calls: 1,000 lines of "not undoable: it ran without a workspace snapshot around it") and
"changes: unknown — the run recorded no start snapshot", as if a snapshot had been missed.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from hookkit import Hook, payload
from typer.testing import CliRunner

from tether.cli.common import console
from tether.cli.main import app
from tether.cli.run_cmds import show_undo
from tether.hooks.session import run_id_for


def show(hook: Hook, run: str) -> list[str]:
    shown = CliRunner().invoke(app, ["show", run, "--db", hook.request["db"]])
    assert shown.exit_code == 0, shown.output
    return shown.output.splitlines()


def test_a_sessions_calls_that_share_one_answer_are_one_undo_line(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    for i in range(8):  # shell commands: what each changed is unknown (a file tool's changes are recorded)
        touch = {"command": f"touch f{i}.txt"}
        assert hook("PreToolUse", tool_name="Bash", tool_input=touch, tool_use_id=f"w{i}").exit == 0
        assert hook("PostToolUse", tool_name="Bash", tool_input=touch, tool_use_id=f"w{i}", tool_response={}).exit == 0
    lines = show(hook, run_id_for("claude-code", _session(hook)))
    undo = lines[lines.index(next(x for x in lines if x.startswith("undo "))) + 1 :]
    undo = undo[: undo.index("")]
    assert len(undo) == 1 and undo[0].startswith("  8 actions, w0 … w7 (8 bash): not undoable: it ran"), undo
    changes = next(x for x in lines if x.startswith("changes"))
    assert changes == (
        "changes: unknown — a governed session: claude-code ran its tools, outside tether's workspace snapshots"
    ), changes


def _session(hook: Hook) -> str:
    return str(payload("claude-code.PreToolUse", hook.workspace)["session_id"])


def test_answers_are_grouped_only_past_the_bound_in_the_order_they_first_came() -> None:
    answers = ["nothing to undo: it changed no file", "undoable: 1 file", "nothing to undo: it changed no file"]
    answers += ["undoable: 1 file"] * 3 + ["not undoable: [red]x[/red]"] * 5
    rollback = {f"c{i}": why for i, why in enumerate(answers)}
    ledger = SimpleNamespace(
        records={c: SimpleNamespace(tool="bash" if i % 2 else "edit") for i, c in enumerate(rollback)}
    )
    with console.capture() as captured:
        show_undo(ledger, rollback)  # type: ignore[arg-type]
    assert captured.get().splitlines()[2:] == [
        "  c0 (edit): nothing to undo: it changed no file",
        "  c2 (edit): nothing to undo: it changed no file",
        "  4 actions, c1 … c5 (3 bash, 1 edit): undoable: 1 file",
        "  5 actions, c6 … c10 (3 edit, 2 bash): not undoable: [red]x[/red]",
    ]


def test_the_budgets_table_shows_what_the_log_says_and_nothing_a_hook_cannot_see(tmp_path: Path) -> None:
    """Before, a governed session's budgets said turns, tokens and usd used 0 (its model calls never reach tether)
    and wall_s 0.0 for any open run (only closed stretches were counted)."""
    import time

    from tether.events.store import Event, EventStore
    from tether.observe.summary import summarize

    hook = Hook(tmp_path)
    assert hook.bash("ls", "b1")[0] == "allow"
    time.sleep(0.3)
    assert hook.bash("ls", "b2")[0] == "allow"
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        events = store.events(run_id_for("claude-code", _session(hook)))
    rows = {r["budget"]: r["used"] for r in summarize(events)["budgets"]}
    assert set(rows) == {"tool_calls", "wall_s"}, rows
    assert rows["tool_calls"] == 2 and rows["wall_s"] >= 0.3, rows
    ts = "2026-01-01T00:00:00+00:00"
    own = [Event("r", 0, ts, "run.started", {"task": "t", "sandbox": "local", "budgets": {"turns": 10}})]
    assert {r["budget"] for r in summarize(own)["budgets"]} == {"turns", "tokens", "usd", "tool_calls", "wall_s"}
