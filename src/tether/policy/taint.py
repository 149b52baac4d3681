"""Taint escalation: a side-effecting call that carries a value from untrusted output goes to a human.

Called by the one decider (``policy/decide.py``) after the gate allowed or asked about a call whose tool
does more than read. When an argument holds a value that first appeared in untrusted output and not in
the user's words (``policy/provenance.py``), the call is escalated:

* DENY when an envelope deny rule for the tool says ``when: tainted(args.NAME)`` for that argument (or
  ``tainted(args)``, any argument);
* otherwise ASK — by such an ask rule, or by ``taint:untrusted-value``.

The decision names each tainted value, the argument that holds it and the event that brought it, so the
approval preview shows a human exactly what a third party put there. Nothing here knows an attack phrase.
"""

from __future__ import annotations

from tether.envelope.schema import Envelope, Rule

from .decision import Decision, RuleMatch, Verdict
from .provenance import Taint
from .rules import CompiledRule, parse

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence

DEFAULT_RULE = "taint:untrusted-value"


def _root(path: str) -> str:
    """The top-level argument of a nested path (``to[0]`` -> ``to``, ``body.text`` -> ``body``)."""
    return path.split(".", 1)[0].split("[", 1)[0]


def _taint_rules(rules: Sequence[Rule], verdict: Verdict, tool: str) -> list[CompiledRule]:
    out = []
    for r in rules:
        if isinstance(r.when, str):
            compiled = parse(r, verdict)
            if compiled.tool == tool:
                out.append(compiled)
    return out


def _hits(rule: CompiledRule, taints: Sequence[Taint]) -> list[Taint]:
    names = rule.tainted or ()
    return [t for t in taints if "*" in names or _root(t.arg) in names]


def escalate(decision: Decision, tool: str, taints: Sequence[Taint], env: Envelope) -> Decision:
    """``decision`` (the gate's, not a DENY) escalated for ``taints``; unchanged when there are none."""
    if not taints or decision.verdict is Verdict.DENY:
        return decision
    said = "; ".join(t.describe() for t in taints[:5]) + (f"; and {len(taints) - 5} more" if len(taints) > 5 else "")
    for verdict, rules in ((Verdict.DENY, env.permissions.deny), (Verdict.ASK, env.permissions.ask)):
        for rule in _taint_rules(rules, verdict, tool):
            if hits := _hits(rule, taints):
                shown = "; ".join(t.describe() for t in hits[:5])
                reason = f"{rule.reason or f'{verdict.name.lower()} rule {rule.id}'}: {shown}"
                return _with(decision, RuleMatch(rule.id, verdict, reason), taints)
    reason = f"a value from untrusted output would steer a side effect: {said}"
    return _with(decision, RuleMatch(DEFAULT_RULE, Verdict.ASK, reason), taints)


def _with(decision: Decision, match: RuleMatch, taints: Sequence[Taint]) -> Decision:
    return Decision(
        match.verdict,
        match.id,
        match.reason,
        (*decision.matches, match),
        taints=tuple(t.to_dict() for t in taints),
    )
