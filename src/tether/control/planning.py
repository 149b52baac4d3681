"""The plan: a task list the model maintains with the ``plan`` tool, folded from the log.

The tool only records intent; this module is the state machine. Transitions::

    PENDING   -> ACTIVE | BLOCKED | FAILED
    ACTIVE    -> VERIFYING | PENDING | BLOCKED | FAILED
    VERIFYING -> COMPLETE | ACTIVE | FAILED
    COMPLETE  -> ACTIVE            (reopened, e.g. by a reviewer finding)
    FAILED    -> PENDING | ACTIVE
    BLOCKED   -> PENDING | ACTIVE

A task may become ACTIVE, VERIFYING or COMPLETE only when every task it depends on is
COMPLETE; unknown dependencies and dependency cycles are refused. Refused changes are
listed in ``plan.updated.rejected`` (and in the guidance to the model). A reviewer
finding of medium or high severity reopens COMPLETE/VERIFYING tasks whose ``files``
match the finding's file (all of them when none match).
"""

from __future__ import annotations

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.records import dataclass, field, replace
from tether.state import PLAN_TOOL  # the run state watches its calls too (``planned``)
from tether.typeless import cast

from .receipts import IntentCalls
from .risk import rate_paths

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, Literal

    # later kind modules (payload.LATER): read by their kind's string, imported where one is made
    from tether.events.kinds_control import PlanUpdated, ReviewFindingRecorded
    from tether.events.kinds_knowledge import PlanCarried

    Status = Literal["PENDING", "ACTIVE", "VERIFYING", "COMPLETE", "FAILED", "BLOCKED"]

STATUSES: tuple[Status, ...] = ("PENDING", "ACTIVE", "VERIFYING", "COMPLETE", "FAILED", "BLOCKED")
TRANSITIONS: dict[str, frozenset[str]] = {
    "PENDING": frozenset({"ACTIVE", "BLOCKED", "FAILED"}),
    "ACTIVE": frozenset({"VERIFYING", "PENDING", "BLOCKED", "FAILED"}),
    "VERIFYING": frozenset({"COMPLETE", "ACTIVE", "FAILED"}),
    "COMPLETE": frozenset({"ACTIVE"}),
    "FAILED": frozenset({"PENDING", "ACTIVE"}),
    "BLOCKED": frozenset({"PENDING", "ACTIVE"}),
}
NEEDS_DEPS = frozenset({"ACTIVE", "VERIFYING", "COMPLETE"})


@dataclass(frozen=True)
class Task:
    """One task of the plan: its title, status, dependencies, the files it touches and its risk."""

    id: str
    title: str = ""
    status: str = "PENDING"
    depends_on: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    risk: str = "LOW"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "depends_on": list(self.depends_on),
            "files": list(self.files),
            "risk": self.risk,
        }


@dataclass
class Plan:
    """The folded plan: its tasks, the updates refused, and the transitions to COMPLETE."""

    tasks: dict[str, Task] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)
    cites: list[str] = field(default_factory=list)
    completed_transitions: list[tuple[str, int]] = field(default_factory=list)  # (task id, seq)

    def ordered(self) -> list[Task]:
        return list(self.tasks.values())

    def snapshot(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.ordered()]

    def active(self) -> list[Task]:
        return [t for t in self.tasks.values() if t.status == "ACTIVE"]


def _cycle(tasks: dict[str, Task], start: str) -> bool:
    stack, seen = [start], set()
    while stack:
        cur = stack.pop()
        for dep in tasks[cur].depends_on if cur in tasks else ():
            if dep == start:
                return True
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return False


def apply_update(plan: Plan, update: dict[str, Any], envelope: Envelope | None, seq: int) -> None:
    tid = str(update.get("id", "")).strip()
    if not tid:
        plan.rejected.append("a task without an id")
        return
    old = plan.tasks.get(tid)
    status = str(update.get("status") or (old.status if old else "PENDING")).upper()
    if status not in STATUSES:
        plan.rejected.append(f"{tid}: unknown status {status!r}")
        return
    raw_deps, raw_files = update.get("depends_on"), update.get("files")
    deps = tuple(map(str, raw_deps)) if isinstance(raw_deps, list) else (old.depends_on if old else ())
    files = tuple(map(str, raw_files)) if isinstance(raw_files, list) else (old.files if old else ())
    title = str(update.get("title") or (old.title if old else ""))
    unknown = [d for d in deps if d not in plan.tasks and d != tid]
    if unknown or tid in deps:
        plan.rejected.append(f"{tid}: depends on unknown or itself: {', '.join(unknown) or tid}")
        return
    if old is not None and status != old.status and status not in TRANSITIONS[old.status]:
        allowed = ", ".join(sorted(TRANSITIONS[old.status]))
        plan.rejected.append(f"{tid}: {old.status} -> {status} is not allowed (from {old.status}: {allowed})")
        return
    if old is None and status not in ("PENDING", "ACTIVE"):
        plan.rejected.append(f"{tid}: a new task starts PENDING or ACTIVE, not {status}")
        return
    if status in NEEDS_DEPS:
        open_deps = [d for d in deps if plan.tasks[d].status != "COMPLETE"]
        if open_deps:
            plan.rejected.append(f"{tid}: cannot be {status} before {', '.join(open_deps)} COMPLETE")
            return
    candidate = Task(tid, title, status, deps, files, rate_paths(files, envelope) if envelope else "LOW")
    trial = {**plan.tasks, tid: candidate}
    if _cycle(trial, tid):
        plan.rejected.append(f"{tid}: dependency cycle")
        return
    if status == "COMPLETE" and (old is None or old.status != "COMPLETE"):
        plan.completed_transitions.append((tid, seq))
    plan.tasks[tid] = candidate


def reopen(plan: Plan, finding_file: str | None, reason: str) -> None:
    import pathspec  # here: most processes never reopen a task (see risk._spec)

    done = [t for t in plan.tasks.values() if t.status in ("COMPLETE", "VERIFYING")]
    hit = [
        t
        for t in done
        if finding_file and t.files and pathspec.PathSpec.from_lines("gitignore", t.files).match_file(finding_file)
    ]
    for t in hit or done:
        plan.tasks[t.id] = replace(t, status="ACTIVE")
        plan.rejected.append(f"{t.id}: reopened by the reviewer: {reason}")


class PlanFold:
    """The plan, folded one event at a time; ``version`` counts the events that changed it."""

    def __init__(self, envelope: Envelope | None = None) -> None:
        self.plan = Plan()
        self.envelope = envelope
        self.version = 0
        self._calls = IntentCalls(PLAN_TOOL)

    #: The kinds :meth:`add` reads; any other event leaves the fold as it is (a holder may skip it).
    KINDS = IntentCalls.KINDS | {"review.finding", "plan.carried"}

    def add(self, e: Event) -> None:
        """Take in one event: a successful plan call updates the plan; a reviewer's finding may reopen a task."""
        args = self._calls.completed(e)
        if args is not None:
            self._updated(e, args)
        elif e.kind == "review.finding":
            self._reviewed(e, cast("ReviewFindingRecorded", e.data))
        elif e.kind == "plan.carried":
            self._carried(e, cast("PlanCarried", e.data))

    def _carried(self, e: Event, carried: PlanCarried) -> None:
        """An earlier run's task list, states and all (``--continue-plan``): the plan starts from it."""
        tasks = {t.id: Task(t.id, t.title, t.status, tuple(t.depends_on), tuple(t.files)) for t in carried.tasks}
        self.plan = rated(Plan(tasks), self.envelope)
        self.plan.cites = [e.id]
        self.version += 1

    def _updated(self, e: Event, args: dict[str, Any]) -> None:
        plan = self.plan
        plan.rejected = []
        for update in args.get("tasks", []) or []:
            if isinstance(update, dict):
                apply_update(plan, update, self.envelope, e.seq)
        plan.cites = [e.id]
        self.version += 1

    def _reviewed(self, e: Event, finding: ReviewFindingRecorded) -> None:
        plan = self.plan
        if finding.severity in ("medium", "high") and any(
            t.status in ("COMPLETE", "VERIFYING") for t in plan.tasks.values()
        ):
            plan.rejected = []
            reopen(plan, finding.file, finding.message)
            plan.cites = [e.id]
            self.version += 1


def fold_plan(events: Iterable[Event], envelope: Envelope | None = None) -> Plan:
    fold = PlanFold(envelope)
    for e in events:
        fold.add(e)
    return fold.plan


def rated(plan: Plan, envelope: Envelope | None) -> Plan:
    """``plan`` (folded without an envelope) with each task's risk as folding it with ``envelope`` rates it.

    A task's risk depends only on its files and the envelope, so this equals ``fold_plan(events, envelope)``.
    """
    tasks = {
        tid: replace(t, risk=rate_paths(t.files, envelope) if envelope else "LOW") for tid, t in plan.tasks.items()
    }
    return Plan(tasks, list(plan.rejected), list(plan.cites), list(plan.completed_transitions))


def plan_update(plan: Plan, last: PlanUpdated | None, revisions: int) -> list[PlanUpdated]:
    """A ``plan.updated`` when ``plan`` differs from ``last`` (the latest one); ``revisions`` so far."""
    if not plan.tasks and not plan.rejected:
        return []
    from tether.events.kinds_control import PlanUpdated, TaskData  # here: a hook session's calls plan nothing

    update = PlanUpdated(
        tasks=[TaskData.model_validate(t) for t in plan.snapshot()],
        rejected=list(plan.rejected),
        revision=revisions + 1,
        cites=list(plan.cites),
    )
    if last is not None and last.tasks == update.tasks and last.cites == update.cites:
        return []
    return [update]


def plan_events(events: Sequence[Event], envelope: Envelope | None) -> list[PlanUpdated]:
    """A ``plan.updated`` when the folded plan differs from the last one recorded."""
    plan = fold_plan(events, envelope)
    if not plan.tasks and not plan.rejected:
        return []
    updates = [cast("PlanUpdated", e.data) for e in events if e.kind == "plan.updated"]
    return plan_update(plan, updates[-1] if updates else None, len(updates))
