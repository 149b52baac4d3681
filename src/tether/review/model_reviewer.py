"""The optional model-based reviewer: a second model reads the final diff and the evidence.

It runs after the deterministic reviewer, only when ``verification.reviewer_model`` is set,
and answers through one tool, ``report_findings``, so its verdict is data, not prose. It can
only add findings (a reason to refuse), never remove the deterministic ones. Fail closed: a
reviewer that is configured but unreachable, or that answers without the tool, is itself a
blocking finding.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, get_args

from tether.envelope.schema import Envelope
from tether.errors import ProviderError
from tether.events.kinds_control import SensorResultEvent
from tether.events.store import Event
from tether.models.base import Message, Model, ToolSpec, Usage
from tether.verify.changes import WorkspaceDiff

from .reviewer import FindingSeverity, ReviewFinding, View

MAX_DIFF_CHARS = 30_000
CHECK = "model_reviewer"

REPORT = ToolSpec(
    "report_findings",
    "Report every problem with the change; an empty list means it does what the plan asked, safely.",
    {
        "type": "object",
        "properties": {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "view": {"enum": list(get_args(View))},
                        "severity": {"enum": list(get_args(FindingSeverity))},
                        "message": {"type": "string"},
                        "file": {"type": "string"},
                    },
                    "required": ["view", "severity", "message"],
                },
            }
        },
        "required": ["findings"],
    },
)

SYSTEM = (
    "You review a change made by a coding agent, independently of it. Read the plan, the diff and the "
    "verification evidence. Report, through report_findings: whether the change does what the plan asked "
    "(view implementer), gaps and regressions (view reviewer), and anything adversarial — files outside the "
    "plan's scope, tests weakened or skipped, secrets, unrelated churn (view adversarial). Severity high or "
    "medium blocks completion; low is advice."
)


def diff_text(diff: WorkspaceDiff) -> str:
    parts = []
    for f in diff.files:
        parts.append(f"--- {f.path} ({f.status})")
        parts += [f"-{n}: {line}" for n, line in f.removed]
        parts += [f"+{n}: {line}" for n, line in f.added]
    text = "\n".join(parts) or "(no changes)"
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + "\n… (diff truncated)"


def evidence_text(events: Sequence[Event]) -> str:
    results = (e.data_as(SensorResultEvent) for e in events if e.kind == SensorResultEvent.KIND)
    lines = [f"{r.sensor}: {r.result} — {r.summary}" for r in results]
    return "\n".join(lines[-12:]) or "(no sensor results)"


def review_messages(
    envelope: Envelope, plan: dict[str, Any] | None, diff: WorkspaceDiff, events: Sequence[Event]
) -> list[Message]:
    """What the reviewer is shown: the plan, the write set, the diff and the verification evidence."""
    prompt = (
        f"Plan:\n{json.dumps(plan or {}, indent=2)}\n\nWrite set: {envelope.environment.filesystem}\n\n"
        f"Diff ({diff.note}):\n{diff_text(diff)}\n\nVerification evidence:\n{evidence_text(events)}"
    )
    return [Message("system", SYSTEM), Message("user", prompt)]


def model_review(model: Model, messages: Sequence[Message], max_tokens: int) -> tuple[list[ReviewFinding], Usage]:
    """Ask the reviewer (``max_tokens`` already capped by the host's budgets): its findings, and what it used."""
    try:
        response = model.complete(messages, [REPORT], max_tokens=max_tokens)
    except ProviderError as e:
        return [ReviewFinding("reviewer", "medium", f"the configured model reviewer failed: {e}", check=CHECK)], Usage()
    call = next((c for c in response.tool_calls if c.name == REPORT.name), None)
    if call is None or not isinstance(call.args.get("findings"), list):
        return [
            ReviewFinding("reviewer", "medium", "the model reviewer gave no structured verdict", check=CHECK)
        ], response.usage
    return [_finding(item) for item in call.args["findings"]], response.usage


def _finding(item: Any) -> ReviewFinding:
    if not isinstance(item, dict):
        return ReviewFinding(
            "reviewer", "medium", f"unreadable finding from the model reviewer: {item!r}"[:300], check=CHECK
        )
    view: View = item["view"] if item.get("view") in get_args(View) else "reviewer"
    severity: FindingSeverity = item["severity"] if item.get("severity") in get_args(FindingSeverity) else "medium"
    file = item.get("file") if isinstance(item.get("file"), str) else None
    return ReviewFinding(view, severity, str(item.get("message", ""))[:500], file, check=CHECK)
