"""The control-state resolver: one pure function, the only writer of control state.

Tiers, evaluated in order (the first that applies decides):

1. **contradiction** — an unresolved system-breaking contradiction (its key not re-observed
   since): BLOCKED; HUMAN_REQUIRED once ``MAX_SYSTEM_BREAKING`` have occurred in the run.
2. **critical** — any dimension under ``envelope.control.critical``, or a stuck pattern in the
   current attempt: BLOCKED with a recovery tag, the next strategy on the ladder
   (``budget_headroom`` jumps to ``minimal_fix``). HUMAN_REQUIRED (tag ``escalate_human``) when
   the ladder is exhausted or the recovery budget does not allow another strategy. A strategy
   gets at least ``MIN_ATTEMPTS`` action receipts before the run moves past it; until then the
   run stays BLOCKED under it.
3. **warning** — any dimension under ``envelope.control.warning``: CAUTIOUS.
4. **normal** — NORMAL.

The lowest critical dimension (ties by name) is the one named in the reason.
"""

from __future__ import annotations

from tether.records import dataclass, field
from tether.status import ControlState

from .recovery import LADDER, next_strategy

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MAX_SYSTEM_BREAKING = 3
MIN_ATTEMPTS = 2


@dataclass(frozen=True)
class ResolverInput:
    """What the resolver decides the control state from: the dimensions and their thresholds."""

    dimensions: Mapping[str, float]
    critical: float = 0.15
    warning: float = 0.4
    system_breaking: Sequence[str] = ()  # explanations of unresolved system-breaking contradictions
    system_breaking_total: int = 0
    stuck: Sequence[str] = ()  # stuck patterns active in the current attempt
    strategy: str = "direct_edit"
    attempts_in_strategy: int = 0
    recovery_budget_ok: bool = True
    recovery_budget_note: str = ""


@dataclass(frozen=True)
class Resolution:
    """The control state, the tier that chose it and why."""

    state: ControlState
    tier: str
    reason: str
    dimension: str | None = None
    recovery: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def resolve(inp: ResolverInput) -> Resolution:
    """The control state, by the first tier that applies: a system-breaking contradiction, a critical
    dimension or stuck pattern, the warning band; else NORMAL."""
    for tier in (_system_breaking, _critical, _warning):
        found = tier(inp)
        if found is not None:
            return found
    return Resolution(ControlState.NORMAL, "normal", "every dimension is at or above the warning threshold")


def _system_breaking(inp: ResolverInput) -> Resolution | None:
    """Tier 1: a system-breaking contradiction blocks; too many of them need a human."""
    if not inp.system_breaking:
        return None
    if inp.system_breaking_total >= MAX_SYSTEM_BREAKING:
        return Resolution(
            ControlState.HUMAN_REQUIRED,
            "contradiction",
            f"{inp.system_breaking_total} system-breaking contradictions: the workspace is changing outside "
            f"the log; latest: {inp.system_breaking[-1]}",
        )
    latest = inp.system_breaking[-1]
    return Resolution(ControlState.BLOCKED, "contradiction", f"system-breaking contradiction: {latest}")


def _critical(inp: ResolverInput) -> Resolution | None:
    """Tier 2: a dimension under the critical threshold (the lowest first) or a stuck pattern moves the
    recovery ladder on, once the current strategy has had its attempts, or hands the run to a human."""
    critical = sorted((v, k) for k, v in inp.dimensions.items() if v < inp.critical)
    if not critical and not inp.stuck:
        return None
    if critical:
        value, dim = critical[0]
        why = f"{dim} = {value:.2f} is under the critical threshold {inp.critical:g}"
    else:
        dim, why = "stuck", f"stuck: {', '.join(inp.stuck)}"
    if inp.strategy == "escalate_human":
        return Resolution(
            ControlState.HUMAN_REQUIRED, "critical", f"{why}; recovery ladder exhausted", dim, "escalate_human"
        )
    if inp.attempts_in_strategy < MIN_ATTEMPTS and inp.strategy != LADDER[0]:
        return Resolution(
            ControlState.BLOCKED,
            "critical",
            f"{why}; {inp.strategy} has had {inp.attempts_in_strategy} of {MIN_ATTEMPTS} attempts",
            dim,
            inp.strategy,
        )
    nxt = next_strategy(inp.strategy, skip_to="minimal_fix" if dim == "budget_headroom" else None)
    if nxt == "escalate_human":
        return Resolution(
            ControlState.HUMAN_REQUIRED, "critical", f"{why}; every recovery strategy has been tried", dim, nxt
        )
    if not inp.recovery_budget_ok:
        return Resolution(
            ControlState.HUMAN_REQUIRED,
            "critical",
            f"{why}; recovery budget exhausted: {inp.recovery_budget_note}",
            dim,
            "escalate_human",
        )
    return Resolution(ControlState.BLOCKED, "critical", f"{why}; switching to {nxt}", dim, nxt)


def _warning(inp: ResolverInput) -> Resolution | None:
    """Tier 3: a dimension under the warning threshold (the lowest) makes the run cautious."""
    warn = sorted((v, k) for k, v in inp.dimensions.items() if v < inp.warning)
    if not warn:
        return None
    value, dim = warn[0]
    return Resolution(
        ControlState.CAUTIOUS, "warning", f"{dim} = {value:.2f} is under the warning threshold {inp.warning:g}", dim
    )
