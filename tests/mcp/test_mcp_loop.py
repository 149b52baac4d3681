"""MCP tools in tether's own loop, end to end: a real SDK server over stdio, started inside the run's
bubblewrap sandbox, its declared tools offered and gated, its undeclared ones never offered, a hang and a
crash failing only their calls, and the run still completing on evidence with a log that verifies."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcpkit import private_config

from tether import EventStore, FunctionModel, Harness, load_envelope
from tether.cli.demo_cmds import prepare
from tether.models.base import Message, ModelResponse, ToolSpec
from tether.models.function import call, reply
from tether.observe.timeline import timeline

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "bugfix"
FIX = {
    "path": "src/stats/core.py",
    "old": "    return ordered[middle]\n",
    "new": "    if len(ordered) % 2:\n        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n",
}


def _contract(name: str, effects: list[str], **extra: Any) -> dict[str, Any]:
    full = {
        "timeout_s": 10,
        "idempotent": False,
        "on_failure": "return_error",
        "evidence": ["result"],
        "rollback": "none",
    }
    return (
        {"name": f"mcp__notes__{name}", "purpose": f"the notes server's {name}", "effects": effects}
        | (full if effects != ["read"] else {})
        | extra
    )


def _envelope(project: Path, backend: str) -> Any:
    env = load_envelope(project.parent / "envelope.yaml")
    tools = [
        *[t.model_dump(mode="json", exclude_none=True) for t in env.tools],
        _contract("search_notes", ["read"]),
        _contract("add_note", ["write"]),
        _contract("bash", ["read"]),  # the server's 'bash': a different tool from the built-in shell
        _contract("slow", ["read"], timeout_s=1),
        _contract("huge", ["read"]),
        _contract("crash", ["read"]),
        _contract("whoami", ["read"]),
        _contract("gone", ["read"]),  # declared, but the server has no such tool
    ]
    data = env.model_dump(mode="json")
    data["contract_hash"] = ""
    data["tools"] = tools
    data["mcp_servers"] = [{"name": "notes", "command": ["{python}", "notes_server.py"], "startup_timeout_s": 60}]
    data["environment"]["sandbox"] = {"backend": backend, "required": True}
    data["verification"]["sensors"] = [{"name": "syntax", "required": True}]  # the MCP part is under test, not pytest
    data["permissions"]["deny"].append(
        {"id": "no-notes-writes", "rule": "mcp__notes__add_note", "reason": "notes are read-only here"}
    )
    return type(env).model_validate(data)


TURNS: list[list[Any]] = [
    [
        call("mcp__notes__search_notes", query="gro"),
        call("mcp__notes__delete_everything"),  # listed by the server, never declared
        call("mcp__notes__add_note", title="x", body="y"),  # denied by a rule
        call("mcp__notes__search_notes", query=42),  # the server's schema says string
        call("mcp__notes__bash", command="echo hi"),
        call("mcp__notes__whoami", probe="{db}"),
    ],
    [call("mcp__notes__slow", seconds=30), call("mcp__notes__huge", chars=300_000)],
    [call("mcp__notes__crash"), call("mcp__notes__search_notes", query="todo")],
    [call("edit_file", **FIX)],
    [call("finish", summary="fixed median")],
]


@pytest.fixture(scope="module")
def mcp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[list[str]]]:
    root = tmp_path_factory.mktemp("loop")
    bugfix = prepare(EXAMPLE, root)
    project = bugfix / "project"
    shutil.copy(HERE / "notes_server.py", project / "notes_server.py")
    offered: list[list[str]] = []

    def agent(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        offered.append(sorted(t.name for t in tools if t.name.startswith("mcp__")))
        turn = TURNS[sum(1 for m in messages if m.role == "assistant")]
        return reply(
            calls=[c if c.args.get("probe") != "{db}" else call(c.name, probe=str(root / "t.db")) for c in turn]
        )

    harness = Harness(_envelope(project, "bwrap"), model=FunctionModel(agent), workspace=project, db=root / "t.db")
    with private_config(root):
        result = harness.run("look at the notes, then fix the median")
    assert result.status == "COMPLETE", result
    return root / "t.db", result.run_id, offered


def _completed(db: Path, run_id: str) -> dict[str, dict[str, Any]]:
    with EventStore.open(db) as store:
        events = store.events(run_id)
    proposed = {e.payload["call_id"]: e.payload["tool"] for e in events if e.kind == "action.proposed"}
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.kind in ("action.completed", "action.invalid", "action.decided"):
            out.setdefault(proposed[e.payload["call_id"]] + f"#{e.payload['call_id']}", {})[e.kind] = e.payload
    return out


@pytest.mark.bwrap
def test_only_declared_and_listed_tools_are_offered(mcp_run: tuple[Path, str, list[list[str]]]) -> None:
    db, run_id, offered = mcp_run
    want = ["mcp__notes__bash", "mcp__notes__crash", "mcp__notes__huge", "mcp__notes__search_notes"]
    want += ["mcp__notes__slow", "mcp__notes__whoami", "mcp__notes__add_note"]
    assert all(o == sorted(want) for o in offered)  # never delete_everything, never the unlisted 'gone'
    with EventStore.open(db) as store:
        events = store.events(run_id)
        store.verify_run(run_id)
    started = [e.payload for e in events if e.kind == "mcp.started"]
    assert any("MCP server notes" in line and "delete_everything" in line for line in timeline(events)[0])
    assert len(started) == 1 and started[0]["sandbox"] == "bwrap"
    assert started[0]["undeclared"] == ["delete_everything", "getenv"] and started[0]["not_listed"] == [
        "mcp__notes__gone"
    ]


@pytest.mark.bwrap
def test_calls_are_gated_checked_and_their_results_untrusted(mcp_run: tuple[Path, str, list[list[str]]]) -> None:
    db, run_id, _ = mcp_run
    calls = _completed(db, run_id)
    first = next(v for k, v in calls.items() if k.startswith("mcp__notes__search_notes") and "action.completed" in v)
    assert first["action.completed"]["ok"] and "groceries: milk, eggs" in first["action.completed"]["result"]["content"]
    assert first["action.completed"]["result"]["data"]["trust"] == "untrusted"
    undeclared = next(v for k, v in calls.items() if k.startswith("mcp__notes__delete_everything"))
    assert "unknown tool" in undeclared["action.invalid"]["error"]
    denied = next(v for k, v in calls.items() if k.startswith("mcp__notes__add_note"))
    assert (
        denied["action.decided"]["verdict"] == "DENY" and denied["action.decided"]["deciding_rule"] == "no-notes-writes"
    )
    assert "action.completed" not in denied
    bad_args = [v for k, v in calls.items() if k.startswith("mcp__notes__search_notes") and "action.invalid" in v]
    assert len(bad_args) == 1 and "$.query" in bad_args[0]["action.invalid"]["error"]
    echo = next(v for k, v in calls.items() if k.startswith("mcp__notes__bash"))
    assert echo["action.completed"]["result"]["content"] == "echo from the server: echo hi"


@pytest.mark.bwrap
def test_the_server_runs_sandboxed(mcp_run: tuple[Path, str, list[list[str]]]) -> None:
    db, run_id, _ = mcp_run
    who = next(v for k, v in _completed(db, run_id).items() if k.startswith("mcp__notes__whoami"))
    content = who["action.completed"]["result"]["content"]
    # outside the workspace nothing of the host's is there, the network is loopback only, and root is dropped
    assert "sees_probe=False" in content and "nets=['lo']" in content and not content.startswith("uid=0 ")


@pytest.mark.bwrap
def test_a_hang_and_a_crash_fail_their_calls_closed(mcp_run: tuple[Path, str, list[list[str]]]) -> None:
    db, run_id, _ = mcp_run
    calls = _completed(db, run_id)
    slow = next(v for k, v in calls.items() if k.startswith("mcp__notes__slow"))["action.completed"]
    assert not slow["ok"] and slow["result"]["failure_class"] == "timeout" and "within 1s" in slow["result"]["content"]
    huge = next(v for k, v in calls.items() if k.startswith("mcp__notes__huge"))["action.completed"]
    assert huge["ok"] and len(huge["result"]["content"]) < 50_000
    crash = next(v for k, v in calls.items() if k.startswith("mcp__notes__crash"))["action.completed"]
    assert not crash["ok"] and crash["result"]["failure_class"] == "mcp_server_died"
    assert "crashing on purpose" in crash["result"]["content"]
    after = [
        v["action.completed"]
        for k, v in calls.items()
        if k.startswith("mcp__notes__search_notes") and "action.completed" in v
    ][-1]
    assert not after["ok"] and after["result"]["failure_class"] == "mcp_server_died"
