"""tether.review: judging what the agent proposes and delivers.

Before an action runs: the execution review (:mod:`tether.review.execution`). When the model claims
completion: the deterministic reviewer (:mod:`tether.review.reviewer`), its test-integrity findings
(:mod:`tether.review.test_integrity`), the optional model reviewer (:mod:`tether.review.model_reviewer`)
and the verdict on the claim (:mod:`tether.review.completion`). Review reads the control layer's state
(beliefs, plan, recovery) and never writes it.
"""

from .completion import claim_event, judge_completion
from .execution import ESCALATE_AFTER, ReviewResult, consecutive_failures, review_action, review_gate_event
from .reviewer import ReviewFinding, blocking, review

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
