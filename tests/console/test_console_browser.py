"""The console in a real browser (headless Chromium through Playwright): the runs list, a run that grows
live while the kernel drives it, answering its approvals from the inbox (two operators at once) and the run
going on, the loop view, planted markup that must not run, and a 5,000-event run opening one page."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from consolekit import XSS, ask, follow, turn_events, write_run

from tether import Harness
from tether.cli.demo_cmds import prepare
from tether.console import views
from tether.console.server import Background
from tether.events.kinds import RunFinished
from tether.events.store import EventStore
from tether.kernel.approvals import ApprovalAnswer, record_answer
from tether.models.base import Message, ModelResponse, ToolSpec, Usage
from tether.models.function import FunctionModel, call, reply
from tether.status import RunStatus

pytestmark = pytest.mark.browser
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"


def pwned(page: Any) -> Any:
    return page.evaluate("window.__pwned")


def test_runs_list_shows_each_run_its_forks_as_a_tree_and_filters(served: Background, db: Path, page: Any) -> None:
    with EventStore.open(db) as store:
        root = write_run(store, "fix the median", 3)
        fork = write_run(store, "fix the median, again", 1, parent=root)
        done = write_run(store, "tidy the docs", 1)
        store.append(done, RunFinished(status=RunStatus.COMPLETE, result="tidy"))
    page.goto(served.url)
    rows = page.locator("tr.run")
    assert [rows.nth(i).get_attribute("data-run") for i in range(3)] == [root, fork, done]
    assert rows.nth(1).get_attribute("data-depth") == "1" and "↳" in rows.nth(1).inner_text()
    first = rows.nth(0).inner_text()
    assert "RUNNING" in first and "CAUTIOUS" in first and "verified" in first and "$0.0030" in first
    page.select_option("select[name=status]", "COMPLETE")
    follow(page, "form.filters button")
    assert [r.get_attribute("data-run") for r in page.locator("tr.run").all()] == [done]
    page.goto(served.url + "?q=MEDIAN")
    assert page.locator("tr.run").count() == 2
    follow(page, f"a[href='/runs/{root}']")
    page.click("#verify")
    assert "chain intact" in page.locator("#message").inner_text()


def test_the_loop_view_draws_eleven_layers_linked_to_their_events(served: Background, db: Path, page: Any) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "t", 3)
    page.goto(f"{served.url}runs/{run_id}")
    follow(page, "text=turn 2")
    layers = page.locator("li.layer")
    assert layers.count() == 11
    assert layers.nth(5).get_attribute("data-layer") == "control state"
    assert "ended the turn CAUTIOUS" in layers.nth(5).inner_text()
    evidence = page.locator("li.layer[data-layer=evidence] a").first
    seq = evidence.inner_text().lstrip("#")
    follow(page, evidence)
    assert page.locator(f"#e{seq}").get_attribute("data-kind") == "action.completed"


def test_planted_markup_in_task_output_preview_and_live_events_never_runs(
    served: Background, db: Path, page: Any
) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, XSS, 2, output=XSS)
        ask(store, run_id, 3, f"git push {XSS}", preview=XSS)
    for path in ("", f"runs/{run_id}", f"runs/{run_id}/turns/1", f"runs/{run_id}/events/0", "approvals"):
        page.goto(served.url + path)
        assert pwned(page) is None, path
        assert page.locator("img[src=x]").count() == 0, path
        assert "<script>window.__pwned = 1</script>" in page.locator("main").inner_text(), path
    page.goto(served.url)
    assert page.locator(f"tr.run[data-run='{run_id}'] a.pending").inner_text() == "1 to answer"
    page.goto(f"{served.url}runs/{run_id}")  # a waiting run's page follows the log: a live event is escaped too
    with EventStore.open(db) as store:
        appended = store.append_many(run_id, turn_events(4, XSS, XSS))
    page.locator(f"#e{appended[-1].seq}").wait_for()
    assert page.locator("ol.events li.ev").last.get_attribute("data-kind") == "sensor.result"
    assert XSS in page.locator(f"#e{appended[0].seq + 1}").inner_text()  # the model's text, shown as text
    assert pwned(page) is None and page.locator("img[src=x]").count() == 0


def test_a_five_thousand_event_run_opens_one_page_and_pages_back(served: Background, db: Path, page: Any) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "long", 560)
        total = len(store.events(run_id))
    assert total > 5000
    page.goto(f"{served.url}runs/{run_id}")
    items = page.locator("ol.events li.ev")
    assert items.count() == views.PAGE_SIZE
    assert items.last.get_attribute("data-seq") == str(total - 1)
    follow(page, "#earlier")
    assert page.locator("ol.events li.ev").first.get_attribute("data-seq") == str(total - 2 * views.PAGE_SIZE)
    assert page.locator("#count").inner_text() == str(total)


# ---- a real run: live, waiting, answered in the browser, resumed ----------------------------------------


EDIT = ("    return ordered[middle]\n", "    return ordered[middle]  # checked\n")


class Agent:
    """A model that waits for the test's go before its first turn, edits, pushes twice (each push ASKs), stops.
    It keeps what the kernel told it, so the test can see a denial's reason reach the model."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.turns = 0
        self.seen: list[str] = []

    def __call__(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        self.turns += 1
        self.seen = [str(m.content) for m in messages]
        if self.turns == 1:
            assert self.go.wait(30), "the test never said go"
            return reply("a note first", [call("edit_file", path="src/stats/core.py", old=EDIT[0], new=EDIT[1])])
        if self.turns == 2:
            return reply("pushing", [call("bash", command="git push origin main")])
        if self.turns == 3:
            return reply("pushing the tags", [call("bash", command="git push --tags origin")])
        return ModelResponse("I stop here", (), "refusal", "refusal", Usage(1, 1), "fn")


def drive(fn: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def wait_for(predicate: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def answer(page: Any, served: Background, operator: str, choice: str, reason: str = "") -> str:
    page.fill("input[name=by]", operator)
    if reason:
        page.fill("input[name=reason]", reason)
    page.click(f"button[value={choice}]")
    return str(page.locator("#message").inner_text())


def test_a_live_run_is_answered_from_the_inbox_and_goes_on(
    tmp_path: Path, served: Background, db: Path, page: Any, browser: Any
) -> None:
    bugfix = prepare(EXAMPLE, tmp_path)
    agent = Agent()
    harness = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model=FunctionModel(agent))
    runner = drive(lambda: harness.run("fix the median"))
    with EventStore.open(db, readonly=True) as store:
        wait_for(lambda: bool(store.runs()))
        run_id = store.runs()[0].run_id

    # the run's page is open while the kernel works: what it appends shows up without a reload
    page.goto(f"{served.url}runs/{run_id}")
    page.evaluate("window.__same_page = true")
    assert page.locator("li.ev[data-kind='model.responded']").count() == 0
    agent.go.set()
    page.locator("li.ev[data-kind='action.completed']").first.wait_for(timeout=60_000)
    page.locator("#status:text('WAITING_APPROVAL')").wait_for(timeout=60_000)
    assert page.evaluate("window.__same_page") is True
    runner.join(60)
    assert page.locator("li.ev[data-kind='approval.requested']").count() == 1

    # two operators open the inbox; a page whose hidden hash was tampered with approves nothing
    other = browser.new_context().new_page()
    other.goto(served.url + "approvals")
    page.goto(served.url + "approvals")
    assert "git push origin main" in page.locator("article.approval").inner_text()
    assert "local" in page.locator("article.approval dl").inner_text()
    page.evaluate("document.querySelector('input[name=args_hash]').value = 'sha256:' + '0'.repeat(64)")
    assert "not the ones this page showed" in answer(page, served, "ana", "once")
    page.goto(served.url + "approvals")
    assert "approved once" in answer(page, served, "ana", "once")
    told = answer(other, served, "bo", "deny", "no pushing")  # bo's page still showed it: first answer won
    assert "already answered" in told and "approved (once) by ana" in told
    other.context.close()

    # the driver resumes (as `tether resume` would); the open run page follows it to the next question
    page.goto(f"{served.url}runs/{run_id}")
    runner = drive(lambda: harness.resume(run_id))
    page.locator("li.ev[data-kind='approval.requested'] >> nth=1").wait_for(timeout=60_000)
    runner.join(60)
    page.goto(served.url + "approvals")
    assert "git push --tags origin" in page.locator("article.approval").inner_text()
    assert "denied" in answer(page, served, "ana", "deny", "no pushing today")
    page.goto(f"{served.url}runs/{run_id}")
    runner = drive(lambda: harness.resume(run_id))
    page.locator("#live:text('the run finished: NEEDS_INPUT')").wait_for(timeout=60_000)
    runner.join(60)
    assert page.locator("#status").inner_text() == "NEEDS_INPUT"
    assert any("no pushing today" in m for m in agent.seen)  # the model was told the operator's reason
    page.reload()  # the finished run's page: what it changed, from its first and last snapshots
    assert "+    return ordered[middle]  # checked" in page.locator("#final-diff").inner_text()

    with EventStore.open(db, readonly=True) as store:
        events = store.events(run_id)
    granted = [e.payload for e in events if e.kind == "approval.granted"]
    denied = [e.payload for e in events if e.kind == "approval.denied"]
    assert [(g["by"], g["scope"]) for g in granted] == [("ana", "once")]
    assert [(d["by"], d["reason"]) for d in denied] == [("ana", "no pushing today")]


def test_a_run_answered_in_the_inbox_is_resumed_from_its_page(
    tmp_path: Path, served: Background, db: Path, page: Any
) -> None:
    """A recorded trajectory (so the console can load the run's model by the name the log holds): the run
    waits on a push, the inbox approves it, the run's resume button drives it to its end."""
    bugfix = prepare(EXAMPLE, tmp_path)
    script = {"turns": [
        {"text": "pushing", "tool_calls": [{"name": "bash", "args": {"command": "git push origin main"}}]},
        {"text": "pushed; nothing more to do"},
    ]}  # fmt: skip
    (bugfix / "push.yaml").write_text(yaml.safe_dump(script))
    waiting = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model="scripted:push.yaml").run("publish")
    assert waiting.status is RunStatus.WAITING_APPROVAL

    page.goto(f"{served.url}runs/{waiting.run_id}")
    assert page.locator("#resume").count() == 0  # nothing to resume while the approval is pending
    page.goto(served.url + "approvals")
    assert "approved once" in answer(page, served, "ana", "once")
    page.goto(f"{served.url}runs/{waiting.run_id}")
    page.click("#resume")
    page.locator("#live:text('the run finished')").wait_for(timeout=60_000)
    assert page.locator("#driver-failure").count() == 0
    with EventStore.open(db, readonly=True) as store:
        events = store.events(waiting.run_id)
    pushed = [e.payload for e in events if e.kind == "action.completed" and e.payload["tool"] == "bash"]
    assert len(pushed) == 1 and [e.kind for e in events].count("run.continued") == 1
    assert events[-1].kind == "run.finished"
    page.goto(f"{served.url}runs/{waiting.run_id}")
    assert events[-1].payload["status"] == "NEEDS_INPUT"  # the script ran out: a stop a person answers
    assert page.locator("#resume-note").count() == 1  # so the resume form asks for the answer
    # without the note the kernel refuses: a form posted anyway (with the page's CSRF token) changes nothing
    page.evaluate(
        """(runId) => {
            const form = document.querySelector("form[action$='/verify']");
            form.action = "/runs/" + runId + "/resume";
            form.submit();
        }""",
        waiting.run_id,
    )
    assert "--note" in page.locator("#message").inner_text()
    with EventStore.open(db, readonly=True) as store:
        assert len(store.events(waiting.run_id)) == len(events)


def test_the_inbox_says_when_approvals_arrive_or_are_answered_elsewhere(
    served: Background, db: Path, page: Any
) -> None:
    with EventStore.open(db) as store:
        first = write_run(store, "first", 1)
        ask(store, first, 2, "git push origin main", "$ git push origin main")
        second = write_run(store, "second", 2)
    page.goto(served.url + "approvals")
    assert page.locator("article.approval").count() == 1 and page.locator("#inbox-changed").is_hidden()
    page.fill("input[name=reason]", "typing a reason")
    with EventStore.open(db) as store:
        ask(store, second, 3, "git push --force", "$ git push --force")
    page.locator("#inbox-changed:text('new: ap-3')").wait_for()
    with EventStore.open(db) as store:  # answered where `tether approve` answers
        record_answer(store, "ap-2", ApprovalAnswer("once", "cli-user"))
    page.locator("#inbox-changed:text('answered or expired: ap-2')").wait_for()
    assert page.input_value("input[name=reason]") == "typing a reason"  # nothing reloaded under the operator
    follow(page, "#inbox-changed a")
    assert [a.get_attribute("id") for a in page.locator("article.approval").all()] == ["ap-3"]


def test_export_downloads_the_runs_episode_package_and_refuses_a_broken_log(
    tmp_path: Path, served: Background, db: Path, page: Any
) -> None:
    import sqlite3

    from tether.observe.episode import read_package

    with EventStore.open(db) as store:
        run_id = write_run(store, "exported", 2)
        events = len(store.events(run_id))
    page.goto(f"{served.url}runs/{run_id}")
    with page.expect_download() as download:
        page.click("#export")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    package = read_package(saved)  # what `tether import` checks: names, hashes, chain
    assert saved.name == f"tether-{run_id}.tar.gz" and package.run_id == run_id
    assert package.manifest["events"] == events

    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("UPDATE events SET ts = '2000-01-01T00:00:00+00:00' WHERE run_id = ? AND seq = 1", (run_id,))
    page.goto(f"{served.url}runs/{run_id}")
    page.click("#export")
    assert "seq 1" in page.locator("#message").inner_text()


def test_a_command_that_reads_as_something_else_is_shown_as_marked(served: Background, db: Path, page: Any) -> None:
    """Trojan Source in an approval: a right-to-left override makes ``rm -rf ~ #`` look like something else."""
    spoof = "echo ok \u202e # ~ fr- mr"
    with EventStore.open(db) as store:
        run_id = write_run(store, "tidy\u200b up", 1)
        ask(store, run_id, 2, spoof, f"$ {spoof}")
    page.goto(served.url + "approvals")
    assert page.locator("code.command").inner_text() == "echo ok ⟦U+202E⟧ # ~ fr- mr"
    assert page.locator(".hidden-warning").is_visible()
    assert "⟦U+202E⟧" in page.locator("pre.preview").inner_text()
    assert "tidy⟦U+200B⟧ up" in page.locator("article .task").inner_text()
    page.goto(f"{served.url}runs/{run_id}")
    assert "⟦U+202E⟧" in page.locator("li.ev[data-kind='action.proposed']").last.inner_text()


def test_the_timeline_hides_and_shows_families_of_events_live_ones_too(served: Background, db: Path, page: Any) -> None:
    with EventStore.open(db) as store:
        run_id = write_run(store, "t", 2)
    page.goto(f"{served.url}runs/{run_id}")
    beliefs = page.locator("li.ev[data-family=belief]")
    assert beliefs.count() == 2 and beliefs.first.is_visible()
    page.uncheck("#show input[value=belief]")
    assert not beliefs.first.is_visible() and page.locator("li.ev[data-family=action]").first.is_visible()
    with EventStore.open(db) as store:
        appended = store.append_many(run_id, turn_events(3, "echo three", "three"))
    page.locator(f"#e{appended[-1].seq}").wait_for(state="attached")
    assert beliefs.count() == 3 and not beliefs.last.is_visible()  # arrived live, hidden as its family is
    page.check("#show input[value=belief]")
    assert beliefs.last.is_visible()


def test_undo_previews_then_restores_the_runs_changes(tmp_path: Path, served: Background, db: Path, page: Any) -> None:
    bugfix = prepare(EXAMPLE, tmp_path)
    source = bugfix / "project" / "src" / "stats" / "core.py"
    before = source.read_text()
    script = {"turns": [
        {"text": "a note", "tool_calls": [{"name": "edit_file", "args": {
            "path": "src/stats/core.py", "old": EDIT[0], "new": EDIT[1]}}]},
    ]}  # fmt: skip
    (bugfix / "edit.yaml").write_text(yaml.safe_dump(script))
    run = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model="scripted:edit.yaml").run("note it")
    assert source.read_text() != before

    page.goto(f"{served.url}runs/{run.run_id}")
    page.click("#undo")  # the plan first, nothing changed
    assert "the undo would restore 1 file(s)" in page.locator("#message").inner_text()
    assert "src/stats/core.py" in page.locator("#message").inner_text() and source.read_text() != before
    page.click("#undo-confirm")
    assert "undone: 1 file(s) restored" in page.locator("#message").inner_text()
    assert source.read_text() == before
    with EventStore.open(db, readonly=True) as store:
        assert store.events(run.run_id)[-1].kind == "run.undone"


def test_a_stop_that_needs_a_note_is_resumed_with_one_and_a_run_is_forked_from_its_page(
    tmp_path: Path, served: Background, db: Path, page: Any
) -> None:
    """The resume form asks for what the stop needs (kernel/continuation.py): a NEEDS_INPUT run offers a note
    field, and the note is recorded with who gave it. The fork form forks at a seq and drives the fork."""
    bugfix = prepare(EXAMPLE, tmp_path)
    (bugfix / "ask.yaml").write_text(yaml.safe_dump({"turns": [{"text": "which median do you mean?"}]}))
    stopped = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model="scripted:ask.yaml").run("fix it")
    assert stopped.status is RunStatus.NEEDS_INPUT

    page.goto(f"{served.url}runs/{stopped.run_id}")
    assert page.locator("#resume-budget").count() == 0 and page.locator("#resume-attempts").count() == 0
    page.fill("#resume-note", "the mean of the two middle values")
    page.click("#resume")
    page.locator("#live:text('the run finished')").wait_for(timeout=60_000)
    with EventStore.open(db, readonly=True) as store:
        events = store.events(stopped.run_id)
    (continued,) = [e.payload for e in events if e.kind == "run.continued"]
    assert continued["note"] == "the mean of the two middle values" and continued["by"] == "console"

    first_call = next(e.seq for e in events if e.kind == "model.requested")
    page.goto(f"{served.url}runs/{stopped.run_id}")
    page.fill("#fork-seq", str(first_call - 1))
    page.click("#fork")
    page.wait_for_url(lambda url: stopped.run_id not in url, timeout=60_000)
    fork_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.locator("#live:text('the run finished')").wait_for(timeout=60_000)
    with EventStore.open(db, readonly=True) as store:
        forked = next(e for e in store.events(fork_id) if e.kind == "run.forked")
        store.verify(fork_id)  # raises on a broken chain
    assert forked.payload["parent_run"] == stopped.run_id and forked.payload["at_seq"] == first_call - 1
    assert Path(forked.payload["workspace"]).parent == (bugfix / "project").parent  # beside the parent's


def test_a_fork_at_a_seq_the_run_does_not_have_is_refused_on_the_page(
    tmp_path: Path, served: Background, db: Path, page: Any
) -> None:
    bugfix = prepare(EXAMPLE, tmp_path)
    (bugfix / "ask.yaml").write_text(yaml.safe_dump({"turns": [{"text": "which median do you mean?"}]}))
    stopped = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model="scripted:ask.yaml").run("fix it")
    with EventStore.open(db, readonly=True) as store:
        before = len(store.runs())
    page.goto(f"{served.url}runs/{stopped.run_id}")
    page.evaluate("document.querySelector('#fork-seq').removeAttribute('max')")
    page.fill("#fork-seq", "99999")
    page.click("#fork")
    assert "not one of them" in page.locator("#message").inner_text()
    with EventStore.open(db, readonly=True) as store:
        assert len(store.runs()) == before
