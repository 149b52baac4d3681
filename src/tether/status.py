"""The status vocabulary: every word tether uses for where a run, an action or a claim stands.

These live at the ground floor (nothing from tether is imported but the enum maker, ``quickenum``) so that every
layer — the fold, the control layer, the gate, the kernel, the CLI — speaks the same typed words instead of strings.
All are ``StrEnum``: a member *is* its string, so logs written before these types existed read back
unchanged, and a payload model validates a stored string into its member.

Who sets what (docs/design.md, "Where each decision is made"):

- ``RunStatus``: terminal ones only by ``tether.kernel.steps.next_step`` (through ``Finish``);
  ``WAITING_APPROVAL`` when an approval is requested; ``RUNNING`` on start and resume.
- ``ControlState``: only the control layer's resolver (``tether.control.resolver``).
- ``ActionStatus`` and ``ClaimStatus``: only the fold (``tether.state.RunState.apply``), from events.
"""

from __future__ import annotations

from enum import StrEnum

from tether.quickenum import Quick


class RunStatus(StrEnum, metaclass=Quick):
    """Where a run stands. A terminal status is final for that run: resume refuses it, fork starts anew."""

    NEW = "NEW"  # no event yet
    RUNNING = "RUNNING"
    WAITING_APPROVAL = "WAITING_APPROVAL"  # paused durably until a human answers
    COMPLETE = "COMPLETE"  # completion claimed, verified, and the workspace changed
    NO_OP = "NO_OP"  # completion verified with nothing changed
    NEEDS_INPUT = "NEEDS_INPUT"  # a human must supply something (a decision, a setting, a task)
    BLOCKED_PERMISSION = "BLOCKED_PERMISSION"  # what would run is not what was approved
    BLOCKED_DEPENDENCY = "BLOCKED_DEPENDENCY"  # the sandbox or the model provider failed; may come back
    VERIFY_FAILED = "VERIFY_FAILED"  # completion was refused more often than the envelope allows
    NO_PROGRESS = "NO_PROGRESS"  # the agent keeps acting (or talking) without getting closer
    BUDGET_STOP = "BUDGET_STOP"  # a budget would be exceeded

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def waiting(self) -> bool:
        return self in WAITING


#: Statuses a run ends with.
TERMINAL: frozenset[RunStatus] = frozenset(
    {
        RunStatus.COMPLETE,
        RunStatus.NO_OP,
        RunStatus.NEEDS_INPUT,
        RunStatus.BLOCKED_PERMISSION,
        RunStatus.BLOCKED_DEPENDENCY,
        RunStatus.VERIFY_FAILED,
        RunStatus.NO_PROGRESS,
        RunStatus.BUDGET_STOP,
    }
)
#: Statuses a run pauses in (not terminal: it goes on when the human answers).
WAITING: frozenset[RunStatus] = frozenset({RunStatus.WAITING_APPROVAL})
#: Terminal statuses that count as success.
SUCCESS: frozenset[RunStatus] = frozenset({RunStatus.COMPLETE, RunStatus.NO_OP})


class ControlState(StrEnum, metaclass=Quick):
    """How much freedom the run has right now. Only the resolver sets it; the gate reads it."""

    NORMAL = "NORMAL"
    CAUTIOUS = "CAUTIOUS"  # effects beyond read need a human
    BLOCKED = "BLOCKED"  # only read-only actions
    HUMAN_REQUIRED = "HUMAN_REQUIRED"  # the run stops for a human


class ActionStatus(StrEnum, metaclass=Quick):
    """Where one proposed tool call stands (folded from its events)."""

    PROPOSED = "proposed"  # the model asked; not decided yet
    INVALID = "invalid"  # unknown tool or arguments that do not validate; never decided
    DECIDED = "decided"  # allowed (by the gate or a human): ready to execute
    WAITING = "waiting"  # the gate asked: a human decides
    DENIED = "denied"  # by the gate, a human, or an expired approval
    STARTED = "started"  # durable before the tool runs; with no completion after a crash: ambiguous
    COMPLETED = "completed"  # the tool ran (ok or not)
    FAILED = "failed"  # the tool could not run at all


class ClaimStatus(StrEnum, metaclass=Quick):
    """Where one completion claim (a ``finish`` call) stands."""

    PENDING = "pending"  # claimed, not verified yet
    ACCEPTED = "accepted"
    REFUSED = "refused"


class FiringStatus(StrEnum, metaclass=Quick):
    """How a schedule's firing ended when it did not end as its run's status (see tether.kernel.schedule)."""

    FAILED = "FAILED"  # could not run or could not be trusted: envelope changed, store stale, eligibility error
    REFUSED = "REFUSED"  # over the schedule's daily budget: refused with a receipt, not run
