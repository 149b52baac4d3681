"""The runtime hands each fold a step's events as one batch (``add_all``), not one call per event (issue 18). A fold
fed a log in batches of any size must end where the same fold fed it one event at a time does — the control fold
(with its run state), the transcript and the provenance index — and a batch that does not continue the chain is
refused as a single event is."""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence

import pytest
from runkit import FinishedDemo

from tether.control.fold import NotAChain, RunFold
from tether.envelope.schema import Envelope
from tether.events.store import Event, EventStore
from tether.kernel.context import Transcript
from tether.policy.provenance import Provenance


def demo_events(demo: FinishedDemo) -> list[Event]:
    with EventStore.open(demo.db, readonly=True) as store:
        return list(store.events(demo.run_id))


def chunks(events: Sequence[Event], size: int) -> Iterator[list[Event]]:
    for i in range(0, len(events), size):
        yield list(events[i : i + size])


def state(fold: object) -> bytes:
    """What a fold holds, as bytes (the folds are pickled for checkpoints: every field is in their pickle)."""
    return pickle.dumps(fold)


@pytest.mark.parametrize("size", [1, 2, 3, 8, 1000])
def test_folds_fed_in_batches_end_where_folds_fed_one_at_a_time_do(finished_demo: FinishedDemo, size: int) -> None:
    events = demo_events(finished_demo)
    assert len(events) > 20 and len({e.kind for e in events}) > 10  # a log with much in it
    env = Envelope.model_validate(events[0].payload["envelope"])
    one, batched = RunFold(), RunFold()
    t_one, t_batched = Transcript(env), Transcript(env)
    p_one, p_batched = Provenance(env), Provenance(env)
    for e in events:
        one.add(e)
        t_one.add(e)
        p_one.add(e)
    for batch in chunks(events, size):
        batched.add_all(batch)
        t_batched.add_all(batch)
        p_batched.add_all(batch)
    assert state(batched) == state(one)
    assert (t_batched.messages(), t_batched.fed) == (t_one.messages(), t_one.fed)
    assert (p_batched.user, p_batched.fed) == (p_one.user, p_one.fed)
    assert state(p_batched) == state(p_one)


def test_a_batch_that_breaks_the_chain_is_refused(finished_demo: FinishedDemo) -> None:
    events = demo_events(finished_demo)
    fold = RunFold()
    fold.add_all(events[:5])
    with pytest.raises(NotAChain):
        fold.add_all([events[6], events[7]])  # skips events[5]
    with pytest.raises(NotAChain):
        fold.add_all([events[5], events[5]])  # one event twice
    late = RunFold()
    with pytest.raises(NotAChain):
        late.add_all([events[3]])  # a fold's first event is taken as it comes (the chain starts there)
        late.add_all([events[2]])  # an earlier one after it is not


def test_an_empty_batch_changes_nothing(finished_demo: FinishedDemo) -> None:
    events = demo_events(finished_demo)
    env = Envelope.model_validate(events[0].payload["envelope"])
    fold, transcript, provenance = RunFold(), Transcript(env), Provenance(env)
    for f in (fold, transcript, provenance):
        f.add_all(events[:4])
    before = (state(fold), transcript.fed, provenance.fed)
    for f in (fold, transcript, provenance):
        f.add_all([])
    assert (state(fold), transcript.fed, provenance.fed) == before
