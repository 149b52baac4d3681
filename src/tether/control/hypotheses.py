"""Hypotheses: candidate explanations the model records with the ``hypothesis`` tool.

A hypothesis names the files it blames and the tests it explains. It is scored by the
current beliefs, each piece of evidence weighted by its belief's confidence::

    support = Σ conf over named tests that are failing + Σ conf over named files that exist
    refute  = Σ conf over named tests that are passing (tests belief present, test not failing)
              + Σ conf over named files that do not exist
    score   = (support + 1) / (support + refute + 2)        in (0, 1); 0.5 with no evidence

The hypothesis most recently recorded with ``act=true`` is the one acted on; the
reviewer checks the delivered diff touches the files it blames.
"""

from __future__ import annotations

from tether.events.store import Event
from tether.records import dataclass, field
from tether.typeless import cast

from .beliefs import BeliefView
from .receipts import IntentCalls

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    # a later kind module (payload.LATER): imported where an event of it is made
    from tether.events.kinds_control import HypothesisRecorded

HYPOTHESIS_TOOL = "hypothesis"


@dataclass
class Hypothesis:
    """One hypothesis the agent recorded: its statement, the files and tests it names, whether it was acted on."""

    id: str
    statement: str = ""
    files: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    acted_on: bool = False
    cites: list[str] = field(default_factory=list)


class HypothesisFold:
    """Hypotheses by id, folded one event at a time."""

    def __init__(self) -> None:
        self.hypotheses: dict[str, Hypothesis] = {}
        self._calls = IntentCalls(HYPOTHESIS_TOOL)

    #: The kinds :meth:`add` reads; any other event leaves the fold as it is (a holder may skip it).
    KINDS = IntentCalls.KINDS

    def add(self, e: Event) -> None:
        """Take in one event: a successful hypothesis call records (or revises) a hypothesis."""
        args = self._calls.completed(e)
        if args is not None:
            self._recorded(e, args)

    def _recorded(self, e: Event, a: dict[str, Any]) -> None:
        hyps = self.hypotheses
        hid = str(a.get("id", "")).strip()
        if not hid:
            return
        h = hyps.setdefault(hid, Hypothesis(hid))
        h.statement = str(a.get("statement") or h.statement)
        if a.get("files") is not None:
            h.files = [str(f) for f in a["files"]]
        if a.get("tests") is not None:
            h.tests = [str(t) for t in a["tests"]]
        h.cites = [e.id]
        if a.get("act"):
            for other in hyps.values():
                other.acted_on = False
            h.acted_on = True


def fold_hypotheses(events: Sequence[Event]) -> dict[str, Hypothesis]:
    fold = HypothesisFold()
    for e in events:
        fold.add(e)
    return fold.hypotheses


def acted_on(events: Sequence[Event]) -> Hypothesis | None:
    return next((h for h in fold_hypotheses(events).values() if h.acted_on), None)


def score(h: Hypothesis, beliefs: BeliefView) -> tuple[float, list[str], list[str]]:
    support: list[str] = []
    refute: list[str] = []
    s = r = 0.0
    tests = beliefs.get("tests.failing")
    if tests is not None:
        failing = [str(x) for x in tests.value]
        for t in h.tests:
            if any(t == f or f.endswith("::" + t) or f.startswith(t) for f in failing):
                support.append(f"{t} is failing ({', '.join(tests.cites)})")
                s += tests.confidence
            else:
                refute.append(f"{t} is not failing ({', '.join(tests.cites)})")
                r += tests.confidence
    for f in h.files:
        b = beliefs.get(f"file:{f}")
        if b is None:
            continue
        if b.value is True:
            support.append(f"{f} exists ({', '.join(b.cites)})")
            s += b.confidence
        else:
            refute.append(f"{f} does not exist ({', '.join(b.cites)})")
            r += b.confidence
    return round((s + 1) / (s + r + 2), 4), support, refute


def hypothesis_events(events: Sequence[Event]) -> list[HypothesisRecorded]:
    """``hypothesis.recorded`` for each hypothesis that is new or whose content or score changed."""
    beliefs = BeliefView.from_events(events)
    recorded = (cast("HypothesisRecorded", e.data) for e in events if e.kind == "hypothesis.recorded")
    return hypothesis_updates(fold_hypotheses(events), {h.id: h for h in recorded}, beliefs)


def hypothesis_updates(
    hyps: dict[str, Hypothesis], last: dict[str, HypothesisRecorded], beliefs: BeliefView
) -> list[HypothesisRecorded]:
    """``hypothesis.recorded`` for each of ``hyps`` that differs from ``last`` (the latest by id)."""
    out: list[HypothesisRecorded] = []
    if not hyps:
        return out
    from tether.events.kinds_control import HypothesisRecorded  # here: a hook's call makes none

    for h in hyps.values():
        sc, sup, ref = score(h, beliefs)
        new = HypothesisRecorded(
            id=h.id,
            statement=h.statement,
            files=list(h.files),
            tests=list(h.tests),
            acted_on=h.acted_on,
            score=sc,
            support=sup,
            refute=ref,
            cites=list(h.cites),
        )
        prev = last.get(h.id)
        if prev is None or any(getattr(prev, k) != getattr(new, k) for k in _CONTENT):
            out.append(new)
    return out


_CONTENT = ("statement", "files", "tests", "acted_on", "score")  # what makes a hypothesis worth recording again
