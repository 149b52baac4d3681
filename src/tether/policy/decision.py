"""Decisions as ordered values.

``Verdict`` is an ``IntEnum`` so the strictest of several verdicts is simply ``max()``
(ALLOW < ASK < DENY), as in Codex's execpolicy. A :class:`Decision` carries the verdict,
the rule that decided it and *every* rule that matched, so a refusal can always say why.

Inside the gate, each match also carries a :class:`Layer`: which kind of authority it
speaks with. Layers implement the precedence (see :func:`resolve`) without squashing
the matches into a boolean.
"""

from __future__ import annotations

from enum import IntEnum

from tether.quickenum import Quick
from tether.records import dataclass

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class Verdict(IntEnum, metaclass=Quick):
    ALLOW = 0
    ASK = 1
    DENY = 2


@dataclass(frozen=True)
class RuleMatch:
    """One rule (or default, or control state) that had an opinion about the call."""

    id: str
    verdict: Verdict
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "verdict": self.verdict.name, "reason": self.reason}


@dataclass(frozen=True)
class Decision:
    """The gate's answer to one call: the verdict, the rule that decided it, why, and every rule that matched."""

    verdict: Verdict
    deciding_rule: str
    reason: str
    matches: tuple[RuleMatch, ...]
    taints: tuple[dict[str, Any], ...] = ()
    """Values from untrusted output in the arguments (``policy/taint.py``): arg, kind, value, source event."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict.name,
            "deciding_rule": self.deciding_rule,
            "reason": self.reason,
            "rules": [m.to_dict() for m in self.matches],
        }
        if self.taints:
            out["taints"] = [dict(t) for t in self.taints]
        return out


class Layer(IntEnum, metaclass=Quick):
    """Who is speaking. Resolution order (first that has an opinion wins):

    * ``HARD``    safety rules nobody can allow away: envelope ``deny`` rules, built-in profile
                  denials, structural shell findings (unparseable, computed command, pipe into an
                  interpreter), paths outside the writable set, control state. DENY here is final;
                  an ASK here is a floor that no allow rule lifts.
    * ``RUN``     run-scoped allow rules a human added with "approve for this run".
    * ``USER``    the envelope's ``ask`` and ``allow`` rules (ask beats allow).
    * ``PROFILE`` the built-in profile's soft opinions (read-only commands, builds, asks for remote
                  changes). An explicit envelope allow overrides a profile ask.
    * ``DEFAULT`` what the tool's declared effects imply when nothing else spoke.
    """

    HARD = 0
    RUN = 1
    USER = 2
    PROFILE = 3
    DEFAULT = 4


@dataclass(frozen=True)
class Finding:
    """A :class:`RuleMatch` plus the layer it speaks for. Internal to the gate."""

    match: RuleMatch
    layer: Layer

    @classmethod
    def of(cls, layer: Layer, rule_id: str, verdict: Verdict, reason: str) -> Finding:
        return cls(RuleMatch(rule_id, verdict, reason), layer)


def resolve(findings: Iterable[Finding], default: RuleMatch) -> Decision:
    """Apply the precedence to one call's findings.

    HARD DENY > HARD ASK > RUN ALLOW > USER (ask > allow) > PROFILE (strictest) > ``default``.
    Every finding is reported; the deciding one is the first with the winning verdict in the
    winning layer.
    """
    found = list(findings)
    chosen: RuleMatch | None = None
    hard = [f.match for f in found if f.layer is Layer.HARD]
    if hard:
        top = max(m.verdict for m in hard)
        if top > Verdict.ALLOW:
            chosen = next(m for m in hard if m.verdict == top)
    if chosen is None:
        for layer in (Layer.RUN, Layer.USER, Layer.PROFILE, Layer.DEFAULT):
            here = [f.match for f in found if f.layer is layer]
            if here:
                top = max(m.verdict for m in here)
                chosen = here[[m.verdict for m in here].index(top)]  # a list: no generator left open to close
                break
    if chosen is None:
        chosen = default
        found.append(Finding(default, Layer.DEFAULT))
    matches = tuple(dict.fromkeys(f.match for f in found))
    return Decision(chosen.verdict, chosen.id, chosen.reason, matches)


def strictest(decisions: Iterable[Decision], empty: RuleMatch) -> Decision:
    """Combine the decisions of several parts (simple commands) of one call: strictest wins."""
    parts = list(decisions)
    if not parts:
        return Decision(empty.verdict, empty.id, empty.reason, (empty,))
    worst = max(parts, key=lambda d: d.verdict)  # max() keeps the first of equals
    matches = tuple(dict.fromkeys(m for d in parts for m in d.matches))
    return Decision(worst.verdict, worst.deciding_rule, worst.reason, matches)
