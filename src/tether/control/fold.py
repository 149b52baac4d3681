"""The control layer's view of a run, folded one event at a time and cached by the log's chain hash.

``observe``, ``control_state`` and ``stop_reason`` are pure functions of the log; computed from
scratch each kernel step they make a run O(n²). :class:`RunFold` holds everything they read,
updated per event with the same accumulators the from-scratch functions use (``LogView.add``,
``PlanFold``, ``HypothesisFold``, ``FailureCounts``, ``Flips``, ``RunState.apply``, ...), so
extending it by the new events costs O(new events).

:func:`folded` keeps the latest fold of each run (bounded). A fold is reused for a log when the
log is at least as long and its event at the fold's last position has the fold's head hash: a
chain hash covers that event and, through ``prev_hash``, everything before it (the same premise
as ``tether.control.receipts``'s record cache). The events taken in are checked to be a chain (each
64-hex hash, each ``prev_hash`` the previous hash, seqs increasing); events that are not one (built
in memory, or with a gap) get a fresh fold of their own, never cached.

This fold is the control layer's only path: ``tests/control/oracle.py`` keeps the from-scratch
composition of the same stages, and ``tests/control/test_incremental.py`` checks that the two agree
on every prefix of a log that exercises them all.
"""

from __future__ import annotations

from _bisect import bisect_right
from _collections_abc import Sequence  # collections.abc's, without the collections package

from tether.canonical import sha256
from tether.envelope.schema import Envelope
from tether.events.bulk import gc_paused
from tether.events.kinds_calls import ActionProposed, DiagnosticsComputed
from tether.events.payload import Payload
from tether.events.store import Event
from tether.records import dataclass
from tether.state import RunState
from tether.typeless import cast

from .beliefs import (
    Belief,
    BeliefView,
    Observation,
    belief_mark,
    belief_of,
    observations_of_action,
    observations_of_sensor,
    record_observations,
)
from .deferred import LATER
from .diagnostics import (
    PROGRESS_SPAN,
    FailureCounts,
    Flips,
    contradiction_weight,
    evidence_score,
    progress_score,
)
from .hypotheses import HypothesisFold
from .planning import Plan, PlanFold, rated
from .receipts import CONTROL_KINDS, ActionRecord, LogView, SensorRecord, seq_of
from .recovery import LADDER, usage_of
from .stuck import ERROR_SPAN, Stuck, patterns

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections import OrderedDict, deque
    from collections.abc import Callable
    from typing import Any

    # later kind modules (payload.LATER): the fold reads them by their kind's string
    from tether.events.kinds import ModelResponded
    from tether.events.kinds_control import (
        BeliefRecorded,
        CompletionAccepted,
        CompletionRefused,
        ContradictionDetected,
        ControlChanged,
        HypothesisRecorded,
        PlanUpdated,
        RecoverySwitched,
        StuckDetected,
        VerifyCompleted,
    )
else:  # the C types collections names, without importing it (a cold hook's Write is reviewed against this fold)
    from _collections import OrderedDict, deque

MARKER_KINDS = frozenset({DiagnosticsComputed.KIND, "control.changed", "recovery.switched", "stuck.detected"})
FOLDS_MAX = 32


class NotAChain(ValueError):
    """The events are not a hash chain in log order: the fold cannot be trusted for them."""


def max_cite(cites: Sequence[str]) -> int:
    """The newest seq among ``run#seq`` citations (-1 for none)."""
    return max((seq_of(x) for x in cites), default=-1)


@dataclass
class _Derivation:
    """``derive`` in progress from one belief state: receipts after its mark are replayed once each."""

    beliefs_seen: int  # belief.recorded events in the log when it started (its belief state)
    current: dict[str, Belief]
    generation: int
    next_receipt: int
    out: list[Payload]


class _Window:
    """What stuck detection and the behavioural diagnostics read from the current strategy's attempt."""

    def __init__(self) -> None:
        self.attempts = 0  # actions in this attempt
        self.streak: list[str] = []  # the event ids of the trailing run of actions identical to the last one
        self.last4: deque[ActionRecord] = deque(maxlen=4)
        self.receipts: deque[ActionRecord | SensorRecord] = deque(maxlen=ERROR_SPAN)
        self.novel: deque[bool] = deque(maxlen=PROGRESS_SPAN)
        self.failures = FailureCounts()
        self.flips = Flips()
        self.contradictions: list[float] = []  # weights, in log order
        self.silent: list[Event] = []  # trailing model responses without a tool call


class RunFold:
    """Everything ``observe``, ``control_state`` and ``stop_reason`` read, for a prefix of one run's log."""

    def __init__(self) -> None:
        self.n = 0  # events taken in
        self.head_hash = ""
        self.last: Event | None = None
        self.state = RunState()
        # grown by LogView.add; it keeps no per-event lists, and reads each call's proposal from the state
        self.lv = LogView([], keep=False, proposals=self.state.actions)
        # beliefs
        self.beliefs: dict[str, Belief] = {}
        self.generation = 0
        self.beliefs_seen = 0
        self.belief_max_cite: dict[str, int] = {}  # key -> newest receipt any belief of it cites
        self.receipt_seqs: list[int] = []
        self.receipt_obs: list[tuple[Observation, ...]] = []  # tuples: most receipts observe one key or none
        self._history: dict[str, tuple[int, int]] = {}  # tool -> (ok, n): confidence of the next receipt
        self._derivation: _Derivation | None = None
        # plan and hypotheses
        self.plan = PlanFold()
        self._rated: tuple[int, Envelope, Plan] | None = None
        self.last_plan_updated: PlanUpdated | None = None
        self.plan_revisions = 0
        self.hypotheses = HypothesisFold()
        self.last_hypothesis: dict[str, HypothesisRecorded] = {}
        # evidence support
        self.claims = 0
        self.supported = 0
        self._last_verify: tuple[int, bool] | None = None  # (epoch, accepted) of the latest verify.completed
        self._transitions_seen = 0
        # markers, diagnostics, resolution
        self.marker_seq = -1
        self.last_input: Event | None = None  # the latest event the control layer did not write
        self.last_diagnostics: Event | None = None
        self.last_control: Event | None = None
        self.last_refused: Event | None = None
        self.last_accepted: Event | None = None
        self.strategy = LADDER[0]
        self.stuck_reported: set[tuple[str, str]] = set()
        self.system_breaking: list[Event] = []
        self.seen_actions: set[bytes] = set()  # novelty: digests of (tool, args hash, observation), see _action
        self.latest_sensor: dict[str, SensorRecord] = {}
        self.window = _Window()

    # ---- taking in events --------------------------------------------------------------------

    def extend(self, events: Sequence[Event], *, chained: bool = True) -> None:
        """Take in ``events[self.n:]``; ``chained``: check they continue the hash chain (the cache needs it)."""
        with gc_paused():
            for i in range(self.n, len(events)):
                e = events[i]
                last = self.last
                if chained and (
                    len(e.hash) != 64 or (last is not None and (e.prev_hash != last.hash or e.seq <= last.seq))
                ):
                    raise NotAChain(f"event {i} ({e.id}) does not continue the chain")
                self._add(e)
                self.n, self.head_hash, self.last = i + 1, e.hash, e

    def add(self, e: Event) -> None:
        """Take in the log's next event, checked to continue the chain: for a holder of the fold that sees
        each event once as it is appended (the runtime), and keeps no list of them."""
        last = self.last
        if len(e.hash) != 64 or (last is not None and (e.prev_hash != last.hash or e.seq <= last.seq)):
            raise NotAChain(f"event {e.id} does not continue the chain")
        self._add(e)
        self.n, self.head_hash, self.last = self.n + 1, e.hash, e

    def add_all(self, events: Sequence[Event]) -> None:
        """:meth:`add` for each of ``events`` in order (a step's batch, issue 18: one call, not one per event)."""
        add = self._add
        for e in events:
            last = self.last
            if len(e.hash) != 64 or (last is not None and (e.prev_hash != last.hash or e.seq <= last.seq)):
                raise NotAChain(f"event {e.id} does not continue the chain")
            add(e)
            self.n, self.head_hash, self.last = self.n + 1, e.hash, e

    def _add(self, e: Event) -> None:
        self.state.apply(e)
        epoch = self.lv.epoch  # the epoch at this event (LogView.add counts a write after it)
        record = self.lv.add(e)
        kind = e.kind
        if kind in PlanFold.KINDS:  # the plan and hypothesis folds read a few kinds: not called for the rest
            self.plan.add(e)
            self._count_completed_tasks(epoch)  # only the plan fold completes a task
        if kind in HypothesisFold.KINDS:
            self.hypotheses.add(e)
        if record is None:  # most events are no receipt
            pass
        elif isinstance(record, ActionRecord):
            self._action(record)
        else:
            self._sensor(record)
        if kind in MARKER_KINDS:
            self.marker_seq = max(self.marker_seq, e.seq)
        if kind not in CONTROL_KINDS:
            self.last_input = e
        handler = _BY_KIND.get(kind)
        if handler is not None:
            handler(self, e, e.data, epoch)

    def _count_completed_tasks(self, epoch: int) -> None:
        """Plan tasks completed by this event: supported when the latest verification before it, on the
        same workspace state, was accepted (evidence_support)."""
        transitions = self.plan.plan.completed_transitions
        if len(transitions) == self._transitions_seen:  # most events complete no task: no slice to build
            return
        for _tid, _seq in transitions[self._transitions_seen :]:  # all at this event (seq == e.seq)
            self.claims += 1
            v = self._last_verify
            if v is not None and v[0] == epoch and v[1]:
                self.supported += 1
        self._transitions_seen = len(transitions)

    # one handler per kind the control layer reads (``_BY_KIND`` below); each gets the epoch at the event

    def _belief(self, e: Event, p: BeliefRecorded, epoch: int) -> None:
        b = belief_of(e)
        self.beliefs[b.key] = b
        self.generation = max(self.generation, b.generation)
        self.beliefs_seen += 1
        self.belief_max_cite[b.key] = max(self.belief_max_cite.get(b.key, -1), max_cite(b.cites))

    def _contradiction(self, e: Event, p: ContradictionDetected, epoch: int) -> None:
        self.window.contradictions.append(contradiction_weight(e))
        if p.severity == "system_breaking":
            self.system_breaking.append(e)

    def _plan_updated(self, e: Event, p: PlanUpdated, epoch: int) -> None:
        self.last_plan_updated = p
        self.plan_revisions += 1

    def _hypothesis(self, e: Event, p: HypothesisRecorded, epoch: int) -> None:
        self.last_hypothesis[p.id] = p

    def _stuck(self, e: Event, p: StuckDetected, epoch: int) -> None:
        self.stuck_reported.add((p.pattern, (p.cites or [""])[0]))

    def _diagnostics(self, e: Event, p: DiagnosticsComputed, epoch: int) -> None:
        self.last_diagnostics = e

    def _control(self, e: Event, p: ControlChanged, epoch: int) -> None:
        self.last_control = e

    def _recovery(self, e: Event, p: RecoverySwitched, epoch: int) -> None:
        self.strategy = p.strategy
        self.window = _Window()

    @property
    def awaiting_human(self) -> bool:
        """Recovery escalated to a person, and no one has continued the run since (the run state keeps it:
        the gate reads it from there without this fold, ``RunState.awaiting_human``)."""
        return self.state.awaiting_human

    @property
    def review_refusals(self) -> int:
        """The trailing run of refused ``review.gate`` events (``RunState.review_refusals``)."""
        return self.state.review_refusals

    def _accepted(self, e: Event, p: CompletionAccepted, epoch: int) -> None:
        self.last_accepted = e
        self.claims += 1
        self.supported += 1

    def _refused(self, e: Event, p: CompletionRefused, epoch: int) -> None:
        self.last_refused = e
        self.claims += 1

    def _verified(self, e: Event, p: VerifyCompleted, epoch: int) -> None:
        self._last_verify = (epoch, p.accepted)

    def _responded(self, e: Event, p: ModelResponded, epoch: int) -> None:
        if p.tool_calls:
            self.window.silent = []
        else:
            self.window.silent.append(e)

    def _proposed(self, e: Event, p: ActionProposed, epoch: int) -> None:
        self.window.silent = []

    def _action(self, a: ActionRecord) -> None:
        ok, n = self._history.get(a.tool, (0, 0))
        conf = round((ok + 1) / (n + 2), 4)
        self._history[a.tool] = (ok + int(a.ok), n + 1)
        self._receipt(a, observations_of_action(a, self.lv, conf))
        w = self.window
        # Held for the whole run: the sha256 of the three (32 bytes), not the tuple and the observation's hex hash.
        key = sha256(f"{a.tool}\0{a.args_hash}\0{a.observation}".encode()).digest()
        w.novel.append(key not in self.seen_actions)
        self.seen_actions.add(key)
        prev = w.last4[-1] if w.last4 else None
        if prev is not None and not (prev.identity == a.identity and prev.observation == a.observation):
            w.streak = []
        w.streak.append(a.event.id)
        w.last4.append(a)
        w.attempts += 1
        w.receipts.append(a)
        w.failures.add_action(a)
        w.flips.add(a)
        w.silent = []

    def _sensor(self, s: SensorRecord) -> None:
        self._receipt(s, observations_of_sensor(s))
        self.latest_sensor[s.sensor] = s
        self.window.receipts.append(s)
        self.window.failures.add_sensor(s)

    def _receipt(self, r: ActionRecord | SensorRecord, observations: list[Observation]) -> None:
        self.receipt_seqs.append(r.event.seq)
        self.receipt_obs.append(tuple(observations) if observations else ())

    # ---- reading -----------------------------------------------------------------------------

    def derive(self) -> list[Payload]:
        """``beliefs.derive`` of the log taken in, resuming the replay of the previous call when the
        belief state has not changed since (no ``belief.recorded`` appended)."""
        d = self._derivation
        if d is None or d.beliefs_seen != self.beliefs_seen:
            current = dict(self.beliefs)
            start = bisect_right(self.receipt_seqs, belief_mark(current))
            d = self._derivation = _Derivation(self.beliefs_seen, current, self.generation, start, [])
        for obs in self.receipt_obs[d.next_receipt :]:
            d.generation = record_observations(obs, d.current, d.generation, d.out)
        d.next_receipt = len(self.receipt_obs)
        return list(d.out)

    def belief_view(self, pending: Sequence[Event]) -> BeliefView:
        beliefs, generation = dict(self.beliefs), self.generation
        for e in pending:
            if e.kind == "belief.recorded":
                b = belief_of(e)
                beliefs[b.key] = b
                generation = max(generation, b.generation)
        return BeliefView(beliefs, generation)

    def rated_plan(self, envelope: Envelope) -> Plan:
        cached = self._rated
        if cached is None or cached[0] != self.plan.version or cached[1] is not envelope:
            cached = self._rated = (self.plan.version, envelope, rated(self.plan.plan, envelope))
        return cached[2]

    def stuck(self) -> list[Stuck]:
        w = self.window
        tool = w.last4[-1].tool if w.last4 else ""
        return patterns(tool, list(w.streak), list(w.receipts), list(w.last4), w.silent)

    def progress(self) -> tuple[float, str]:
        return progress_score(list(self.window.novel))

    def evidence(self) -> tuple[float, str]:
        return evidence_score(self.claims, self.supported)

    def usage(self) -> dict[str, float]:
        return usage_of(self.state, self.last.ts if self.last is not None else "")

    def unresolved_system_breaking(self, pending: Sequence[Event]) -> tuple[list[str], int]:
        """Explanations of the system-breaking contradictions whose key was not re-observed since, and their total,
        in the log taken in plus ``pending``."""
        found = [*self.system_breaking]
        newest = dict(self.belief_max_cite)
        for e in pending:
            if e.kind == "contradiction.detected":
                if cast("ContradictionDetected", e.data).severity == "system_breaking":
                    found.append(e)
            elif e.kind == "belief.recorded":
                b = cast("BeliefRecorded", e.data)
                newest[b.key] = max(newest.get(b.key, -1), max_cite(b.cites))
        open_: list[str] = []
        for c in found:
            p = cast("ContradictionDetected", c.data)
            since = max_cite(p.cites) if p.cites else c.seq
            if not (p.key in newest and newest[p.key] > since):
                open_.append(p.explanation)
        return open_, len(found)


#: What the control layer's fold does per kind, beyond the receipts, plan and hypotheses it always reads; keyed by
#: the kind's string (one dict lookup of the event's kind; an unknown kind has none), so folding a log builds no
#: payload class of a kind it does not hold (payload.LATER).
_BY_KIND: dict[str, Callable[[RunFold, Event, Any, int], None]] = {
    "belief.recorded": RunFold._belief,  # BeliefRecorded
    "contradiction.detected": RunFold._contradiction,  # ContradictionDetected
    "plan.updated": RunFold._plan_updated,  # PlanUpdated
    "hypothesis.recorded": RunFold._hypothesis,  # HypothesisRecorded
    "stuck.detected": RunFold._stuck,  # StuckDetected
    "diagnostics.computed": RunFold._diagnostics,  # DiagnosticsComputed
    "control.changed": RunFold._control,  # ControlChanged
    "recovery.switched": RunFold._recovery,  # RecoverySwitched
    "completion.accepted": RunFold._accepted,  # CompletionAccepted
    "completion.refused": RunFold._refused,  # CompletionRefused
    "verify.completed": RunFold._verified,  # VerifyCompleted
    "model.responded": RunFold._responded,  # ModelResponded
    "action.proposed": RunFold._proposed,  # ActionProposed
}


_FOLDS: OrderedDict[str, RunFold] = OrderedDict()


#: What the control layer's entry points read: a run's events, or a fold of them its holder keeps up to date.
History = Sequence[Event] | RunFold


def folded(events: History) -> RunFold:
    """The fold of ``events``: the run's cached fold extended when they are a hash chain, else a fresh one;
    a :class:`RunFold` is its own fold (its holder fed it the log)."""
    if isinstance(events, RunFold):
        return events
    if not events or len(events[-1].hash) != 64:
        return _unchained(events)
    run = events[-1].run_id
    fold = _FOLDS.get(run)
    if fold is None and run in LATER:  # a checkpoint's fold, not read until now (control/deferred.py)
        fold = LATER.pop(run)()
    if fold is None or fold.n > len(events) or (fold.n and events[fold.n - 1].hash != fold.head_hash):
        fold = RunFold()
    try:
        fold.extend(events)
    except NotAChain:
        _FOLDS.pop(run, None)
        return _unchained(events)
    except Exception:
        _FOLDS.pop(run, None)  # half-extended: never reuse it
        raise
    _FOLDS[run] = fold
    _FOLDS.move_to_end(run)
    while len(_FOLDS) > FOLDS_MAX:
        _FOLDS.popitem(last=False)
    return fold


def _unchained(events: Sequence[Event]) -> RunFold:
    """A fold of events that are not a hash chain: computed in full each call, not cached."""
    fold = RunFold()
    fold.extend(events, chained=False)
    return fold


def clear() -> None:
    """Forget every cached fold, and every one a holder would give (tests compare cold and warm results)."""
    _FOLDS.clear()
    LATER.clear()
