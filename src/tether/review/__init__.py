"""tether.review: judging what the agent proposes and delivers.

Before an action runs: the execution review (:mod:`tether.review.execution`). When the model claims
completion: the deterministic reviewer (:mod:`tether.review.reviewer`), its test-integrity findings
(:mod:`tether.review.test_integrity`), the optional model reviewer (:mod:`tether.review.model_reviewer`)
and the verdict on the claim (:mod:`tether.review.completion`). Review reads the control layer's state
(beliefs, plan, recovery) and never writes it.
"""

from __future__ import annotations

from tether.exports import lazy

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from .completion import claim_event, judge_completion
    from .execution import ESCALATE_AFTER, ReviewResult, consecutive_failures, review_action, review_gate_event
    from .reviewer import ReviewFinding, blocking, review

#: Where each public name lives. Each is imported on first use (PEP 562): importing one module of the
#: package does not import all of them (a hook call imports the execution review, not the completion review).
_HOMES = {
    "claim_event": ".completion",
    "judge_completion": ".completion",
    "ESCALATE_AFTER": ".execution",
    "ReviewResult": ".execution",
    "consecutive_failures": ".execution",
    "review_action": ".execution",
    "review_gate_event": ".execution",
    "ReviewFinding": ".reviewer",
    "blocking": ".reviewer",
    "review": ".reviewer",
}


__getattr__ = lazy(globals(), _HOMES)


__all__ = [
    "ESCALATE_AFTER",
    "ReviewFinding",
    "ReviewResult",
    "blocking",
    "claim_event",
    "consecutive_failures",
    "judge_completion",
    "review",
    "review_action",
    "review_gate_event",
]
