"""Context compilation: the model's messages, rebuilt from the log every turn.

Nothing the model sees lives only in memory, so a resumed run shows the model
exactly what it would have seen. Tool results are the receipts' model-facing
content; denials and invalid arguments are structured results, never silence;
refused completions and recovery guidance are host messages at their place in
the log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.models.base import Message, ToolCall

TOOL_RESULT_CHARS = 12_000
CONTROL = {
    "NORMAL": "Work as usual.",
    "CAUTIOUS": "Actions beyond reading now need a human's approval.",
    "BLOCKED": "Only read-only actions run until the cause is resolved.",
    "HUMAN_REQUIRED": "A human must decide how to continue.",
}


def system_prompt(env: Envelope, plan: dict[str, Any] | None) -> str:
    parts = [env.agent.instructions.strip() or "You are a careful agent working inside a governed workspace."]
    if plan:
        parts.append("Intent plan:\n" + json.dumps(plan, indent=2))
    parts.append(
        "Rules of this harness: every tool call is checked against a policy and may be denied or need a human's "
        "approval; denied calls must not be retried as-is. Calling `finish` is a claim, not completion: the host "
        "runs verification and only passing evidence completes the task."
    )
    return "\n\n".join(parts)


class Transcript:
    """The model's view of the run, built incrementally: feed it events in log order.

    Events before the latest model response are settled; the latest turn's tool results
    and host notes stay open until the next response, so an answer that arrives later
    (an approval, a denial) lands in the right place.
    """

    def __init__(self, env: Envelope, plan: dict[str, Any] | None = None) -> None:
        self.done: list[Message] = [Message("system", system_prompt(env, plan))]
        self.results: dict[str, str] = {}
        self.order: list[str] = []
        self.notes: list[str] = []
        self.approval_calls: dict[str, str] = {}
        self.fed = 0

    def feed(self, events: Sequence[Event]) -> Transcript:
        """Take in ``events[self.fed:]`` (the caller passes the whole, growing log)."""
        for e in events[self.fed :]:
            self._take(e)
        self.fed = len(events)
        return self

    def messages(self) -> list[Message]:
        return [*self.done, *self._tail()]

    def _tail(self) -> list[Message]:
        out = [
            Message("tool", self.results[c] if c in self.results else _missing(), tool_call_id=c) for c in self.order
        ]
        if self.notes:
            out.append(Message("user", "\n\n".join(self.notes)))
        return out

    def _take(self, e: Event) -> None:
        p = e.payload
        if e.kind == "run.started":
            self.done.append(Message("user", p["task"]))
        elif e.kind == "model.responded":
            self.done += self._tail()
            self.order.clear()
            self.notes.clear()
            calls = tuple(ToolCall(c["id"], c["name"], c["args"]) for c in p["tool_calls"])
            self.done.append(Message("assistant", p["text"], tool_calls=calls))
            self.order.extend(c.id for c in calls)
            note = None if calls else _no_action_note(p["termination"])
            if note is not None:
                self.notes.append(note)
        elif e.kind == "approval.requested":
            self.approval_calls[p["approval_id"]] = p["call_id"]
            self.results[p["call_id"]] = _json({"pending_approval": p["approval_id"], "reason": p["reason"]})
        elif e.kind in ("approval.denied", "approval.expired"):
            self.results[self.approval_calls.get(p["approval_id"], "")] = _approval_result(e.kind, p)
        elif e.kind == "run.continued":
            for call_id in p["resolved"]:
                detail = "this call started but never completed before the run stopped; a human checked on it"
                self.results[call_id] = _json({"error": "outcome_unknown", "detail": detail})
            if p.get("note"):
                self.notes.append(
                    f"A human ({p['by']}) continued the run after it stopped {p['from_status']}: {p['note']}"
                )
        elif (result := _call_result(e.kind, p)) is not None:
            self.results[p["call_id"]] = result
        elif (note := _host_note(e.kind, p)) is not None:
            self.notes.append(note)


def _call_result(kind: str, p: dict[str, Any]) -> str | None:
    """What the model is shown as the result of the call ``p["call_id"]`` names, for the events that settle it."""
    if kind == "action.invalid":
        return _json({"error": "invalid_arguments", "detail": p["error"]})
    if kind == "action.decided" and p["verdict"] == "DENY":
        advice = "this call was not run; do not retry it as-is"
        return _json({"denied": True, "rule": p["deciding_rule"], "reason": p["reason"], "advice": advice})
    if kind == "action.completed":
        return str(p["result"].get("content", ""))[:TOOL_RESULT_CHARS]
    if kind == "action.failed":
        return _json({"error": p["failure_class"], "detail": p["error"]})
    return None


def _approval_result(kind: str, p: dict[str, Any]) -> str:
    """The result of a call a human declined, or whose approval expired."""
    if kind == "approval.denied":
        advice = "a human declined this call; do not retry it as-is"
        return _json({"denied": True, "by": p["by"], "reason": p["reason"], "advice": advice})
    return _json({"denied": True, "reason": f"approval expired ({p['outcome']})"})


def _host_note(kind: str, p: dict[str, Any]) -> str | None:
    """A host message for the next turn: what verification, the reviewer and the control layer said."""
    if kind == "completion.refused":
        diags = [f"{d['file']}:{d.get('line') or '?'}: {d['message']}" for d in p.get("diagnostics", [])]
        return (
            "Completion refused by verification:\n- "
            + "\n- ".join(p["reasons"])
            + ("\nDiagnostics:\n" + "\n".join(diags[:20]) if diags else "")
        )
    if kind == "recovery.switched":
        return f"Recovery strategy is now {p['strategy']}: {p['guidance']}"
    if kind == "review.finding" and p["severity"] != "low":
        return f"Reviewer ({p['view']}) found: {p['message']}"
    if kind == "control.changed":
        note = CONTROL[p["state"]]
        return f"Control state is now {p['state']} ({p['tier']}): {p['reason']}. {note}"
    if kind == "model.truncated":
        calls = len(p.get("not_run", []))
        ran = f"; its {calls} tool call(s) were not run" if calls else ""
        return f"Your last reply was cut off at the token limit{ran}. Continue, more briefly."
    if kind == "stuck.detected":
        return f"You look stuck ({p['pattern']}, {p['count']} times): {p['detail']}"
    if kind == "contradiction.detected" and p["severity"] in ("high", "system_breaking"):
        return f"Contradiction about {p['key']} ({p['severity']}): {p['explanation']}. Re-observe it before acting."
    return None


def build_messages(events: Sequence[Event], env: Envelope, plan: dict[str, Any] | None = None) -> list[Message]:
    return Transcript(env, plan).feed(events).messages()


def _no_action_note(termination: str) -> str | None:
    if termination == "truncated":
        return None  # the ``model.truncated`` event that follows says so
    return "No tool call was made. Use a tool to make progress, or call `finish` with a summary when done."


def _missing() -> str:
    return _json({"error": "not_executed", "detail": "the run stopped before this call ran"})


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True)
