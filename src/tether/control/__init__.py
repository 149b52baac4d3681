"""tether.control: beliefs, contradictions, diagnostics, plans, hypotheses, stuck detection, the resolver, recovery.

The kernel calls: ``observe`` (new events for the log), ``control_state``, ``guidance`` and
``stop_reason`` (see :mod:`tether.control.loop`). Judging actions and completions against this
state is the other wing's job: :mod:`tether.review`.
"""

from tether.status import ControlState

from .beliefs import Belief, BeliefView, tool_reliability
from .diagnostics import DIMENSIONS, Diagnostics, compute
from .loop import HumanRequired, control_state, guidance, observe, stop_reason
from .planning import Plan, Task, fold_plan
from .recovery import LADDER
from .resolver import Resolution, ResolverInput, resolve

__all__ = [
    "DIMENSIONS",
    "LADDER",
    "Belief",
    "BeliefView",
    "ControlState",
    "Diagnostics",
    "HumanRequired",
    "Plan",
    "Resolution",
    "ResolverInput",
    "Task",
    "compute",
    "control_state",
    "fold_plan",
    "guidance",
    "observe",
    "resolve",
    "stop_reason",
    "tool_reliability",
]
