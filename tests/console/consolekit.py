"""Console test helpers: runs written through the real store with typed payloads, as the kernel logs them
(also used by benchmarks/console.py)."""

from __future__ import annotations

from typing import Any

from tether.canonical import content_hash
from tether.events.kinds import (
    ActionCompleted,
    ActionDecided,
    ActionProposed,
    ActionStarted,
    ApprovalRequested,
    ModelResponded,
    RunForked,
    RunStarted,
    ToolCallData,
)
from tether.events.kinds_control import BeliefRecorded, ControlChanged, DiagnosticsComputed, SensorResultEvent
from tether.events.kinds_kernel import (
    ModelRequested,
)
from tether.events.payload import Payload
from tether.events.store import EventStore

XSS = '<script>window.__pwned = 1</script>"><img src=x onerror="window.__pwned = 2">'


def turn_events(turn: int, command: str, output: str, *, decided: bool = True) -> list[Payload]:
    """One governed turn as the kernel logs it: the model's call, the verdict, the receipt, what control saw."""
    cid = f"c{turn}"
    args = {"command": command}
    events: list[Payload] = [
        ModelRequested(turn=turn, model="fn"),
        ModelResponded(
            turn=turn,
            model="fn",
            text=f"turn {turn}: {command}",
            termination="tool_request",
            tool_calls=[ToolCallData(id=cid, name="bash", args=args)],
            input_tokens=100,
            output_tokens=20,
            cost_usd=0.001,
        ),
        ActionProposed(call_id=cid, tool="bash", args=args, args_hash=content_hash(args), turn=turn),
    ]
    if not decided:
        return events
    return [
        *events,
        ActionDecided(call_id=cid, verdict="ALLOW", deciding_rule="coding:allow-read", reason="reads only"),
        ActionStarted(call_id=cid, tool="bash", args_hash=content_hash(args)),
        ActionCompleted(
            call_id=cid, tool="bash", ok=True, duration_s=0.01, changed_files=["src/a.py"],
            result={"ok": True, "content": output, "data": {"exit_code": 0, "sandbox": "local"}},
        ),
        BeliefRecorded(key="tests.failing", kind="tests_failing", value=turn % 3, generation=turn, cites=[f"r#{turn}"]),
        DiagnosticsComputed(dimensions={"progress_rate": 1 / turn, "evidence_support": 0.9}, through=f"r#{turn}"),
        SensorResultEvent(sensor="lint", result="PASS" if turn % 2 else "FAIL", summary="ruff", required=True),
    ]  # fmt: skip


def write_run(store: EventStore, task: str, turns: int, *, output: str = "ok", parent: str | None = None) -> str:
    """A run of ``turns`` governed turns; with ``parent``, a fork of that run at its head (``run.forked``)."""
    events: list[Payload] = []
    for t in range(1, turns + 1):
        events += turn_events(t, f"echo step {t}", output)
        if t == 2:
            events.append(ControlChanged(previous="NORMAL", state="CAUTIOUS", tier="warning", reason="slow"))
    if parent is None:
        run_id = store.create_run(task, [RunStarted(task=task, model="fn", sandbox="local", workspace="/work/space")])
    else:
        seq, hash_ = store.head(parent)
        forked = RunForked(parent_run=parent, at_seq=seq, parent_hash=hash_, workspace="/work/fork")
        run_id = store.create_fork(task, forked)
        events = []  # a fork goes on with its own turns, numbered after its parent's
        for t in range(1, turns + 1):
            events += turn_events(100 + t, f"echo fork step {t}", output)
    for i in range(0, len(events), 500):
        store.append_many(run_id, events[i : i + 500], durable=False)
    return run_id


def ask(store: EventStore, run_id: str, turn: int, command: str, preview: str) -> str:
    """A turn whose call the gate sent to a human: the run waits on ``ap-<turn>``."""
    store.append_many(run_id, turn_events(turn, command, "", decided=False))
    args = {"command": command}
    store.append_many(
        run_id,
        [
            ActionDecided(call_id=f"c{turn}", verdict="ASK", deciding_rule="coding:ask-push", reason="remote"),
            ApprovalRequested(
                approval_id=f"ap-{turn}", call_id=f"c{turn}", tool="bash", args_hash=content_hash(args),
                preview=preview, reason="talks to a remote", expires_at=4e9,
            ),
        ],
    )  # fmt: skip
    return f"ap-{turn}"


def follow(page: Any, target: Any) -> None:
    """Click a link or a form's button and wait until the page it leads to has loaded. A bare ``click``
    returns once the navigation starts, so a ``count()`` right after it can read the old page or a new
    one still parsing (CI saw 0 of 11 layers that way)."""
    with page.expect_navigation():
        page.click(target) if isinstance(target, str) else target.click()
