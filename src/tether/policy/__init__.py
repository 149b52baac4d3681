"""tether.policy: whether a proposed tool call may run — ALLOW, ASK or DENY, with the rule that decided.

``Gate(envelope, workspace).decide(tool, args)`` applies the envelope's rules, the built-in profile
and the control state to one call; ``shell_decision`` does that for one shell command (against the
default envelope when none is given). In a run the kernel asks :func:`tether.policy.decide.decide`,
the one decider, which layers a repeat-denial check before the gate and the execution review after
it. ``strict_check`` is the whole strict validation of an envelope, its permission rules included;
``load_cases`` / ``run_cases`` run a table of calls and expected decisions (``tether policy test``).
"""

from __future__ import annotations

from tether.exports import lazy

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from .cases import load_cases, run_cases
    from .decision import Decision, RuleMatch, Verdict
    from .defaults import default_envelope
    from .gate import Gate, shell_decision
    from .strict import accepted_risks, strict_check, strict_problems

#: Where each public name lives. Each is imported on first use (PEP 562): importing one module of the
#: package does not import all of them (a hook call imports the gate, not the strict checks and their model catalogue).
_HOMES = {
    "load_cases": ".cases",
    "run_cases": ".cases",
    "Decision": ".decision",
    "RuleMatch": ".decision",
    "Verdict": ".decision",
    "default_envelope": ".defaults",
    "Gate": ".gate",
    "shell_decision": ".gate",
    "accepted_risks": ".strict",
    "strict_check": ".strict",
    "strict_problems": ".strict",
}


__getattr__ = lazy(globals(), _HOMES)


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
