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


def build_messages(events: Sequence[Event], env: Envelope, plan: dict[str, Any] | None = None) -> list[Message]:
    messages = [Message("system", system_prompt(env, plan))]
    results: dict[str, str] = {}
    order: list[str] = []
    pending_notes: list[str] = []

    def flush() -> None:
        for call_id in order:
            messages.append(
                Message("tool", results[call_id] if call_id in results else _missing(), tool_call_id=call_id)
            )
        order.clear()
        if pending_notes:
            messages.append(Message("user", "\n\n".join(pending_notes)))
            pending_notes.clear()

    for e in events:
        p = e.payload
        if e.kind == "run.started":
            messages.append(Message("user", p["task"]))
        elif e.kind == "model.responded":
            flush()
            calls = tuple(ToolCall(c["id"], c["name"], c["args"]) for c in p["tool_calls"])
            messages.append(Message("assistant", p["text"], tool_calls=calls))
            order.extend(c.id for c in calls)
            if not calls:
                pending_notes.append(_no_action_note(p["termination"]))
        elif e.kind == "action.invalid":
            results[p["call_id"]] = _json({"error": "invalid_arguments", "detail": p["error"]})
        elif e.kind == "action.decided" and p["verdict"] == "DENY":
            results[p["call_id"]] = _json(
                {
                    "denied": True,
                    "rule": p["deciding_rule"],
                    "reason": p["reason"],
                    "advice": "this call was not run; do not retry it as-is",
                }
            )
        elif e.kind == "approval.requested":
            results[p["call_id"]] = _json({"pending_approval": p["approval_id"], "reason": p["reason"]})
        elif e.kind == "approval.denied":
            call = _call_for(events, p["approval_id"])
            results[call] = _json(
                {
                    "denied": True,
                    "by": p["by"],
                    "reason": p["reason"],
                    "advice": "a human declined this call; do not retry it as-is",
                }
            )
        elif e.kind == "approval.expired":
            call = _call_for(events, p["approval_id"])
            results[call] = _json({"denied": True, "reason": f"approval expired ({p['outcome']})"})
        elif e.kind == "action.completed":
            results[p["call_id"]] = str(p["result"].get("content", ""))[:TOOL_RESULT_CHARS]
        elif e.kind == "action.failed":
            results[p["call_id"]] = _json({"error": p["failure_class"], "detail": p["error"]})
        elif e.kind == "completion.refused":
            diags = [f"{d['file']}:{d.get('line') or '?'}: {d['message']}" for d in p.get("diagnostics", [])]
            pending_notes.append(
                "Completion refused by verification:\n- "
                + "\n- ".join(p["reasons"])
                + ("\nDiagnostics:\n" + "\n".join(diags[:20]) if diags else "")
            )
        elif e.kind == "recovery.switched":
            pending_notes.append(f"Recovery strategy is now {p['strategy']}: {p['guidance']}")
        elif e.kind == "review.finding" and p["severity"] != "low":
            pending_notes.append(f"Reviewer ({p['view']}) found: {p['message']}")
        elif e.kind == "control.changed":
            note = CONTROL[p["state"]]
            pending_notes.append(f"Control state is now {p['state']} ({p['tier']}): {p['reason']}. {note}")
        elif e.kind == "stuck.detected":
            pending_notes.append(f"You look stuck ({p['pattern']}, {p['count']} times): {p['detail']}")
        elif e.kind == "contradiction.detected" and p["severity"] in ("high", "system_breaking"):
            pending_notes.append(
                f"Contradiction about {p['key']} ({p['severity']}): {p['explanation']}. Re-observe it before acting."
            )
    flush()
    return messages


def _call_for(events: Sequence[Event], approval_id: str) -> str:
    for e in events:
        if e.kind == "approval.requested" and e.payload["approval_id"] == approval_id:
            return str(e.payload["call_id"])
    return ""


def _no_action_note(termination: str) -> str:
    if termination == "truncated":
        return "Your last reply was cut off at the token limit. Continue, more briefly."
    return "No tool call was made. Use a tool to make progress, or call `finish` with a summary when done."


def _missing() -> str:
    return _json({"error": "not_executed", "detail": "the run stopped before this call ran"})


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True)
