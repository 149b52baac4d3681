"""tether.policy: the gate that turns a proposed tool call into ALLOW, ASK or DENY, with the rule that decided.

``Gate(envelope, workspace).decide(tool, args)`` is the one entry point; ``shell_decision`` decides
one shell command against an envelope (the default one when none is given). ``strict_check`` is the
whole strict validation of an envelope, including its permission rules. ``load_cases`` /
``run_cases`` run a table of calls and expected decisions (``tether policy test``).
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
