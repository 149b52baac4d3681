"""Payload objects are the log's currency: every kind round-trips, old logs read the same, bad rows fail closed."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.canonical import canonical_json
from tether.control import observe
from tether.envelope.schema import Envelope
from tether.errors import LogCorrupt
from tether.events import REGISTRY, Payload
from tether.events import kinds as k
from tether.events import kinds_baseline as kb
from tether.events import kinds_context as kx
from tether.events import kinds_control as kc
from tether.events import kinds_delegate as kd
from tether.events import kinds_distributed as kdi
from tether.events import kinds_egress as ke
from tether.events import kinds_files as kf
from tether.events import kinds_graph as kgr
from tether.events import kinds_guard as kg
from tether.events import kinds_hooks as kh
from tether.events import kinds_kernel as kkr
from tether.events import kinds_knowledge as kk
from tether.events import kinds_mcp as km
from tether.events import kinds_schedule as ks
from tether.events import kinds_verify as kv
from tether.events.chain import event_hash
from tether.events.payload import InvalidPayload, UnknownEventKind, parse, register
from tether.events.store import Event, EventStore
from tether.state import STATUS_KINDS, RunState, kept_args, kept_result
from tether.status import ActionStatus, RunStatus

OLD = Path(__file__).parent / "data" / "old_log"
H = "sha256:" + "3" * 64

#: One filled-in payload per registered kind (nested models included), for the round trip.
SAMPLES: list[Payload] = [
    k.RunStarted(
        task="t",
        envelope={"plan": {"path": "p"}},
        plan={"intent": "x"},
        budgets={"turns": 3, "usd": 1.5, "wall_s": None},
        max_external=2,
        acknowledged=[k.AcceptedRisk(risk="net", path="network", found="on", reason="why")],
    ),
    k.RunResumed(reason="approved"),
    k.RunForked(
        parent_run="p",
        at_seq=3,
        parent_hash="a" * 64,
        workspace="/w",
        snapshot="sha256:" + "1" * 64,
        envelope_path="e.yaml",
        envelope={"plan": {"path": "p"}},
        plan={"intent": "x"},
        plan_hash="h",
        contract_hash="c",
        model="m",
        by="me",
    ),
    k.RunContinued(
        by="ana",
        from_status="BUDGET_STOP",
        reason="usd raised",
        note="go on",
        budgets={"usd": 5.0},
        before={"usd": 2.0},
        attempts=1,
        resolved=["c9"],
    ),
    k.RunWaiting(status="WAITING_APPROVAL", reason="a1"),
    k.RunFinished(status="COMPLETE", result="ok", evidence=["r#1"], unknowns=["u"], next_action="n", last_error="e"),
    k.SandboxFailed(error="bwrap: no user namespaces", fix="install bubblewrap"),
    k.Checkpoint(label="start", snapshot="sha256:" + "0" * 64, files=3, unreadable=["x"]),
    kkr.ModelRequested(turn=1, model="m", n_messages=3, max_tokens=100, prompt_tokens_est=40),
    k.ModelResponded(
        turn=1,
        model="m",
        text="hi",
        tool_calls=[k.ToolCallData(id="c1", name="bash", args={"command": "ls", "n": [1, 2.5, None]})],
        termination="tool_request",
        input_tokens=10,
        output_tokens=2,
        cost_usd=0.25,
        usage_reported=False,
    ),
    k.ModelRetried(turn=1, model="m", attempt=2, error="503", status=503, failure="outage", window=1000),
    k.ModelFailed(
        turn=1, model="m", error="overflow", failure="context_overflow", window=8000, window_setting="--ctx-size"
    ),
    k.ContextFull(turn=2, problem="the prompt alone exceeds the window", window_setting="--ctx-size"),
    kkr.ModelTruncated(turn=2, max_tokens=256, not_run=["c1", "c2"]),
    k.ModelUnaffordable(turn=3, budget="usd", used=0.9, limit=1.0, reason="budgets.usd cannot pay for another call"),
    k.ActionProposed(call_id="c1", tool="bash", args={"command": "ls"}, args_hash="h", turn=1),
    k.ActionInvalid(call_id="c1", tool="bash", error="bad"),
    k.ActionDecided(
        call_id="c1",
        verdict="ASK",
        deciding_rule="r",
        reason="why",
        rules=[k.RuleHit(id="r", verdict="ASK", reason="why")],
    ),
    k.ActionStarted(call_id="c1", tool="bash", args_hash="h", attempt=2, idempotent=True),
    k.ActionCompleted(
        call_id="c1",
        tool="bash",
        ok=True,
        result={"content": "ok", "effects": ["write"]},
        changed_files=["a.py"],
        observed_files=["a.py"],
        unexplained=["b.py"],
        undo={"path": "a.py"},
        duration_s=0.5,
    ),
    kf.RollbackReceipt(
        call_id="c1",
        files=[
            kf.FileChange(
                path="a.py",
                before=kf.FileImage(kind="file", digest="sha256:" + "1" * 64, mode=0o644, size=3),
                after=kf.FileImage(kind="link", digest="sha256:" + "2" * 64, mode=0o777, size=4),
            ),
            kf.FileChange(path="b/c.py", before=None, after=kf.FileImage(kind="file", digest=H, mode=0o755, size=0)),
        ],
        unreadable=["d.py"],
    ),
    kf.HookPreimage(
        call_id="c1",
        files=[
            kf.FileBefore(path="a.py", before=kf.FileImage(kind="file", digest=H, mode=0o644, size=0)),
            kf.FileBefore(path="n/b.py", before=None, named="/ws/linked/b.py"),
        ],
        unreadable=["l.py: a symlink: the tool writes where it points"],
    ),
    kf.UndoReceipt(
        by="alice",
        scope="to 3",
        actions=["c1"],
        files=[kf.FileChange(path="a.py", before=None, after=kf.FileImage(kind="file", digest=H, mode=0o600, size=1))],
    ),
    k.ActionFailed(
        call_id="c1",
        tool="bash",
        error="boom",
        failure_class="timeout",
        retryable=True,
        attempt=2,
        dependency=True,
        fix="x",
    ),
    k.ApprovalRequested(
        approval_id="a1", call_id="c1", tool="bash", args_hash="h", preview="ls", reason="why", expires_at=1.5
    ),
    k.ApprovalGranted(approval_id="a1", by="alice", scope="run", rule="bash(ls)"),
    k.ApprovalDenied(approval_id="a1", by="bob", reason="no"),
    k.ApprovalExpired(approval_id="a1", outcome="deny"),
    k.ApprovalMismatch(approval_id="a1", call_id="c1"),
    k.BudgetExceeded(budget="usd", used=1.25, limit=1.0),
    kc.SensorResultEvent(
        sensor="tests",
        result="FAIL",
        required=True,
        summary="1 failed",
        diagnostics=[kc.DiagnosticData(file="t.py", line=3, message="assert", code="t::a")],
        duration_s=1.5,
        trigger="action",
        tool="pytest 8",
    ),
    kc.VerifyCompleted(trigger="completion", results={"tests": "FAIL"}, changed_files=["a"], accepted=False),
    kkr.CompletionClaimed(call_id="f1", summary="done"),
    kc.CompletionRefused(
        call_id="f1",
        reasons=["tests fail"],
        refusals=1,
        max_refusals=2,
        diagnostics=[kc.DiagnosticData(file="t.py", message="m")],
    ),
    kc.CompletionAccepted(call_id="f1", evidence=["r#3"]),
    kc.ReviewerCalled(
        model="m", max_tokens=512, prompt_tokens_est=900, capped_by="usd", input_tokens=900, cost_usd=0.01
    ),
    kc.NoOpChecked(
        call_id="f1",
        condition="tests pass",
        holds=True,
        clauses=[kc.NoOpClause(clause="tests pass", holds=True, detail="sensor tests: PASS")],
    ),
    kc.BeliefRecorded(key="tests.failing", kind="tests_failing", value=["t::a"], generation=2, epoch=1, cites=["r#3"]),
    kc.ContradictionDetected(
        key="k", severity="system_breaking", previous={"a": 1}, observed=None, explanation="e", cites=["r#1"]
    ),
    kc.DiagnosticsComputed(dimensions={"progress_rate": 0.5}, notes={"progress_rate": "n"}, through="r#4"),
    kc.ControlChanged(
        previous="NORMAL", state="CAUTIOUS", tier="warning", reason="r", dimension="d", recovery="minimal_fix"
    ),
    kc.RecoverySwitched(
        previous="direct_edit", strategy="broaden_search", reason="r", guidance="g", budget={"turns": 2.0}
    ),
    kc.StuckDetected(pattern="alternation", detail="d", count=3, cites=["r#2"]),
    kc.ReviewFindingRecorded(view="reviewer", severity="high", check="c", message="m", file="f", detail="diff"),
    kc.ReviewGate(call_id="c1", tool="bash", ok=False, risk="HIGH", reasons=["r"]),
    kc.PlanUpdated(
        tasks=[kc.TaskData(id="t1", title="x", status="ACTIVE", depends_on=["t0"], files=["a"], risk="MEDIUM")],
        rejected=["no"],
        revision=2,
        cites=["r#1"],
    ),
    kc.HypothesisRecorded(id="h1", statement="s", files=["a"], tests=["t"], acted_on=True, score=0.5, support=["x"]),
    kb.SuiteBaseline(
        command="pytest",
        runner="pytest",
        ok=True,
        exit_code=0,
        tests=[
            kb.CaseRecord(
                id="t.py::a",
                file="t.py",
                cls="C",
                function="a",
                outcome="passed",
                shape=kb.CaseShape(asserts=1, returns=0, skips=0),
            )
        ],
        deselected=["t.py::b"],
        errors=["t.py::c: boom"],
        surface={"t.py": "sha256:" + "1" * 64},
        duration_s=2.0,
    ),
    kv.PreflightCompleted(
        ok=False,
        checks=[kv.PreflightCheck(name="tests", ok=False, detail="none", fix="add", status="NEEDS_INPUT")],
    ),
    kkr.ContextSection(label="Skills", source="skills", text="- fix-tests: make failing tests pass"),
    kx.ContextCompacted(
        turn=9,
        first_seq=2,
        last_seq=40,
        method="model",
        summary="read a.py; fixed b",
        invariants="Tasks: none",
        before_tokens=900,
        after_tokens=300,
        counter="estimate",
        model="m",
        input_tokens=800,
        output_tokens=90,
        cost_usd=0.01,
    ),
    ke.EgressAttempted(
        call_id="c1",
        method="CONNECT",
        host="pypi.org",
        port=443,
        allowed=True,
        rule=ke.EgressRule.ALLOWED,
        detail="listed",
        address="151.101.0.223",
        bytes_up=10,
        bytes_down=20,
        duration_s=0.5,
    ),
    kkr.SkillsBound(
        roots=["/w/.tether/skills"],
        bound=[
            kkr.BoundSkill(
                skill=kkr.SkillData(
                    name="s", description="d", path="/w/s", root="/w", source="workspace", digest="x", files=["a"]
                ),
                score=1.5,
                why="BM25 1.50 on: d",
            )
        ],
        ranked=[kkr.SkillScore(name="s", score=1.5, matched=["d"])],
        problems=[kkr.SkillProblem(file="/w/t/SKILL.md", path="$.name", found="'a/b'", expected="a slug")],
    ),
    kkr.MemoryRecalled(
        facts=[kkr.FactData(id="f-1", text="t", run_id="r", seq=0, source="task", stated_at="2026")], store="m.db"
    ),
    kkr.MemoryRemembered(facts=[], store="m.db"),
    kk.PlanCarried(from_run="r", from_seq=4, tasks=[kk.CarriedTask(id="t1", status="COMPLETE", files=["a.py"])]),
    kg.SessionOpened(framework="langgraph", session="thread-1", by="alice"),
    kg.SessionEnded(
        how="budget", reason="budgets.tool_calls exhausted", by="tether", budget="tool_calls", used=3, limit=3
    ),
    km.McpStarted(
        server="notes",
        transport="stdio",
        sandbox="bwrap",
        offered=["mcp__notes__search"],
        not_listed=["mcp__notes__gone"],
        undeclared=["delete_everything"],
        refused={"mcp__notes__bad": "its input schema is not a valid JSON Schema"},
    ),
    km.McpFailed(server="web", transport="streamable-http", error="did not start within 30s"),
    kd.DelegateStarted(
        call_id="call_0_0",
        child_run="20260101-000000-abcdef",
        task="fix median()",
        tools=["read_file", "edit_file", "finish"],
        write=["src/stats/**"],
        network=[],
        budgets={"usd": 1.0, "turns": 15},
        contract_hash="sha256:" + "0" * 64,
    ),
    kd.DelegateFinished(
        call_id="call_0_0",
        child_run="20260101-000000-abcdef",
        status=RunStatus.COMPLETE,
        summary="fixed median",
        evidence=["20260101-000000-abcdef#31"],
        spend={"usd": 0.01, "tokens": 900, "turns": 2, "tool_calls": 3},
    ),
    kh.HookReceived(agent="claude-code", event="PreToolUse", session_id="s-1", cwd="/w", detail={"tool_name": "Bash"}),
    kh.HookStop(blocked=True, accepted=False, reasons=["required sensor tests FAILED"], blocks_in_row=1),
    kh.HookBypassed(
        call_id="toolu_1",
        tool="bash",
        verdict="DENY",
        rule="coding:deny-rm-root",
        reason="rm of /",
        event="PostToolUse",
    ),
    kh.HookInputChanged(
        call_id="toolu_2",
        ran_as="toolu_2~1a2b3c",
        tool="bash",
        verdict="DENY",
        rule="coding:deny-rm-root",
        reason="rm of /",
        event="PostToolUse",
    ),
    ks.ScheduleAdded(
        name="nightly",
        cron="0 3 * * *",
        envelope_path="/w/envelope.yaml",
        envelope_hash=H,
        contract_hash=H,
        task="tidy the imports",
        workspace="/w",
        budget={"usd": 0.5, "turns": 10},
        daily_usd=2.0,
        missed="once",
        grace_s=60,
        max_failures=2,
        noop_if="ruff check .",
        added_at="2026-12-01T03:00:00+00:00",
        by="ana",
    ),
    ks.SchedulePaused(at="2026-12-01T03:00:00+00:00", by="scheduler", reason="3 consecutive failed firings"),
    ks.ScheduleResumed(at="2026-12-01T03:00:00+00:00", by="ana"),
    ks.ScheduleRemoved(at="2026-12-01T03:00:00+00:00", by="ana"),
    ks.TriggerFired(
        trigger="ab" * 16,
        fire_at="2026-12-01T03:00:00+00:00",
        fired_at="2026-12-01T03:00:00+00:00",
        run_id="nightly-20261201T0300Z-abababab",
        catch_up=True,
    ),
    ks.TriggerMissed(
        first="2026-12-01T03:00:00+00:00",
        last="2026-12-01T03:00:00+00:00",
        count=1,
        policy="skip",
        seen_at="2026-12-01T03:00:00+00:00",
    ),
    ks.EligibilityChecked(
        trigger="ab" * 16, command="ruff check .", verdict="nothing_to_do", exit_code=0, backend="bwrap", output="ok"
    ),
    ks.FiringFinished(
        trigger="ab" * 16,
        run_id="nightly-20261201T0300Z-abababab",
        status=RunStatus.NO_OP,
        spend_usd=0.01,
        finished_at="2026-12-01T03:00:00+00:00",
    ),
    ks.ScheduleAlert(reason="3 consecutive failed firings", failures=3, trigger="ab" * 16),
    ks.ScheduleFiring(schedule="nightly", trigger="ab" * 16, fire_at="2026-12-01T03:00:00+00:00", budget={"usd": 0.5}),
    kgr.GraphStarted(
        name="g",
        graph_path="/g.yaml",
        graph={"name": "g", "envelope": "/e.yaml", "nodes": [{"id": "a", "envelope": "/e.yaml", "task": "t"}]},
        contracts={"a": H},
        lease_s=30,
        sandbox="local",
        strict=True,
        warnings=["w"],
        by="me",
    ),
    kgr.NodeLeased(node="a", attempt=1, phase="compensate", worker="h:1:x", expires_at=1.5),
    kgr.NodeRenewed(node="a", attempt=1, worker="h:1:x", expires_at=2.5),
    kgr.NodeStarted(node="a", attempt=1, run_id="r", graph_run="g", resumed=True),
    kgr.NodeCompleted(node="a", attempt=1, run_id="r", status="COMPLETE", result="ok", worker="h:1:x"),
    kgr.NodeFailed(node="a", attempt=2, run_id=None, status="NEEDS_INPUT", reason="why", worker="h:1:x"),
    kgr.NodeWaiting(node="a", attempt=1, run_id="r", approvals=["ap"], worker="h:1:x"),
    kgr.NodeCompensated(
        node="a",
        step=1,
        attempt=3,
        command="echo",
        verdict="ALLOW",
        rule="r",
        ran=True,
        ok=False,
        exit_code=1,
        output="o",
    ),
    kgr.GraphNode(graph_run="g", node="a", attempt=1),
    kgr.GraphFinished(status="NEEDS_INPUT", nodes={"a": "failed"}, reason="node a"),
    kdi.RunHosted(
        address="127.0.0.1:7233", namespace="default", workflow_id="tether-run-r", task_queue="tether", worker="q"
    ),
]


def test_every_registered_kind_has_a_sample_and_knows_its_kind() -> None:
    assert sorted(type(s).KIND for s in SAMPLES) == sorted(REGISTRY)
    for kind, model in REGISTRY.items():
        assert kind == model.KIND


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: type(s).KIND)
def test_every_kind_round_trips_through_the_log(tmp_path: Path, sample: Payload) -> None:
    """payload object -> append -> read back -> the same object; the stored JSON is the dict form's, byte for byte."""
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t")
    appended = store.append(run, sample)
    store.append(run, type(sample).KIND, json.loads(json.dumps(sample.model_dump(mode="json"))))
    assert appended.kind == type(sample).KIND and appended.data == sample
    read, read_dict = store.events(run)
    assert read.data == parse(read.kind, read.payload)  # the JSON text validates as its dict does
    assert read.data == sample and type(read.data) is type(sample)
    assert read_dict.data == sample
    assert canonical_json(read.payload) == canonical_json(read_dict.payload)
    stored = [r[0] for r in store._conn.execute("SELECT payload FROM events WHERE run_id=? ORDER BY seq", (run,))]
    assert stored[0] == stored[1] == canonical_json(sample.model_dump(mode="json"))
    assert store.verify(run) == 2


def test_a_payload_built_without_validation_is_refused(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t")
    with pytest.raises(InvalidPayload, match="turn"):
        store.append(run, kkr.ModelRequested.model_construct(turn="first", model="m"))

    class Unregistered(Payload):
        x: int = 0

    with pytest.raises(UnknownEventKind, match="Unregistered"):
        store.append(run, Unregistered())
    with pytest.raises(TypeError, match="registered twice"):
        register("run.finished")(Unregistered)
    assert store.verify(run) == 0 and store.events(run) == []


def test_the_kind_modules_do_not_import_each_other() -> None:
    """The registry lives in events/payload.py; a kind module imports it and nothing of its siblings, but for
    ``kinds``, ``kinds_control``, ``kinds_guard`` and ``kinds_hooks``, which name kinds that ``kinds_calls``
    defines (and ``kinds_calls`` imports only the registry)."""
    root = Path(k.__file__).parent
    for name in (
        "kinds",
        "kinds_calls",
        "kinds_baseline",
        "kinds_context",
        "kinds_control",
        "kinds_delegate",
        "kinds_egress",
        "kinds_files",
        "kinds_guard",
        "kinds_hooks",
        "kinds_kernel",
        "kinds_knowledge",
        "kinds_mcp",
        "kinds_schedule",
        "kinds_verify",
        "payload",
    ):
        tree = ast.parse((root / f"{name}.py").read_text())
        imported = {
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 1
        }
        names_calls = ("kinds", "kinds_control", "kinds_guard", "kinds_hooks")
        allowed = {"payload", "kinds_calls"} if name in names_calls else {"payload"}
        assert imported <= (allowed if name != "payload" else set()), (name, imported)


# ---- an old log ---------------------------------------------------------------------------------


def _state_json(state: RunState) -> Any:
    """The folded state's own fields (not the lookup indexes kept beside them: ``compare=False``)."""
    indexes = {f.name for f in dataclasses.fields(state) if not f.compare}
    own = {k: v for k, v in dataclasses.asdict(state).items() if k not in indexes}
    return json.loads(json.dumps(own, default=str, sort_keys=True))


def test_a_log_written_with_dict_payloads_still_verifies_and_folds_the_same(tmp_path: Path) -> None:
    """``tests/data/old_log``: written by the code before payload objects (see make.py), with what it folded to."""
    shutil.copy(OLD / "run.db", tmp_path / "run.db")
    expected = json.loads((OLD / "expected.json").read_text())
    store = EventStore.open(tmp_path / "run.db", readonly=True)
    run = expected["run_id"]
    assert store.verify(run) == expected["events"]
    events = store.events(run)
    assert sorted({e.kind for e in events}) == expected["kinds"]
    state = _state_json(RunState.from_events(events))
    # fields added since (to the state and to its actions) have their own tests
    state["actions"] = {
        cid: {name: action[name] for name in expected["state"]["actions"][cid]}
        for cid, action in state["actions"].items()
    }
    # since issue 18 the fold keeps a completed call's result without its data (state.kept_result), since issue 15 no
    # output, and a file write that completed well without its text (state.kept_args)
    for action in expected["state"]["actions"].values():
        action["result"] = kept_result(action["tool"], action["result"])
        if action["status"] == ActionStatus.COMPLETED.value and action["ok"]:
            action["args"] = kept_args(action["tool"], action["args"])
    assert {name: state[name] for name in expected["state"]} == expected["state"]
    env = Envelope.model_validate(json.loads((OLD / "expected.json").read_text())["state"]["envelope"])
    got = {}
    for n in range(1, len(events) + 1):
        out = observe(events[:n], env)
        if out:
            got[str(n)] = [
                [item.KIND, item.model_dump(mode="json")] if isinstance(item, Payload) else list(item) for item in out
            ]
    assert got == expected["observe"]
    # every stored payload reads back as its model with the same values (kinds gained defaulted fields since)
    for e in events:
        dumped = e.data.model_dump(mode="json")
        assert {name: dumped[name] for name in e.payload} == e.payload, e.id


# ---- a rewritten log that keeps its chain -------------------------------------------------------


def _forge(db: Path, run: str, kind: str, payload: dict[str, Any]) -> int:
    """Append a row by hand with a correct chain hash and head: what a full rewrite leaves behind."""
    conn = sqlite3.connect(db)
    seq, prev = conn.execute("SELECT head_seq, head_hash FROM runs WHERE run_id=?", (run,)).fetchone()
    seq += 1
    ts, body = "2026-01-01T00:00:00.000000+00:00", canonical_json(payload)
    h = event_hash(prev, run, seq, ts, kind, body)
    conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?)", (run, seq, ts, kind, body, bytes.fromhex(h)))
    conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq, h, run))
    conn.commit()
    conn.close()
    return int(seq)


def _started(db: Path) -> tuple[EventStore, str]:
    store = EventStore.open(db)
    run = store.create_run("t", [k.RunStarted(task="t")])
    store.append(run, k.ActionProposed(call_id="c1", tool="bash", args={}, args_hash="h", turn=1))
    return store, run


@pytest.mark.parametrize(
    ("kind", "payload", "reason"),
    [
        ("model.guessed", {"turn": 1}, "unknown event kind 'model.guessed'"),
        ("action.completed", {"call_id": "c1", "tool": "bash", "ok": "maybe"}, "field ok: Input should be"),
        ("action.completed", {"call_id": "c1", "tool": "bash"}, "field ok: Field required"),
        ("action.completed", {"call_id": "c1", "tool": "bash", "ok": True, "sneaky": 1}, "field sneaky: Extra"),
        ("model.responded", {"turn": 1, "model": "m", "termination": "x", "tool_calls": [{"id": 1}]}, "tool_calls.0"),
        ("run.finished", {"status": ["COMPLETE"]}, "field status"),
        ("approval.granted", {"approval_id": "a1"}, "field by: Field required"),
    ],
)
def test_a_consistent_rewrite_with_a_bad_payload_fails_closed(
    tmp_path: Path, kind: str, payload: dict[str, Any], reason: str
) -> None:
    """The chain verifies (it was recomputed), but the fold refuses the row, naming the seq and the field."""
    db = tmp_path / "t.db"
    store, run = _started(db)
    seq = _forge(db, run, kind, payload)
    assert store.verify(run) == seq + 1
    events = store.events(run)
    with pytest.raises(LogCorrupt, match=f"event seq {seq}: .*{reason}") as caught:
        RunState.from_events(events)
    assert caught.value.seq == seq
    with pytest.raises(LogCorrupt, match=f"event seq {seq}"):
        _ = events[-1].data
    cli = [sys.executable, "-m", "tether.cli.main"]
    proc = subprocess.run([*cli, "show", run, "--db", str(db)], capture_output=True, text=True)
    assert proc.returncode != 0 and f"event seq {seq}" in proc.stderr, proc.stderr
    # `tether runs` folds only the kinds a status depends on: a bad payload of one of those is named there,
    # any other by every reader of the whole log (show and resume, above)
    listed = subprocess.run([*cli, "runs", "--db", str(db), "--json"], capture_output=True, text=True)
    status = json.loads(listed.stdout)[0]["status"]
    assert status == (f"CORRUPT at seq {seq}" if kind in STATUS_KINDS else "RUNNING"), listed.stdout


def test_an_event_of_a_payload_holds_its_json_and_the_object() -> None:
    data = k.RunFinished(status="COMPLETE", evidence=["r#1"])
    e = Event.of("r", 4, "ts", data)
    assert (e.kind, e.seq, e.data) == ("run.finished", 4, data)
    assert e.payload == data.model_dump(mode="json") and e.payload["evidence"] == ["r#1"]
    assert e.payload is e.payload  # dumped once, when first read (the control layer's pending events mostly never are)
    assert Event.of("r", 4, "ts", data) == e and e.to_dict()["payload"] == {**e.payload}
