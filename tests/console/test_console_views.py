"""What the console's pages say, computed from real logs without a browser: pagination, the fork tree,
filters, the control band, the diagnostics chart, the loop view and a damaged log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from consolekit import write_run

from tether.console import views
from tether.events.store import EventStore


def test_a_long_run_opens_on_its_last_page_and_every_page_holds_at_most_page_size(db: Path) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "long", 400)  # 4,000+ events
        events = store.events(run_id)
    tail = views.page(events, None)
    assert len(tail.items) == views.PAGE_SIZE and tail.is_tail and tail.later is None
    assert tail.items[-1].seq == events[-1].seq
    first = views.page(events, 0)
    assert [i.seq for i in first.items] == list(range(views.PAGE_SIZE)) and first.earlier is None
    assert first.later == views.PAGE_SIZE
    seq = 1234
    start = views.page_of_seq(events, seq)
    assert seq in [i.seq for i in views.page(events, start).items]
    assert views.page(events, 10**9).items[-1].seq == events[-1].seq  # past the end: the last event, not nothing


def test_forks_follow_their_parent_and_a_parent_loop_is_shown_once(db: Path) -> None:
    with EventStore.open(db) as store:
        root = write_run(store, "root", 1)
        fork = write_run(store, "fork", 1, parent=root)
        write_run(store, "fork of fork", 1, parent=fork)
        write_run(store, "other", 1)
        rows = [views.run_row(i, store.events(i.run_id), None) for i in store.runs()]
    tree = views.as_tree(rows)
    assert [(r.task, r.depth) for r in tree] == [("root", 0), ("fork", 1), ("fork of fork", 2), ("other", 0)]
    alone = views.as_tree([r for r in rows if r.task != "root"])  # the parent filtered out: the fork stays
    assert [(r.task, r.depth) for r in alone] == [("fork", 0), ("fork of fork", 1), ("other", 0)]


def test_filters_match_status_control_and_text(db: Path) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "Fix the median", 3)
        (row,) = [views.run_row(i, store.events(i.run_id), None) for i in store.runs()]
    assert row.status == "RUNNING" and row.control == "CAUTIOUS" and row.tokens == 360
    assert views.matches(row, "RUNNING", "CAUTIOUS", "MEDIAN") and views.matches(row, "", "", run_id[-6:])
    assert not views.matches(row, "COMPLETE", "", "") and not views.matches(row, "", "NORMAL", "")
    assert not views.matches(row, "", "", "mode")


def test_the_control_band_spans_the_log_and_the_chart_stays_in_its_box(db: Path) -> None:
    with EventStore.open(db) as store:
        events = store.events(write_run(store, "t", 300))
    band = views.control_band(events)
    assert [b.state for b in band] == ["NORMAL", "CAUTIOUS"]
    assert band[0].first_seq == 0 and band[-1].last_seq == events[-1].seq
    assert abs(sum(b.percent for b in band) - 100) < 0.1 and band[1].offset == band[0].percent
    chart = {s.name: s for s in views.diagnostics_chart(events)}
    assert set(chart) == {"evidence_support", "progress_rate"}
    points = [tuple(map(float, p.split(","))) for p in chart["progress_rate"].points.split()]
    assert len(points) <= views.CHART_POINTS and all(0 <= x <= 100 and 0 <= y <= 40 for x, y in points)
    assert points[0][1] == 0.0 and points[-1][1] > 39  # 1.0 at the top, 1/300 near the bottom


def test_the_loop_view_puts_each_event_of_a_turn_in_its_layer(db: Path) -> None:
    with EventStore.open(db) as store:
        events = store.events(write_run(store, "t", 3))
    view = views.turn_view(events, 2)
    assert [lv.layer.name for lv in view.layers] == [
        "world model", "evidence", "hypotheses", "contradictions", "diagnostics", "control state", "planning",
        "execution review", "verification", "recovery", "reviewer",
    ]  # fmt: skip
    by = {lv.layer.name: lv for lv in view.layers}
    assert [i.kind for i in by["planning"].items] == ["model.responded", "action.proposed"]
    assert [i.title for i in by["execution review"].items] == ["ALLOW"]
    assert [i.kind for i in by["evidence"].items] == ["action.completed"]
    assert by["verification"].items[0].title == "sensor lint: FAIL"
    assert by["control state"].note == "ended the turn CAUTIOUS" and view.control == "CAUTIOUS"
    assert by["hypotheses"].note == "nothing this turn"
    assert all(i.turn == 2 for lv in view.layers for i in lv.items)
    assert by["world model"].held == "1 belief held: tests.failing = 2"  # the fold's belief after turn 2
    assert by["recovery"].held == "strategy direct_edit" and by["planning"].held == "no plan recorded"
    assert views.turn_view(events, 1).control == "NORMAL"


def test_a_long_output_is_clipped_on_the_timeline_and_named_as_such(db: Path) -> None:
    with EventStore.open(db) as store:
        events = store.events(write_run(store, "t", 1, output="x" * 10_000))
    (done,) = [views.item(e, 1) for e in events if e.kind == "action.completed"]
    assert done.clipped and len(done.text) == views.TEXT_LIMIT and done.text_label == "output"
    assert ("exit code", "0") in done.facts and ("changed files", "src/a.py") in done.facts


def test_a_rewritten_log_is_listed_corrupt_not_folded(db: Path) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "t", 2)
    with sqlite3.connect(db) as conn:  # a writer that goes around the store: drop the append-only trigger
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute('UPDATE events SET payload = \'{"task": "forged"}\' WHERE run_id = ? AND seq = 0', (run_id,))
    with EventStore.open(db, readonly=True) as store:
        info = store.run(run_id)
        try:
            store.verify(run_id)
            problem = None
        except Exception as e:
            problem = str(e)
        row = views.run_row(info, store.events(run_id), problem)
    assert problem and row.status == "CORRUPT" and not row.verified and "seq 0" in row.problem


def test_a_chained_log_that_does_not_fold_is_listed_with_the_reason(db: Path) -> None:
    """A log whose chain verifies but that tether did not write (a completion of a call never proposed)."""
    from tether.events.kinds import ActionCompleted

    with EventStore.open(db) as store:
        run_id = write_run(store, "t", 1)
        store.append(run_id, ActionCompleted(call_id="never-proposed", tool="bash", ok=True))
        row = views.run_row(store.run(run_id), store.events(run_id), None)
    assert row.status == "CORRUPT" and "does not fold" in row.problem and "never-proposed" in row.problem


def test_a_forks_timeline_starts_with_its_parents_events_marked_as_theirs(db: Path) -> None:
    with EventStore.open(db) as store:
        root = write_run(store, "root", 2)
        fork = write_run(store, "fork", 1, parent=root)
        events = store.events(fork)
        parent_len = len(store.events(root))
    items = views.page(events, 0).items
    assert {i.origin for i in items[:parent_len]} == {root}
    assert items[parent_len].kind == "run.forked" and {i.origin for i in items[parent_len:]} == {fork}
    assert items[-1].turn == 101  # the fork's own turns go on from its parent's numbering


def test_diffs_are_told_from_other_text_line_by_line() -> None:
    diff = "edit_file src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-old\n+new\n ctx"
    assert views.is_diff(diff) and not views.is_diff("--- not a diff\nno hunk") and not views.is_diff("+1\n-1")
    assert [views.diff_class(line) for line in diff.splitlines()] == ["", "file", "file", "hunk", "del", "add", ""]


def test_a_running_runs_duration_counts_up_to_now_a_finished_ones_does_not(db: Path) -> None:
    from datetime import datetime, timedelta

    from tether.events.kinds import RunFinished
    from tether.status import RunStatus

    with EventStore.open(db) as store:
        run_id = write_run(store, "t", 1)
        events = store.events(run_id)
        later = datetime.fromisoformat(events[0].ts) + timedelta(seconds=100)
        assert views.run_row(store.run(run_id), events, None, later).duration_s >= 100
        store.append(run_id, RunFinished(status=RunStatus.NO_PROGRESS))
        finished = views.run_row(store.run(run_id), store.events(run_id), None, later + timedelta(hours=1))
    assert finished.duration_s < 100


def test_characters_that_hide_how_text_reads_are_shown_as_marks() -> None:
    assert views.visible("ls \u202e; hsup tig") == "ls ⟦U+202E⟧; hsup tig"
    assert views.visible("a\u200bb\u2066c\u0007d\u009be\ufefff") == "a⟦U+200B⟧b⟦U+2066⟧c⟦U+0007⟧d⟦U+009B⟧e⟦U+FEFF⟧f"
    assert views.visible("line\n\ttab, café, 中文, emoji 🙂") == "line\n\ttab, café, 中文, emoji 🙂"
    assert views.has_hidden("x\u202ay") and not views.has_hidden("plain\ntext")


def test_every_registered_kind_has_a_family_the_timeline_can_hide() -> None:
    from tether.events.payload import REGISTRY

    shown = views.families()
    assert all(kind.split(".")[0] in shown for kind in REGISTRY)
    assert shown[:3] == ["run", "model", "action"] and len(shown) == len(set(shown))


def test_a_governed_sessions_start_says_which_program_ran_the_tools(tmp_path: Path) -> None:
    from tether.hooks.answer import answer

    data = {"hook_event_name": "SessionStart", "session_id": "s-1", "cwd": str(tmp_path), "source": "startup"}
    db = tmp_path / ".tether" / "tether.db"
    assert answer({"agent": "claude-code", "db": str(db)}, data).exit == 0
    with EventStore.open(db, readonly=True) as store:
        (info,) = store.runs()
        started = views.item(store.events(info.run_id)[0], 0)
    assert ("sandbox", "external: claude-code") in started.facts
    assert ("governed session", "claude-code runs the tools, outside any tether sandbox") in started.facts


def test_a_verdict_the_agent_was_told_otherwise_says_what_it_was_told(tmp_path: Path) -> None:
    """As ``tether show`` says it (tether/told.py): an ASK refused in ``auto``, an ALLOW left to plan mode; a verdict
    told as it is carries no such fact. On a page, in the loop view and in a live stream alike."""
    from tether.console.live import _Follow
    from tether.hooks.answer import answer

    db = tmp_path / ".tether" / "tether.db"
    base = {"hook_event_name": "PreToolUse", "session_id": "s-1", "cwd": str(tmp_path), "tool_name": "Bash"}
    calls = [("auto", "git push origin main"), ("plan", "ls"), ("default", "git push origin main")]
    for i, (mode, command) in enumerate(calls):
        data = {**base, "permission_mode": mode, "tool_input": {"command": command}, "tool_use_id": f"c{i}"}
        assert answer({"agent": "claude-code", "db": str(db)}, data).exit == 0
    with EventStore.open(db, readonly=True) as store:
        (info,) = store.runs()
        events = store.events(info.run_id)
    want = [
        ("ASK", "deny — refused, not asked: in permission mode 'auto'"),
        ("ALLOW", "no decision — in plan mode Claude Code's own permission flow decides"),
        ("ASK", None),
    ]

    def told(items: list[views.Item]) -> list[tuple[str, str | None]]:
        decided = [i for i in items if i.kind == "action.decided"]
        return [(i.title, next((v for k, v in i.facts if k == "told claude-code"), None)) for i in decided]

    live = _Follow([])
    for shown in (views.page(events, 0).items, [live.take(e) for e in events]):
        got = told(shown)
        assert [(t, v and v[: len(w or "")]) for (t, v), (_, w) in zip(got, want, strict=True)] == want, got
    looped = [i for layer in views.turn_view(events, 0).layers for i in layer.items]
    assert sorted(told(looped), key=str) == sorted(told(views.page(events, 0).items), key=str)
