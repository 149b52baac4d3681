"""The reviewer pass over the final diff and the evidence, before a completion is accepted.

Deterministic checks, by view:

- implementer: plan tasks not COMPLETE; no change delivered when the envelope has no no-op outcome.
- reviewer: tests that fail now but did not at the first observation (regressions); changed files
  not verified since their last change; the acted-on hypothesis blames files the diff never touches.
- adversarial: files outside the write set or the plan's scope; churn over ``budgets.churn_pct``;
  added secrets; test files changed while no source changed, or assertions removed from tests
  (tests edited to pass); skip/xfail markers added.

Medium and high findings block the completion (they reopen the task); low ones are information.
No model is consulted: an optional model-based reviewer is not implemented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pathspec

from tether.control.beliefs import BeliefView
from tether.control.hypotheses import acted_on
from tether.control.planning import fold_plan
from tether.control.receipts import view
from tether.control.risk import is_test_path
from tether.envelope.schema import Envelope
from tether.events.kinds_control import BeliefRecorded, ReviewFindingRecorded, VerifyCompleted
from tether.events.store import Event
from tether.verify.changes import FileDiff, WorkspaceDiff
from tether.verify.sensors import policy_problems

View = Literal["implementer", "reviewer", "adversarial"]
FindingSeverity = Literal["low", "medium", "high"]

_SKIP = re.compile(r"pytest\.mark\.(skip|skipif|xfail)\b|pytest\.(skip|xfail)\(|unittest\.skip|@skip\b|\.skipTest\(")
_ASSERT = re.compile(r"^\s*(assert\b|self\.assert\w*\(|pytest\.raises\()")


@dataclass(frozen=True)
class ReviewFinding:
    view: View
    severity: FindingSeverity
    message: str
    file: str | None = None
    check: str = ""
    detail: str = ""

    def to_payload(self) -> ReviewFindingRecorded:
        return ReviewFindingRecorded(
            view=self.view,
            severity=self.severity,
            check=self.check,
            message=self.message,
            file=self.file,
            detail=self.detail,
        )


def blocking(findings: Sequence[ReviewFinding]) -> list[ReviewFinding]:
    return [f for f in findings if f.severity in ("medium", "high")]


def _changed_files(events: Sequence[Event]) -> list[str]:
    return sorted({f for a in view(events).actions if a.ok for f in a.changed_files})


def adversarial(envelope: Envelope, diff: WorkspaceDiff, events: Sequence[Event]) -> list[ReviewFinding]:
    """What an adversary would have done to pass: a policy broken, a file changed outside the plan's tasks,
    tests edited with no source changed, assertions removed, a skip or xfail added."""
    tests = [f for f in diff.files if is_test_path(f.path)]
    return [
        *_policy_broken(envelope, diff, events),
        *_outside_plan(envelope, diff, events),
        *_tests_only(diff, tests),
        *_assertions_removed(tests),
        *_skips_added(diff),
    ]


def _policy_broken(envelope: Envelope, diff: WorkspaceDiff, events: Sequence[Event]) -> list[ReviewFinding]:
    sev: FindingSeverity = "high"
    return [
        ReviewFinding("adversarial", sev, d.message, d.file or None, d.code or "policy")
        for d in policy_problems(envelope, diff, _changed_files(events))
    ]


def _outside_plan(envelope: Envelope, diff: WorkspaceDiff, events: Sequence[Event]) -> list[ReviewFinding]:
    """Each changed path that no plan task's ``files`` covers (nothing when no task names files)."""
    plan = fold_plan(events, envelope)
    scopes = [g for t in plan.tasks.values() for g in t.files]
    if not scopes:
        return []
    spec = pathspec.PathSpec.from_lines("gitignore", scopes)
    return [
        ReviewFinding("adversarial", "medium", "changed outside every plan task's files", p, "plan_scope")
        for p in diff.paths
        if not spec.match_file(p)
    ]


def _tests_only(diff: WorkspaceDiff, tests: Sequence[FileDiff]) -> list[ReviewFinding]:
    sources = [f for f in diff.files if not is_test_path(f.path) and f.path.endswith(".py")]
    if not tests or sources:
        return []
    what = "test files changed while no source file changed: were the tests edited to pass?"
    return [ReviewFinding("adversarial", "high", what, tests[0].path, "tests_edited")]


def _assertions_removed(tests: Sequence[FileDiff]) -> list[ReviewFinding]:
    out: list[ReviewFinding] = []
    for f in tests:
        removed = sum(1 for _, t in f.removed if _ASSERT.match(t))
        added = sum(1 for _, t in f.added if _ASSERT.match(t))
        if removed > added:
            what = f"{removed - added} assertions removed from a test file"
            out.append(ReviewFinding("adversarial", "high", what, f.path, "assertions_removed"))
    return out


def _skips_added(diff: WorkspaceDiff) -> list[ReviewFinding]:
    return [
        ReviewFinding(
            "adversarial", "high", f"line {line} adds a skip/xfail marker: {text.strip()[:80]}", f.path, "skip_added"
        )
        for f in diff.files
        for line, text in f.added
        if _SKIP.search(text)
    ]


def implementer(envelope: Envelope, diff: WorkspaceDiff, events: Sequence[Event]) -> list[ReviewFinding]:
    out: list[ReviewFinding] = []
    plan = fold_plan(events, envelope)
    for t in plan.tasks.values():
        if t.status not in ("COMPLETE",):
            out.append(
                ReviewFinding(
                    "implementer",
                    "medium",
                    f"plan task {t.id} ({t.title or 'untitled'}) is {t.status}",
                    None,
                    "plan_incomplete",
                )
            )
    if not diff.files and envelope.outputs.no_op is None and "patch" in envelope.outputs.allowed_types:
        out.append(
            ReviewFinding(
                "implementer",
                "medium",
                "no change was delivered and the envelope defines no no-op outcome",
                None,
                "no_change",
            )
        )
    return out


def reviewer_view(envelope: Envelope, diff: WorkspaceDiff, events: Sequence[Event]) -> list[ReviewFinding]:
    out: list[ReviewFinding] = []
    first_failing: list[str] | None = None
    for e in events:
        if e.kind == BeliefRecorded.KIND and (belief := e.data_as(BeliefRecorded)).key == "tests.failing":
            first_failing = [str(x) for x in belief.value]
            break
    beliefs = BeliefView.from_events(events)
    now = beliefs.get("tests.failing")
    if _final_suite_passed(events):
        now = None  # the completion cascade ran the whole suite on the final state: nothing older is current
    if first_failing is not None and now is not None:
        for t in sorted(set(map(str, now.value)) - set(first_failing)):
            out.append(
                ReviewFinding(
                    "reviewer",
                    "high",
                    f"regression: {t} fails now but did not at the start",
                    t.split("::")[0],
                    "regression",
                )
            )
    lv = view(events)
    if now is not None and now.epoch < lv.epoch:
        out.append(
            ReviewFinding(
                "reviewer",
                "medium",
                f"the latest test result predates {lv.epoch - now.epoch} later writes",
                None,
                "stale_verification",
            )
        )
    h = acted_on(events)
    if h is not None and h.files and diff.files:
        spec = pathspec.PathSpec.from_lines("gitignore", h.files)
        if not any(spec.match_file(p) for p in diff.paths):
            out.append(
                ReviewFinding(
                    "reviewer",
                    "medium",
                    f"the diff touches none of the files hypothesis {h.id} blames ({', '.join(h.files)})",
                    None,
                    "hypothesis_incompatible",
                )
            )
    return out


def _final_suite_passed(events: Sequence[Event]) -> bool:
    """Whether the latest cascade ran the full test command on the final state, and it passed."""
    last = next((e for e in reversed(events) if e.kind == VerifyCompleted.KIND), None)
    return last is not None and last.data_as(VerifyCompleted).results.get("tests") == "PASS"


def review(envelope: Envelope, diff: WorkspaceDiff, events: Sequence[Event]) -> list[ReviewFinding]:
    """All three views over the run's snapshot diff (made in Python, never by git) and its evidence."""
    return [
        *implementer(envelope, diff, events),
        *reviewer_view(envelope, diff, events),
        *adversarial(envelope, diff, events),
    ]
