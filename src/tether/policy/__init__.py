"""tether.policy: whether a proposed tool call may run — ALLOW, ASK or DENY, with the rule that decided.

``Gate(envelope, workspace).decide(tool, args)`` applies the envelope's rules, the built-in profile
and the control state to one call; ``shell_decision`` does that for one shell command (against the
default envelope when none is given). In a run the kernel asks :func:`tether.policy.decide.decide`,
the one decider, which layers a repeat-denial check before the gate and the execution review after
it. ``strict_check`` is the whole strict validation of an envelope, its permission rules included;
``load_cases`` / ``run_cases`` run a table of calls and expected decisions (``tether policy test``).
"""

from .cases import load_cases, run_cases
from .decision import Decision, RuleMatch, Verdict
from .defaults import default_envelope
from .gate import Gate, shell_decision
from .strict import accepted_risks, strict_check, strict_problems

__all__ = [
    "Decision",
    "Gate",
    "RuleMatch",
    "Verdict",
    "accepted_risks",
    "default_envelope",
    "load_cases",
    "run_cases",
    "shell_decision",
    "strict_check",
    "strict_problems",
]
