"""tether.control: beliefs, contradictions, diagnostics, plans, hypotheses, stuck detection, the resolver, recovery.

The kernel calls: ``observe`` (new events for the log), ``control_state``, ``guidance`` and
``stop_reason`` (see :mod:`tether.control.loop`). Judging actions and completions against this
state is the other wing's job: :mod:`tether.review`.
"""

from __future__ import annotations

from tether.exports import lazy

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from tether.status import ControlState

    from .beliefs import Belief, BeliefView, tool_reliability
    from .diagnostics import DIMENSIONS, Diagnostics, compute
    from .loop import HumanRequired, control_state, guidance, observe, stop_reason
    from .planning import Plan, Task, fold_plan
    from .recovery import LADDER
    from .resolver import Resolution, ResolverInput, resolve

#: Where each public name lives. Each is imported on first use (PEP 562): importing one module of the
#: package does not import all of them (a hook call's execution review reads the fold, not the loop).
_HOMES = {
    "ControlState": "tether.status",
    "Belief": ".beliefs",
    "BeliefView": ".beliefs",
    "tool_reliability": ".beliefs",
    "DIMENSIONS": ".diagnostics",
    "Diagnostics": ".diagnostics",
    "compute": ".diagnostics",
    "HumanRequired": ".loop",
    "control_state": ".loop",
    "guidance": ".loop",
    "observe": ".loop",
    "stop_reason": ".loop",
    "Plan": ".planning",
    "Task": ".planning",
    "fold_plan": ".planning",
    "LADDER": ".recovery",
    "Resolution": ".resolver",
    "ResolverInput": ".resolver",
    "resolve": ".resolver",
}


__getattr__ = lazy(globals(), _HOMES)


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
