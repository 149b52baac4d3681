"""Diagnostics: dimensions in [0, 1] computed from the log. 1 is healthy, 0 is worst.

*Window* = events after the latest ``recovery.switched`` (the current strategy's attempt);
an *epoch* = workspace-changing actions before an event (see ``tether.control.receipts``).

progress_rate
    Over the last ``PROGRESS_SPAN`` (6) action receipts in the window, a receipt is *novel*
    when its (tool, arguments, observation) was not seen earlier in the run::

        progress_rate = (1 + novel) / (1 + receipts)             (1.0 with no receipts)

failure_recurrence
    For each failure signature (same failing tests, or tool + failure class + normalised
    error, or sensor + diagnostics) in the window, occurrences are counted per attempt: in
    each epoch, the most repeated single action (or sensor) counts, so one failure seen by
    both the tests sensor and ``run_tests`` on the same state counts once::

        failure_recurrence = max(0, 1 - (n_max - 1) / 2)          1 seen: 1.0, twice: 0.5, three times: 0.0

oscillation
    Per file, the sequence of content hashes (``sha256_before``/``sha256_after`` reported by
    write tools) in the window; a *flip* is a return to a hash the file had before other than
    the immediately preceding one (A→B→A)::

        oscillation = max(0, 1 - flips / 3)

verification_strength
    Latest result of each required sensor (every reported sensor when none is required);
    one pseudo-pass keeps a single failing check from reading as "no verification at all"::

        verification_strength = (passing + 1) / (reported + 1)     (1.0 before any result)

belief_consistency
    Contradictions in the window, weighted low 0.1, medium 0.25, high 0.5, system_breaking 1::

        belief_consistency = 1 / (1 + Σ weights)

belief_freshness
    For each state-dependent belief (tests.*, build.*, sensor:*), w = writes since it was observed::

        belief_freshness = mean(1 / (1 + w / 2))                   (1.0 with no such beliefs)

evidence_support
    Claims are completion claims (supported when accepted) and plan tasks moved to COMPLETE
    (supported when the latest verification on that workspace state was accepted)::

        evidence_support = (supported + 1) / (claims + 1)

budget_headroom
    Over the envelope's declared budgets (usd, tokens, turns, tool calls, wall time)::

        budget_headroom = min(max(0, 1 - used / limit))            (1.0 when none is declared)
"""

from __future__ import annotations

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.records import dataclass
from tether.typeless import cast

from .beliefs import BeliefView
from .planning import fold_plan
from .receipts import ActionRecord, LogView, SensorRecord, view
from .recovery import usage

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

    # later kind modules (payload.LATER): folded by their kind's string
    from tether.events.kinds_control import ContradictionDetected, VerifyCompleted

PROGRESS_SPAN = 6
CONTRADICTION_WEIGHT = {"low": 0.1, "medium": 0.25, "high": 0.5, "system_breaking": 1.0}
DIMENSIONS = (
    "progress_rate",
    "failure_recurrence",
    "oscillation",
    "verification_strength",
    "belief_consistency",
    "belief_freshness",
    "evidence_support",
    "budget_headroom",
)
#: Dimensions that measure the current attempt's behaviour (a critical one means "not progressing").
BEHAVIOURAL = frozenset({"progress_rate", "failure_recurrence", "oscillation"})


@dataclass(frozen=True)
class Diagnostics:
    """The run's diagnostic dimensions (each in [0, 1]) and a note on each."""

    values: dict[str, float]
    notes: dict[str, str]

    def __post_init__(self) -> None:
        for k, v in self.values.items():
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"diagnostic {k} = {v} is outside [0, 1]")


def _clamp(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 4)


def progress_score(recent: Sequence[bool]) -> tuple[float, str]:
    """``progress_rate`` from the novelty flags of the window's last ``PROGRESS_SPAN`` receipts."""
    novel_n = sum(recent)
    return _clamp((1 + novel_n) / (1 + len(recent))), f"{novel_n} novel of the last {len(recent)} receipts"


def progress_rate(lv: LogView) -> tuple[float, str]:
    seen: set[tuple[str, str, str]] = set()
    novel_flags: list[bool] = []
    for a in lv.actions:
        key = (a.tool, a.args_hash, a.observation)
        novel = key not in seen
        seen.add(key)
        if lv.in_window(a.event):
            novel_flags.append(novel)
    return progress_score(novel_flags[-PROGRESS_SPAN:])


class FailureCounts:
    """``failure_recurrence``'s counter: signature -> epoch -> identity -> count, and the largest total."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[int, dict[str, int]]] = {}
        self.totals: dict[str, int] = {}  # signature -> sum over epochs of the most repeated identity
        self.n_max = 0

    def add(self, sig: str, epoch: int, ident: str) -> None:
        per = self.counts.setdefault(sig, {}).setdefault(epoch, {})
        top = max(per.values(), default=0)
        n = per.get(ident, 0) + 1
        per[ident] = n
        if n > top:
            self.totals[sig] = self.totals.get(sig, 0) + n - top
            self.n_max = max(self.n_max, self.totals[sig])

    def add_action(self, a: ActionRecord) -> None:
        sig = a.failure_signature
        if sig is not None:
            self.add(sig, a.epoch, f"{a.tool}:{a.args_hash}")

    def add_sensor(self, s: SensorRecord) -> None:
        sig = s.failure_signature
        if sig is not None:
            self.add(sig, s.epoch, f"sensor:{s.sensor}")

    def score(self) -> tuple[float, str]:
        n_max = self.n_max
        return _clamp(1 - max(0, n_max - 1) / 2), f"the most recurrent failure was seen {n_max} times"


def failure_recurrence(lv: LogView) -> tuple[float, str]:
    counts = FailureCounts()
    for a in lv.actions:
        if lv.in_window(a.event):
            counts.add_action(a)
    for s in lv.sensors:
        if lv.in_window(s.event):
            counts.add_sensor(s)
    return counts.score()


class Flips:
    """``oscillation``'s counter: per file, its content hashes in order; returns to an earlier one are flips."""

    def __init__(self) -> None:
        self.history: dict[str, list[str]] = {}
        self.earlier: dict[str, set[str]] = {}  # every hash of the file but the latest
        self.flips = 0
        self.flipped: list[str] = []

    def add(self, a: ActionRecord) -> None:
        if not a.ok:
            return
        path, before, after = a.data.get("path"), a.data.get("sha256_before"), a.data.get("sha256_after")
        if not isinstance(path, str) or not isinstance(after, str):
            return
        seq = self.history.setdefault(path, [])
        earlier = self.earlier.setdefault(path, set())
        if not seq and isinstance(before, str):
            seq.append(before)
        if seq and seq[-1] == after:
            return
        if after in earlier:
            self.flips += 1
            self.flipped.append(path)
        if seq:
            earlier.add(seq[-1])
        seq.append(after)

    def score(self) -> tuple[float, str]:
        flipped = self.flipped
        note = f"{self.flips} edit/revert flips" + (f" ({', '.join(sorted(set(flipped)))})" if flipped else "")
        return _clamp(1 - self.flips / 3), note


def oscillation(lv: LogView) -> tuple[float, str]:
    flips = Flips()
    for a in lv.actions:
        if lv.in_window(a.event):
            flips.add(a)
    return flips.score()


def verification_score(latest: dict[str, SensorRecord]) -> tuple[float, str]:
    """``verification_strength`` from the latest record of each sensor."""
    considered = [s for s in latest.values() if s.required] or list(latest.values())
    passing = sum(1 for s in considered if s.result == "PASS")
    which = "required" if any(s.required for s in latest.values()) else "reported"
    return _clamp((passing + 1) / (len(considered) + 1)), f"{passing} of {len(considered)} {which} sensors pass"


def verification_strength(lv: LogView) -> tuple[float, str]:
    latest: dict[str, SensorRecord] = {}
    for s in lv.sensors:
        latest[s.sensor] = s
    return verification_score(latest)


def contradiction_weight(e: Event) -> float:
    return CONTRADICTION_WEIGHT.get(cast("ContradictionDetected", e.data).severity, 0.5)


def consistency_score(weights: Sequence[float]) -> tuple[float, str]:
    """``belief_consistency`` from the weights of the window's contradictions, in log order."""
    weight = sum(weights)
    return _clamp(1 / (1 + weight)), f"{len(weights)} contradictions in this attempt (weight {weight:g})"


def belief_consistency(events: Sequence[Event], lv: LogView) -> tuple[float, str]:
    return consistency_score(
        [contradiction_weight(e) for e in events if e.kind == "contradiction.detected" and lv.in_window(e)]
    )


def belief_freshness(beliefs: BeliefView, lv: LogView) -> tuple[float, str]:
    return freshness_score(beliefs, lv.epoch)


def freshness_score(beliefs: BeliefView, epoch: int) -> tuple[float, str]:
    """``belief_freshness`` of the current beliefs at the workspace's ``epoch``."""
    state = [b for b in beliefs if b.state_dependent]
    if not state:
        return 1.0, "no state-dependent beliefs yet"
    scores = [1 / (1 + max(0, epoch - b.epoch) / 2) for b in state]
    stale = sum(1 for b in state if b.epoch < epoch)
    return _clamp(sum(scores) / len(scores)), f"{stale} of {len(state)} state beliefs predate the latest write"


def evidence_support(events: Sequence[Event], lv: LogView, envelope: Envelope) -> tuple[float, str]:
    claims = supported = 0
    for e in events:
        if e.kind == "completion.accepted":
            claims += 1
            supported += 1
        elif e.kind == "completion.refused":
            claims += 1
    plan = fold_plan(events, envelope)
    verifications = [
        (e.seq, lv.epoch_at.get(e.seq, 0), cast("VerifyCompleted", e.data).accepted)
        for e in events
        if e.kind == "verify.completed"
    ]
    for _tid, seq in plan.completed_transitions:
        claims += 1
        epoch = lv.epoch_at.get(seq, 0)
        latest = [v for v in verifications if v[0] < seq]
        if latest and latest[-1][1] == epoch and latest[-1][2]:
            supported += 1
    return evidence_score(claims, supported)


def evidence_score(claims: int, supported: int) -> tuple[float, str]:
    """``evidence_support`` from the number of claims and how many were backed by accepted verification."""
    return _clamp((supported + 1) / (claims + 1)), f"{supported} of {claims} claims backed by accepted verification"


def budget_headroom(
    events: Sequence[Event], envelope: Envelope, used: dict[str, float] | None = None
) -> tuple[float, str]:
    used = used if used is not None else usage(events)
    b = envelope.budgets
    limits = {"usd": b.usd, "tokens": b.tokens, "turns": b.turns, "tool_calls": b.tool_calls, "wall_s": b.wall_s}
    room = {
        k: 1 - used[k] / lim if lim else (0.0 if used[k] > 0 else 1.0) for k, lim in limits.items() if lim is not None
    }
    if not room:
        return 1.0, "no budgets declared"
    tight = min(room, key=lambda k: (room[k], k))
    return _clamp(room[tight]), f"tightest budget: {tight} ({used[tight]:g} of {limits[tight]:g} used)"


def compute(
    events: Sequence[Event], envelope: Envelope, lv: LogView | None = None, used: dict[str, float] | None = None
) -> Diagnostics:
    """All dimensions; ``lv`` and ``used`` (:func:`tether.control.recovery.usage`) may be passed if already folded."""
    lv = lv or view(events)
    beliefs = BeliefView.from_events(events)
    return assemble(
        {
            "progress_rate": progress_rate(lv),
            "failure_recurrence": failure_recurrence(lv),
            "oscillation": oscillation(lv),
            "verification_strength": verification_strength(lv),
            "belief_consistency": belief_consistency(events, lv),
            "belief_freshness": belief_freshness(beliefs, lv),
            "evidence_support": evidence_support(events, lv, envelope),
            "budget_headroom": budget_headroom(events, envelope, used),
        }
    )


def assemble(parts: dict[str, tuple[float, str]]) -> Diagnostics:
    """Diagnostics from each dimension's (value, note), in ``DIMENSIONS`` order."""
    return Diagnostics({k: parts[k][0] for k in DIMENSIONS}, {k: parts[k][1] for k in DIMENSIONS})
