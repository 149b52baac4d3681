"""tether.control: beliefs, contradictions, diagnostics, the resolver, recovery, stuck detection and review.

The kernel calls: ``observe`` (new events for the log), ``control_state``, ``guidance``,
``stop_reason``; ``review_action`` before executing an action; ``review`` and
``judge_completion`` when the model claims completion.
"""

from .beliefs import Belief, BeliefView, tool_reliability
from .completion import claim_event, judge_completion
from .diagnostics import DIMENSIONS, Diagnostics, compute
from .observe import control_state, guidance, observe, stop_reason
from .planning import Plan, Task, fold_plan
from .recovery import LADDER
from .resolver import Resolution, ResolverInput, resolve
from .review_gate import ESCALATE_AFTER, ReviewResult, consecutive_failures, review_action, review_gate_event
from .reviewer import Finding, blocking, review
from .state import ControlState

__all__ = [
    "DIMENSIONS",
    "ESCALATE_AFTER",
    "LADDER",
    "Belief",
    "BeliefView",
    "ControlState",
    "Diagnostics",
    "Finding",
    "Plan",
    "Resolution",
    "ResolverInput",
    "ReviewResult",
    "Task",
    "blocking",
    "claim_event",
    "compute",
    "consecutive_failures",
    "control_state",
    "fold_plan",
    "guidance",
    "judge_completion",
    "observe",
    "resolve",
    "review",
    "review_action",
    "review_gate_event",
    "stop_reason",
    "tool_reliability",
]
