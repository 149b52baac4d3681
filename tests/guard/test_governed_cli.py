"""A governed session's run seen from the CLI: what `approve` says, and `resume`/`fork`/`replay` refusing it
clearly (the run's program drives it), and `show` saying who ran the tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether.cli.main import app, main
from tether.events import EventStore
from tether.guard import Guard

runner = CliRunner()


@pytest.fixture
def asked(store: EventStore, guarded: Path) -> tuple[Guard, str]:
    g = Guard.open(store, guarded, "thread-9", framework="langgraph")
    answer = g.check("send_email", {"to": "team@example.com", "body": "x"})
    assert answer.approval_id
    return g, answer.approval_id


def test_approve_says_the_answer_takes_effect_when_the_agent_retries(asked: tuple[Guard, str]) -> None:
    g, approval = asked
    out = runner.invoke(app, ["approve", approval, "--db", str(g.store.path)])
    assert out.exit_code == 0, out.output
    assert "langgraph drives this run: the answer takes effect when the agent retries the call" in out.output
    assert "tether resume" not in out.output
    again = g.check("send_email", {"to": "team@example.com", "body": "x"})
    assert again.verdict.name == "ASK", "another call id: not the approved one"


def test_deny_as_json_says_how_it_takes_effect(asked: tuple[Guard, str]) -> None:
    g, approval = asked
    out = runner.invoke(app, ["deny", approval, "--reason", "no", "--db", str(g.store.path), "--json"])
    assert out.exit_code == 0, out.output
    assert "retries the call" in json.loads(out.output)["then"]


@pytest.mark.parametrize(
    "command",
    [["resume"], ["fork", "--at", "1", "--model", "scripted"], ["replay"]],
    ids=["resume", "fork", "replay"],
)
def test_resume_fork_and_replay_refuse_a_governed_run_naming_why(
    asked: tuple[Guard, str], tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    g, _ = asked
    args = [command[0], g.run_id, *command[1:], "--db", str(g.store.path), "--json"]
    if command[0] == "fork":
        args += ["--workspace", str(tmp_path / "forked")]
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2, "an input error (the exit-code table's row 2)"
    said = capsys.readouterr()
    error = json.loads(said.out.strip().splitlines()[-1])["error"]
    assert "governed session driven by an external agent (langgraph)" in error
    assert f"tether {command[0]}` cannot drive it" in error
    assert not (tmp_path / "forked").exists(), "nothing was materialised"


def test_show_says_the_program_ran_the_tools_and_how_the_session_ended(asked: tuple[Guard, str]) -> None:
    g, _ = asked
    g.close("the thread is done")
    out = runner.invoke(app, ["show", g.run_id, "--db", str(g.store.path), "--verbose"])
    assert out.exit_code == 0, out.output
    assert "external: langgraph" in out.output
    assert "langgraph runs the tools, outside any tether sandbox" in out.output
    assert "session ended (closed, by program): the program closed the session: the thread is done" in out.output
